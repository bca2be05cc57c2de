package interop_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/interop"
)

// parleyDoc is a Parley export of the given messages, for building conversations.
func parleyDoc(t *testing.T, msgs ...obj) string {
	t.Helper()
	b, err := json.Marshal(obj{"format": "parley.conversation", "version": 1, "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func textMsg(role, text string) obj {
	return obj{"type": "text", "role": role, "parts": []obj{{"kind": "TEXT", "text": text}}}
}

func mcpMsg(uri, text string) obj {
	return obj{"type": "mcp_resource", "role": "DOCUMENT", "serverName": "docs", "resourceUri": uri,
		"retrievedAt": "2026-03-01T12:00:00Z", "parts": []obj{{"kind": "TEXT", "text": text}}}
}

func callMsg(text string, ids ...string) obj {
	var calls []obj
	for _, id := range ids {
		calls = append(calls, obj{"id": id, "name": "search", "arguments": obj{"q": id}})
	}
	m := obj{"type": "tool_request", "role": "INVOCATION", "toolCalls": calls}
	if text != "" {
		m["parts"] = []obj{{"kind": "TEXT", "text": text}}
	}
	return m
}

func resultMsg(id, text string) obj {
	return obj{"type": "tool_result", "role": "RESULT", "toolCallId": id, "status": "SUCCESS", "parts": []obj{{"kind": "TEXT", "text": text}}}
}

// TestTranscriptBudget fits a history into shrinking budgets: the history is cut before
// a user turn, the context before the cut that nothing after it mentions going with the
// oldest turns (a tool call with its result, never one without the other), then context
// that is still mentioned; the SUPERVISOR text and the newest turn stay; a budget they
// do not fit is refused.
func TestTranscriptBudget(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	big := strings.Repeat("lorem ipsum dolor sit amet ", 40) // about 270 tokens
	msgs := []obj{
		textMsg("SUPERVISOR", "Answer in English."),      // 1
		mcpMsg("docs://schema", "users(id, email) "+big), // 2: mentioned at 21
		mcpMsg("docs://old-notes", "notes "+big),         // 3: never mentioned
		textMsg("USER", "First question. "+big),          // 4
		textMsg("ASSISTANT", "First answer. "+big),       // 5
		callMsg("Searching.", "call_1"),                  // 6
		resultMsg("call_1", "result one "+big),           // 7
		textMsg("ASSISTANT", "Found it."),                // 8
	}
	for i := 0; i < 6; i++ { // 9..20
		msgs = append(msgs, textMsg("USER", fmt.Sprintf("Question %d?", i)), textMsg("ASSISTANT", fmt.Sprintf("Answer %d.", i)))
	}
	msgs = append(msgs,
		textMsg("USER", "Which columns does docs://schema list?"), // 21
		textMsg("ASSISTANT", "id and email."),                     // 22
	)
	conv := importData(t, srv, "PARLEY_JSON", parleyDoc(t, msgs...), "", "").Conversation.ID
	_, full := transcript(t, srv, conv, "ANTHROPIC_MESSAGES", transcriptOpts{})
	if full.EstimatedTokens < 1000 || !strings.Contains(full.TokenCounting, "ceil(ASCII bytes / 4)") {
		t.Fatalf("the whole history: got %d tokens (%s)", full.EstimatedTokens, full.TokenCounting)
	}
	droppedPositions := func(r transcriptReport) []int {
		var ps []int
		for _, d := range r.Dropped {
			ps = append(ps, d.Position)
		}
		return ps
	}
	for _, tc := range []struct {
		name      string
		budget    int
		dropped   []int
		firstUser string
	}{
		{"everything fits", full.EstimatedTokens, nil, ""},
		{"stale context first", full.EstimatedTokens - 10, []int{3}, ""},
		// Then the oldest turns: 4, 5, then the call 6 with its result 7; 8 would leave
		// the history starting with the assistant, so it goes too.
		{"then the oldest turns", full.EstimatedTokens - 600, []int{3, 4, 5, 6, 7, 8}, "Question 0?"},
		{"then recent context", 200, []int{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 2}, "Which columns does docs://schema list?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, rep := transcript(t, srv, conv, "ANTHROPIC_MESSAGES", transcriptOpts{maxTokens: tc.budget})
			if got := droppedPositions(rep); fmt.Sprint(got) != fmt.Sprint(tc.dropped) {
				t.Errorf("dropped positions: got %v, want %v", got, tc.dropped)
			}
			if rep.EstimatedTokens > tc.budget {
				t.Errorf("estimatedTokens %d over the budget %d", rep.EstimatedTokens, tc.budget)
			}
			var body struct {
				System   []struct{ Text string }
				Messages []struct {
					Role    string
					Content []struct{ Type, Text string }
				}
			}
			if err := json.Unmarshal(out, &body); err != nil {
				t.Fatal(err)
			}
			if len(body.System) != 1 || body.System[0].Text != "Answer in English." {
				t.Errorf("system: got %+v, want the SUPERVISOR text", body.System)
			}
			first := body.Messages[0]
			if first.Role != "user" {
				t.Errorf("the transcript starts with a %s turn", first.Role)
			}
			if tc.firstUser != "" && first.Content[len(first.Content)-1].Text != tc.firstUser {
				t.Errorf("first user turn: got %+v, want it to end with %q", first.Content, tc.firstUser)
			}
			if last := body.Messages[len(body.Messages)-1]; last.Content[0].Text != "id and email." {
				t.Errorf("the newest turn is gone: got %+v", last)
			}
		})
	}
	r := srv.Do(t, transcriptOnlyQuery, transcriptVars(conv, "OPENAI_CHAT", transcriptOpts{maxTokens: 10}))
	if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "maxTokens: 10 is too small") {
		t.Errorf("a budget too small: got %s %q", code, r.Errors[0].Message)
	}
}

// TestTranscriptIntegrity exports a history with a call that never got a result in
// the middle and one at the end: refused, naming them, unless repair closes the first
// with an error result and drops the second, saying so; the provider shapes then pair
// every call with its result.
func TestTranscriptIntegrity(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := importData(t, srv, "PARLEY_JSON", parleyDoc(t,
		textMsg("USER", "Find the docs and the tests."),
		callMsg("", "call_docs", "call_tests"),
		resultMsg("call_docs", "docs/ has 3 files"),
		textMsg("USER", "Never mind the tests; what about CI?"),
		callMsg("Looking at CI.", "call_ci"),
	), "", "").Conversation.ID

	for _, format := range []string{"OPENAI_CHAT", "OPENAI_RESPONSES", "ANTHROPIC_MESSAGES"} {
		r := srv.Do(t, transcriptOnlyQuery, transcriptVars(conv, format, transcriptOpts{}))
		if code := r.ErrorCode(t); code != "BAD_USER_INPUT" {
			t.Fatalf("%s without repair: got %s, want BAD_USER_INPUT", format, code)
		}
		for _, want := range []string{`tool call "call_tests" (search) at position 2 has no result`, `tool call "call_ci" (search) at position 5 has no result`, "repair: true"} {
			if !strings.Contains(r.Errors[0].Message, want) {
				t.Errorf("%s: got %q, want it to say %q", format, r.Errors[0].Message, want)
			}
		}
	}

	out, rep := transcript(t, srv, conv, "OPENAI_CHAT", transcriptOpts{repair: true})
	wantRepairs := []string{
		`closed the unanswered tool call "call_tests" (search) at position 2 with an error result saying no result was recorded`,
		`dropped the unanswered tool call "call_ci" (search) at position 5, which the history ends with: the model can make it again`,
	}
	if fmt.Sprint(rep.Repairs) != fmt.Sprint(wantRepairs) {
		t.Errorf("repairs: got %q, want %q", rep.Repairs, wantRepairs)
	}
	var chat []struct {
		Role       string
		Content    any
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct{ ID string }
	}
	if err := json.Unmarshal(out, &chat); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range chat {
		roles = append(roles, m.Role)
	}
	if want := "user assistant tool tool user assistant"; strings.Join(roles, " ") != want {
		t.Errorf("roles: got %v, want %s", roles, want)
	}
	if chat[3].ToolCallID != "call_tests" || chat[3].Content != "No result was recorded for this tool call." {
		t.Errorf("the closed call: got %+v", chat[3])
	}
	if len(chat[5].ToolCalls) != 0 || chat[5].Content != "Looking at CI." {
		t.Errorf("the last request without its call: got %+v", chat[5])
	}

	out, _ = transcript(t, srv, conv, "ANTHROPIC_MESSAGES", transcriptOpts{repair: true})
	var anth struct {
		Messages []struct {
			Role    string
			Content []struct {
				Type, ID  string
				ToolUseID string `json:"tool_use_id"`
				IsError   bool   `json:"is_error"`
			}
		}
	}
	if err := json.Unmarshal(out, &anth); err != nil {
		t.Fatal(err)
	}
	// Each assistant turn's tool_use blocks are answered in the next user turn, first.
	for i, m := range anth.Messages {
		var uses []string
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				uses = append(uses, b.ID)
			}
		}
		if len(uses) == 0 {
			continue
		}
		next := anth.Messages[i+1]
		for j, id := range uses {
			if b := next.Content[j]; b.Type != "tool_result" || b.ToolUseID != id {
				t.Errorf("tool_use %s: the next turn's block %d is %+v", id, j, b)
			}
		}
	}
}

// TestTranscriptOrphanResult exports a history with a result whose call is not in it
// (which the store refuses, but a version 1 history can hold): refused, or dropped by
// repair.
func TestTranscriptOrphanResult(t *testing.T) {
	t.Parallel()
	msgs := []parley.Message{
		&parley.TextMessage{MessageMeta: parley.MessageMeta{ID: "msg_1", Position: 1, Role: parley.RoleUser}, Body: parley.TextBody("hi")},
		&parley.ToolResultMessage{MessageMeta: parley.MessageMeta{ID: "msg_2", Position: 2, Role: parley.RoleResult},
			ToolCallID: "call_gone", Status: parley.ToolSuccess, Body: parley.TextBody("x")},
	}
	_, err := interop.Build(nil, msgs, parley.TranscriptAnthropicMessages, parley.TranscriptOptions{})
	if parley.ErrorCode(err) != parley.EINVALID || !strings.Contains(parley.ErrorMessage(err), `the tool result at position 2 answers no earlier tool call "call_gone"`) {
		t.Errorf("without repair: got %v", err)
	}
	tr, err := interop.Build(nil, msgs, parley.TranscriptAnthropicMessages, parley.TranscriptOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Report.Dropped) != 1 || tr.Report.Dropped[0].MessageID != "msg_2" || len(tr.Report.Repairs) != 1 {
		t.Errorf("with repair: got dropped %+v, repairs %q", tr.Report.Dropped, tr.Report.Repairs)
	}
	if want := `{"messages":[{"content":[{"text":"hi","type":"text"}],"role":"user"}]}`; string(tr.Body) != want {
		t.Errorf("body: got %s, want %s", tr.Body, want)
	}
}

// TestTranscriptOptions checks the arguments each format takes.
func TestTranscriptOptions(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := importData(t, srv, "OPENAI_CHAT", `[{"role": "user", "content": "hi"}]`, "", "").Conversation.ID
	for _, tc := range []struct {
		format string
		opts   transcriptOpts
		want   string
	}{
		{"MARKDOWN", transcriptOpts{system: "x"}, "system: MARKDOWN is not sent to an LLM"},
		{"PARLEY_JSON", transcriptOpts{maxTokens: 100}, "maxTokens: PARLEY_JSON is the whole history"},
		{"PARLEY_JSON", transcriptOpts{repair: true}, "repair: PARLEY_JSON keeps the history as it is"},
		{"OPENAI_CHAT", transcriptOpts{maxTokens: -5}, "maxTokens: -5 is not a budget"},
	} {
		r := srv.Do(t, transcriptOnlyQuery, transcriptVars(conv, tc.format, tc.opts))
		if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, tc.want) {
			t.Errorf("%s %+v: got %s %q, want %q", tc.format, tc.opts, code, r.Errors[0].Message, tc.want)
		}
	}
	// Markdown is a JSON string.
	out, _ := transcript(t, srv, conv, "MARKDOWN", transcriptOpts{})
	var text string
	if err := json.Unmarshal(out, &text); err != nil || text != "# hi\n\n[User]\nhi\n" {
		t.Errorf("markdown: got %s (%v)", out, err)
	}
	r := srv.Do(t, transcriptOnlyQuery, transcriptVars("conv_00000000-0000-4000-8000-000000000000", "OPENAI_CHAT", transcriptOpts{}))
	if len(r.Errors) == 0 || r.Errors[0].Code() != "NOT_FOUND" {
		t.Errorf("a missing conversation: got %+v", r.Errors)
	}
}
