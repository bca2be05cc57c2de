package interop_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/internal/textimage"
)

const session = "claudecode/testdata/session.jsonl"

// TestClaudeCodeSession imports a session with every record and block type and each
// quirk of real files, through the API, and checks what was made of each.
func TestClaudeCodeSession(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	rep := importData(t, srv, "CLAUDE_CODE_JSONL", readFile(t, session), "", "")

	if !rep.Created || rep.Conversation.Title != "Fix the flaky login test" {
		t.Errorf("got created %v, title %q; want a new conversation titled by the summary", rep.Created, rep.Conversation.Title)
	}
	wantVariants := map[string]int{"TextMessage": 4, "ImageMessage": 1, "ToolRequestMessage": 4, "ToolResultMessage": 4, "CompactionMessage": 1}
	if got := rep.variants(); !equalCounts(got, wantVariants) {
		t.Errorf("added per variant: got %v, want %v", got, wantVariants)
	}
	if rep.Added != 14 || rep.Conversation.MessageCount != 14 || rep.AlreadyPresent != 0 {
		t.Errorf("got added %d, messageCount %d, alreadyPresent %d; want 14, 14, 0", rep.Added, rep.Conversation.MessageCount, rep.AlreadyPresent)
	}
	for reason, want := range map[string]int{
		"sidechain (sub-agent) record":                                           3,
		"session summary (used as the title)":                                    1,
		"system notice (not a conversation turn)":                                2,
		"progress record (hooks, tools, sub-agents)":                             2,
		"file history snapshot":                                                  1,
		"queued-input bookkeeping":                                               1,
		"notice Claude Code wrote in the model's name (API error, interruption)": 1,
		"record of an unfamiliar type":                                           1,
		"turn re-written by a resumed session":                                   3,
	} {
		if got := rep.skipped(reason); got != want {
			t.Errorf("skipped %q: got %d, want %d", reason, got, want)
		}
	}
	// Redacted thinking is kept (a REDACTED_THINKING part), so it is no warning.
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], `unfamiliar record type "future-thing"`) {
		t.Errorf("warnings: got %q, want the unfamiliar type only", rep.Warnings)
	}

	msgs := fetchMessages(t, srv, rep.Conversation.ID)
	// Text Claude Code injected (isMeta) is kept as SUPERVISOR text.
	if meta := msgs[3]; meta["role"] != "SUPERVISOR" || meta["text"] != "<system-reminder>Todo list is empty.</system-reminder>" {
		t.Errorf("the isMeta record: got %v", meta)
	}
	msgs = append(msgs[:3], msgs[4:]...)
	// The reply streamed over four lines (with a tool result between) is one message,
	// at its first line, keeping thinking, text and both calls; message.id is its source.
	req := msgs[3]
	if req["__typename"] != "ToolRequestMessage" || req["sourceId"] != "msg_A" || req["text"] != "Let me read the test and run it." ||
		req["thinking"] != "The test probably races the session cookie. Read it first." || len(req["toolCalls"].([]any)) != 2 {
		t.Errorf("the split reply: got %v", req)
	}
	if req["createdAt"] != "2026-02-10T10:00:03Z" {
		t.Errorf("the reply's time: got %v, want its first line's 2026-02-10T10:00:03Z", req["createdAt"])
	}
	// A tool_result with is_error is an ERROR result, its ANSI colours gone.
	failed := msgs[5]
	if failed["status"] != "ERROR" || failed["toolCallId"] != "toolu_run" || failed["toolName"] != "Bash" ||
		!strings.HasPrefix(failed["text"].(string), "--- FAIL: TestLogin") {
		t.Errorf("the failed run: got %v", failed)
	}
	// Text beside a tool_result stays on the result, as does the image inside it.
	shot := msgs[7]
	if shot["text"] != "Screenshot taken\n\n(the page is still loading)" || msgs[8]["__typename"] != "CompactionMessage" {
		t.Errorf("the screenshot result and what follows it: got %v then %v", shot, msgs[8])
	}
	// The compaction summary (line 25) is a compaction covering the turns before it.
	if c := msgs[8]; c["__typename"] != "CompactionMessage" || c["sourceId"] != "u-0013" || c["coversThrough"] != float64(9) ||
		!strings.HasPrefix(c["text"].(string), "This session is being continued") {
		t.Errorf("the compaction summary: got %v", c)
	}
	// The session ends with a call that never got a result: it stays pending.
	last := msgs[12]
	calls := last["toolCalls"].([]any)
	if last["__typename"] != "ToolRequestMessage" || calls[0].(map[string]any)["approvalStatus"] != "PENDING" {
		t.Errorf("the last, unanswered call: got %v", last)
	}
	// Emoji and redaction markers are kept byte for byte.
	if msgs[0]["text"] != "The login test is flaky 😬 — can you look? Here is a screenshot." ||
		!strings.Contains(msgs[4]["text"].(string), "/* [REDACTED] */") {
		t.Errorf("text: got %q and %q", msgs[0]["text"], msgs[4]["text"])
	}

	// Importing it again adds nothing.
	again := importData(t, srv, "CLAUDE_CODE_JSONL", readFile(t, session), rep.Conversation.ID, "")
	if again.Added != 0 || again.AlreadyPresent != 14 || again.Created || again.Conversation.MessageCount != 14 {
		t.Errorf("re-import: got added %d, alreadyPresent %d, created %v, messageCount %d; want 0, 14, false, 14",
			again.Added, again.AlreadyPresent, again.Created, again.Conversation.MessageCount)
	}
}

// TestClaudeCodeLongerCopy imports a session cut short, then the whole file: only the
// new turns are added, after the others, including the rest of a reply that was cut.
func TestClaudeCodeLongerCopy(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	lines := strings.SplitAfter(readFile(t, session), "\n")
	short := strings.Join(lines[:20], "") // up to the tool result with the screenshot
	first := importData(t, srv, "CLAUDE_CODE_JSONL", short, "", "a session in progress")
	if first.Added != 9 || first.Conversation.Title != "a session in progress" {
		t.Fatalf("the short copy: got added %d, title %q; want 9 and the given title", first.Added, first.Conversation.Title)
	}
	full := importData(t, srv, "CLAUDE_CODE_JSONL", readFile(t, session), first.Conversation.ID, "")
	if full.Added != 5 || full.AlreadyPresent != 9 || full.Conversation.MessageCount != 14 {
		t.Errorf("the longer copy: got added %d, alreadyPresent %d, messageCount %d; want 5, 9, 14",
			full.Added, full.AlreadyPresent, full.Conversation.MessageCount)
	}
	msgs := fetchMessages(t, srv, first.Conversation.ID)
	for i, m := range msgs {
		if int(m["position"].(float64)) != i+1 {
			t.Errorf("message %d has position %v", i, m["position"])
		}
	}
	if msgs[9]["sourceId"] != "u-0013" || msgs[10]["sourceId"] != "u-0014" {
		t.Errorf("the first new turns: got %v and %v, want the compaction summary of line 25 and the prompt of line 26", msgs[9], msgs[10])
	}
}

// TestClaudeCodeReplyCutShort imports a session read while a reply was being written
// (its text streamed, its calls not yet): importing the whole file later completes the
// reply in place, and the results of the new calls find them.
func TestClaudeCodeReplyCutShort(t *testing.T) {
	t.Parallel()
	lines := strings.SplitAfter(readFile(t, session), "\n")
	for _, tc := range []struct {
		name      string
		lines     int
		firstType string
	}{
		{"after the text", 8, "TextMessage"},
		{"after the first call and its result", 11, "ToolRequestMessage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testserver.New(t)
			first := importData(t, srv, "CLAUDE_CODE_JSONL", strings.Join(lines[:tc.lines], ""), "", "")
			before := fetchMessages(t, srv, first.Conversation.ID)
			if got := before[4]["__typename"]; got != tc.firstType {
				t.Fatalf("the cut reply: got %v, want %s", got, tc.firstType)
			}
			full := importData(t, srv, "CLAUDE_CODE_JSONL", readFile(t, session), first.Conversation.ID, "")
			if full.Conversation.MessageCount != 14 || full.Added+full.AlreadyPresent != 14 {
				t.Errorf("got messageCount %d, added %d + alreadyPresent %d; want 14 in all", full.Conversation.MessageCount, full.Added, full.AlreadyPresent)
			}
			if !strings.Contains(strings.Join(full.Warnings, "\n"), "the reply msg_A was imported before it was complete") {
				t.Errorf("warnings: got %q, want one about msg_A", full.Warnings)
			}
			after := fetchMessages(t, srv, first.Conversation.ID)
			reply := after[4]
			if reply["id"] != before[4]["id"] || reply["__typename"] != "ToolRequestMessage" || len(reply["toolCalls"].([]any)) != 2 ||
				reply["text"] != "Let me read the test and run it." {
				t.Errorf("the completed reply: got %v, want message %v with its text and both calls", reply, before[4]["id"])
			}
		})
	}
}

// TestClaudeCodeResumedInNewFile imports a session, then the file a resumed session
// wrote: the earlier turns again under new uuids (same message ids and times), then new
// ones. Only the new turns are added.
func TestClaudeCodeResumedInNewFile(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	orig := readFile(t, session)
	rep := importData(t, srv, "CLAUDE_CODE_JSONL", orig, "", "")
	resumed := strings.NewReplacer(`"uuid": "u-`, `"uuid": "v-`, `"parentUuid": "u-`, `"parentUuid": "v-`).Replace(orig)
	resumed += jsonl(t,
		obj{"type": "user", "uuid": "v-0100", "timestamp": "2026-02-11T09:00:00Z", "message": obj{"role": "user", "content": "Did the rerun pass?"}},
		obj{"type": "assistant", "uuid": "v-0101", "timestamp": "2026-02-11T09:00:02Z",
			"message": obj{"id": "msg_E", "role": "assistant", "model": "m", "content": []obj{{"type": "text", "text": "It did not finish; running it again."}}}},
	)
	again := importData(t, srv, "CLAUDE_CODE_JSONL", resumed, rep.Conversation.ID, "")
	if again.Added != 2 || again.AlreadyPresent != 14 || again.Conversation.MessageCount != 16 {
		t.Errorf("got added %d, alreadyPresent %d, messageCount %d; want 2, 14, 16", again.Added, again.AlreadyPresent, again.Conversation.MessageCount)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

const messagesQuery = `query($id: ID!, $after: String) { conversation(id: $id) { messages(first: 1000, after: $after) {
	pageInfo { hasNextPage endCursor }
	edges { node {
		__typename
		... on MessageBase { id role position createdAt sourceId label }
		... on TextMessage { text thinking }
		... on ToolRequestMessage { text thinking toolCalls { id name arguments approvalStatus } }
		... on ToolResultMessage { toolCallId toolName status text output error { message } }
		... on ImageMessage { source { kind mediaType url } }
		... on UnknownMessage { type raw }
		... on MCPResourceMessage { serverName resourceUri text }
		... on CompactionMessage { text provider providerData coversThrough }
	} }
} } }`

// fetchMessages reads every message of a conversation, as maps of their fields.
func fetchMessages(t *testing.T, srv *testserver.Server, conv string) []map[string]any {
	t.Helper()
	var all []map[string]any
	vars := map[string]any{"id": conv}
	for {
		var out struct {
			Conversation struct {
				Messages struct {
					PageInfo struct {
						HasNextPage bool
						EndCursor   string
					}
					Edges []struct{ Node map[string]any }
				}
			}
		}
		srv.MustDo(t, messagesQuery, vars, &out)
		for _, e := range out.Conversation.Messages.Edges {
			all = append(all, e.Node)
		}
		if !out.Conversation.Messages.PageInfo.HasNextPage {
			return all
		}
		vars["after"] = out.Conversation.Messages.PageInfo.EndCursor
	}
}

// TestClaudeCodeToolResultImagesStayInside imports a session whose tool results hold
// images among their text (a screenshot tool's, as Claude Code writes them): the images
// stay IMAGE parts of their result, in order, as the Anthropic importer keeps them, and
// go back inside the tool_result for Anthropic. An image beside the results (not inside
// one) is still an image message.
func TestClaudeCodeToolResultImagesStayInside(t *testing.T) {
	t.Parallel()
	png := base64.StdEncoding.EncodeToString(textimage.PNG("login page"))
	image := obj{"type": "image", "source": obj{"type": "base64", "media_type": "image/png", "data": png}}
	data := jsonl(t,
		obj{"type": "user", "uuid": "u-1", "timestamp": "2026-02-10T10:00:00Z", "message": obj{"role": "user", "content": "Look at the login page."}},
		obj{"type": "assistant", "uuid": "a-1", "timestamp": "2026-02-10T10:00:01Z", "message": obj{"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []obj{{"type": "tool_use", "id": "toolu_shot", "name": "screenshot", "input": obj{}}}}},
		obj{"type": "assistant", "uuid": "a-2", "timestamp": "2026-02-10T10:00:01Z", "message": obj{"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []obj{{"type": "tool_use", "id": "toolu_url", "name": "fetch_image", "input": obj{"u": 1}}}}},
		obj{"type": "user", "uuid": "u-2", "timestamp": "2026-02-10T10:00:02Z", "message": obj{"role": "user", "content": []obj{
			{"type": "tool_result", "tool_use_id": "toolu_shot", "content": []any{obj{"type": "text", "text": "before"}, image, obj{"type": "text", "text": "after"}}}}}},
		obj{"type": "user", "uuid": "u-3", "timestamp": "2026-02-10T10:00:03Z", "message": obj{"role": "user", "content": []obj{
			{"type": "tool_result", "tool_use_id": "toolu_url", "content": []any{obj{"type": "image", "source": obj{"type": "url", "url": "https://example.com/b.png"}}}},
			image}}},
		obj{"type": "assistant", "uuid": "a-3", "timestamp": "2026-02-10T10:00:04Z", "message": obj{"id": "msg_2", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": []obj{{"type": "text", "text": "The page is blank."}}}},
	)
	srv := testserver.New(t)
	rep := importData(t, srv, "CLAUDE_CODE_JSONL", data, "", "")
	if v := rep.variants(); v["ToolResultMessage"] != 2 || v["ImageMessage"] != 1 {
		t.Fatalf("added %v, want 2 tool results and 1 image message (the one beside the results)", v)
	}
	var out struct {
		Conversation struct {
			Messages struct {
				Edges []struct {
					Node struct {
						Typename   string `json:"__typename"`
						ToolCallID string
						Text       string
						Parts      []struct{ Kind string }
					}
				}
			}
		}
	}
	srv.MustDo(t, `query($id: ID!) { conversation(id: $id) { messages(first: 10) { edges { node {
		__typename ... on ToolResultMessage { toolCallId text parts { kind } } } } } } }`, map[string]any{"id": rep.Conversation.ID}, &out)
	var shape []string
	for _, e := range out.Conversation.Messages.Edges {
		n := e.Node
		if n.Typename != "ToolResultMessage" {
			shape = append(shape, n.Typename)
			continue
		}
		var ks []string
		for _, p := range n.Parts {
			ks = append(ks, p.Kind)
		}
		shape = append(shape, n.ToolCallID+" "+strings.Join(ks, ","))
		if n.ToolCallID == "toolu_shot" && n.Text != "before\n\nafter" {
			t.Errorf("toolu_shot text %q, want %q", n.Text, "before\n\nafter")
		}
	}
	wantShape := []string{"TextMessage", "ToolRequestMessage", "toolu_shot TEXT,IMAGE,TEXT", "toolu_url IMAGE", "ImageMessage", "TextMessage"}
	if strings.Join(shape, "|") != strings.Join(wantShape, "|") {
		t.Errorf("messages %q, want %q", shape, wantShape)
	}

	msgs, _ := transcript(t, srv, rep.Conversation.ID, "ANTHROPIC_MESSAGES", transcriptOpts{})
	got := anthropicResultContent(t, msgs, png)
	want := []string{"toolu_shot:before", "toolu_shot:base64 image/png true", "toolu_shot:after", "toolu_url:url https://example.com/b.png"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tool_result content %q, want %q", got, want)
	}
}
