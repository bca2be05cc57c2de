package openai_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/parley-dev/parley"
	popenai "github.com/parley-dev/parley/interop/openai"
)

// responsesEvents reads a Responses stream written one event's data a line.
// testdata/responses-stream/weather.jsonl is written by hand after the API's documented
// events (no recorded Responses stream was at hand): a reasoning summary in five
// deltas, a message in eleven, a function call whose arguments arrive in nine, then
// response.completed with the whole output and the usage.
func responsesEvents(t *testing.T, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "responses-stream", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out = append(out, []byte(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// completedMessage is the message the response.completed event's output holds, read with
// the SDK's types as the importer reads the items: each reasoning summary a THINKING
// part with the item's id (one empty part for an item without a summary), the first
// with the item's encrypted_content; each output text or refusal that is not blank a
// TEXT part; each function call a tool call with its item id, placed after the parts
// before it.
func completedMessage(t *testing.T, raw []byte) (parley.Message, responses.Response) {
	t.Helper()
	var ev responses.ResponseStreamEventUnion
	if err := ev.UnmarshalJSON(raw); err != nil || ev.Type != "response.completed" {
		t.Fatalf("the last event: %v, type %q; want response.completed", err, ev.Type)
	}
	var dr parley.Draft
	for _, item := range ev.Response.Output {
		switch item.Type {
		case "reasoning":
			r := item.AsReasoning()
			first := len(dr.Parts)
			for _, s := range r.Summary {
				dr.Parts = append(dr.Parts, parley.Part{Kind: parley.PartThinking, Text: s.Text, ItemID: r.ID})
			}
			if len(r.Summary) == 0 && r.ID != "" {
				dr.Parts = append(dr.Parts, parley.Part{Kind: parley.PartThinking, ItemID: r.ID})
			}
			if len(dr.Parts) > first {
				dr.Parts[first].Signature = r.EncryptedContent
			}
		case "message":
			for _, c := range item.AsMessage().Content {
				text := c.Text
				if c.Type == "refusal" {
					text = c.Refusal
				}
				if strings.TrimSpace(text) != "" {
					dr.Parts = append(dr.Parts, parley.Part{Kind: parley.PartText, Text: text})
				}
			}
		case "function_call":
			fc := item.AsFunctionCall()
			at := len(dr.Parts)
			dr.ToolCalls = append(dr.ToolCalls, parley.ToolCall{ID: fc.CallID, Name: fc.Name, Arguments: parley.JSON(fc.Arguments),
				ItemID: fc.ID, PartIndex: &at})
		}
	}
	return dr.Message(), ev.Response
}

// TestResponsesStreamAssembles: the deltas of a Responses stream, applied in order,
// give the message its response.completed event holds, and the provenance is the
// response's.
func TestResponsesStreamAssembles(t *testing.T) {
	t.Parallel()
	t.Run("interleaved", func(t *testing.T) {
		t.Parallel()
		events := responsesEvents(t, "interleaved.jsonl")
		want, _ := completedMessage(t, events[len(events)-1])
		got := assemble(t, events).Message()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("assembled:\n got %+v\nwant %+v", got, want)
		}
	})
	events := responsesEvents(t, "weather.jsonl")
	want, resp := completedMessage(t, events[len(events)-1])
	s := popenai.NewResponsesStream()
	var dr parley.Draft
	for i, ev := range events {
		deltas, err := s.AddJSON(ev)
		if err != nil {
			t.Fatalf("event %d: %v", i+1, err)
		}
		if err := dr.ApplyAll(deltas); err != nil {
			t.Fatalf("event %d: deltas %+v: %v", i+1, deltas, err)
		}
	}
	got := dr.Message()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("assembled:\n got %+v\nwant %+v", got, want)
	}
	req, ok := got.(*parley.ToolRequestMessage)
	if !ok || len(req.Parts) != 2 || req.Parts[0].ItemID != "rs_68c1f0a3c1e88190b2f4a6c8e0d2f4a6" ||
		req.Parts[1].Text != "Let me check the current weather in Paris for you." || len(req.ToolCalls) != 1 ||
		string(req.ToolCalls[0].Arguments) != `{"city":"Paris","unit":"c"}` || req.ToolCalls[0].ItemID != "fc_68c1f0a5e3a18190d4b6c8e0a2f4b6c8" {
		t.Errorf("assembled: got %+v, want thinking (rs_…), the text and get_weather's arguments (fc_…)", got)
	}
	wantProv := parley.Provenance{Provider: "openai", Model: string(resp.Model), ResponseID: resp.ID, FinishReason: "completed",
		Usage: parley.Usage{InputTokens: 182, OutputTokens: 87, CachedInputTokens: 128, ReasoningTokens: 64}}
	if p := s.Provenance(); p != wantProv {
		t.Errorf("provenance: got %+v, want %+v", p, wantProv)
	}
}

// TestResponsesStreamRefuses: an event that is not one of the stream's is refused,
// named, and changes nothing: the stream then assembles as if it had not come.
func TestResponsesStreamRefuses(t *testing.T) {
	t.Parallel()
	events := responsesEvents(t, "weather.jsonl")
	want, _ := completedMessage(t, events[len(events)-1])
	bad := []struct {
		name  string
		after int // refused after this many events
		event string
		says  string
	}{
		{"not JSON", 0, `{"type": "response.created"`, "not valid JSON"},
		{"not an object", 0, `["response.created"]`, "want an object, got an array"},
		{"no type", 0, `{"delta": "x"}`, "type: missing"},
		{"a chat chunk", 0, `{"id":"c","object":"chat.completion.chunk","choices":[]}`, "use the format OPENAI_CHAT"},
		{"wrong field type", 3, `{"type":"response.output_text.delta","output_index":"one","delta":"x"}`, "output_index: want a number"},
		{"delta missing", 3, `{"type":"response.output_text.delta","output_index":1,"content_index":0}`, "without a delta"},
		{"another response", 2, `{"type":"response.in_progress","response":{"id":"resp_other","model":"m","status":"in_progress"}}`, `one stream is one response`},
		{"arguments before the call", 5, `{"type":"response.function_call_arguments.delta","output_index":2,"delta":"{"}`, "no function call was added"},
		{"a call without an id", 5, `{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","name":"f","arguments":""}}`, "without a call_id"},
		{"after the end", len(events), `{"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"more"}`, "after the response ended (completed)"},
		{"an item event without its item", 2, `{"type":"response.output_item.added","output_index":0}`, "response.output_item.added without its item"},
		{"a reasoning item ended twice", 12, `{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_68c1f0a3c1e88190b2f4a6c8e0d2f4a6","type":"reasoning","summary":[]}}`,
			"output_index: 0, whose reasoning item has ended already"},
		{"a reasoning item ending that never started", 11, `{"type":"response.output_item.done","output_index":5,"item":{"id":"rs_x","type":"reasoning","summary":[]}}`,
			"output_index: 5, where no reasoning item was added"},
		{"a reasoning item ending as another", 11, `{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_other","type":"reasoning","summary":[]}}`,
			`item.id: "rs_other", but the reasoning item at output_index 0 is "rs_68c1f0a3c1e88190b2f4a6c8e0d2f4a6"`},
		{"a reasoning item added twice", 3, `{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_again","type":"reasoning","summary":[]}}`,
			"output_index: 0 already holds a reasoning item"},
		{"a call where a reasoning item is", 5, `{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":""}}`,
			"output_index: 0 already holds a reasoning item"},
		{"an item id too long", 2, `{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_` + strings.Repeat("x", 300) + `","type":"reasoning","summary":[]}}`,
			"item.id: 303 bytes, at most 256"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := popenai.NewResponsesStream()
			var dr parley.Draft
			add := func(ev []byte) {
				deltas, err := s.AddJSON(ev)
				if err != nil {
					t.Fatalf("event %s: %v", ev[:40], err)
				}
				if err := dr.ApplyAll(deltas); err != nil {
					t.Fatal(err)
				}
			}
			for _, ev := range events[:tc.after] {
				add(ev)
			}
			_, err := s.AddJSON([]byte(tc.event))
			if parley.ErrorCode(err) != parley.EINVALID || !strings.Contains(err.Error(), tc.says) ||
				!strings.Contains(err.Error(), "event "+strconv.Itoa(tc.after+1)+":") {
				t.Fatalf("got %v, want EINVALID naming event %d and saying %q", err, tc.after+1, tc.says)
			}
			for _, ev := range events[tc.after:] {
				add(ev)
			}
			if got := dr.Message(); !reflect.DeepEqual(got, want) {
				t.Errorf("after a refused event: got %+v, want %+v", got, want)
			}
		})
	}
}

// assemble feeds events to a new stream and applies their deltas to an empty draft,
// checking each against the draft's shape too, as a store does.
func assemble(t *testing.T, events [][]byte) *parley.Draft {
	t.Helper()
	s := popenai.NewResponsesStream()
	var dr parley.Draft
	for i, ev := range events {
		deltas, err := s.AddJSON(ev)
		if err != nil {
			t.Fatalf("event %d: %v", i+1, err)
		}
		shape := dr.Shape()
		if err := shape.ApplyAll(deltas); err != nil {
			t.Fatalf("event %d: the shape refuses deltas %+v: %v", i+1, deltas, err)
		}
		if err := dr.ApplyAll(deltas); err != nil {
			t.Fatalf("event %d: deltas %+v: %v", i+1, deltas, err)
		}
	}
	return &dr
}

// TestResponsesStreamEqualsImport: a streamed Responses reply is what an OPENAI_RESPONSES
// import of the same response's output gives (ParseResponses): reasoning items with
// their ids and encrypted_content (the one response.output_item.added carries is
// partial and not kept), summaries, text (none blank), function calls with their item
// ids and places among the parts. Cut short after any item ended, the stream is the
// import of the items ended so far: what an abort keeps.
func TestResponsesStreamEqualsImport(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"weather.jsonl", "interleaved.jsonl"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			events := responsesEvents(t, file)
			var done []json.RawMessage // the items ended so far
			compared := 0
			for n, raw := range events {
				var ev struct {
					Type     string
					Item     json.RawMessage
					Response struct{ Output json.RawMessage }
				}
				if err := json.Unmarshal(raw, &ev); err != nil {
					t.Fatal(err)
				}
				var output json.RawMessage
				switch ev.Type {
				case "response.output_item.done":
					done = append(done, ev.Item)
					output, _ = json.Marshal(done)
				case "response.completed":
					output = ev.Response.Output
				default:
					continue
				}
				imp, err := popenai.ParseResponses(strings.NewReader(`{"output":` + string(output) + `}`))
				if err != nil {
					t.Fatalf("event %d: import the output: %v", n+1, err)
				}
				if len(imp.Messages) == 0 {
					continue // reasoning alone: the importer keeps no message
				}
				if len(imp.Messages) != 1 {
					t.Fatalf("event %d: imported %d messages, want the reply", n+1, len(imp.Messages))
				}
				compared++
				got, want := assemble(t, events[:n+1]).Final(), imp.Messages[0].Message
				if got.Kind() != want.Kind() {
					t.Fatalf("event %d: streamed a %s, imported a %s", n+1, got.Kind(), want.Kind())
				}
				if g, w := partsOf(got), partsOf(want); !reflect.DeepEqual(g, w) {
					t.Errorf("event %d: streamed parts\n%q\nimported\n%q", n+1, g, w)
				}
				gotCalls, wantCalls := callsOf(got), callsOf(want)
				if len(gotCalls) != len(wantCalls) {
					t.Fatalf("event %d: streamed %d calls, imported %d", n+1, len(gotCalls), len(wantCalls))
				}
				for i, w := range wantCalls {
					g := gotCalls[i]
					if g.ID != w.ID || g.Name != w.Name || *g.ArgumentsRaw != *w.ArgumentsRaw || g.ItemID != w.ItemID || at(g.PartIndex) != at(w.PartIndex) {
						t.Errorf("event %d: call %d streamed %s %s %s item %q at %s, imported %s %s %s item %q at %s", n+1, i,
							g.ID, g.Name, *g.ArgumentsRaw, g.ItemID, at(g.PartIndex), w.ID, w.Name, *w.ArgumentsRaw, w.ItemID, at(w.PartIndex))
					}
				}
				if err := parley.Prepare(got, parley.DefaultLimits); err != nil {
					t.Errorf("event %d: the streamed message does not prepare: %v", n+1, err)
				}
			}
			if compared < 2 {
				t.Errorf("compared %d points of the stream, want every item's end after the first text or call, and the end", compared)
			}
		})
	}
	// What the interleaved stream is, so that the comparison above is not of two empties.
	got := assemble(t, responsesEvents(t, "interleaved.jsonl")).Final().(*parley.ToolRequestMessage)
	var order []string
	got.InOrder(func(p *parley.Part, c *parley.ToolCall) {
		switch {
		case c != nil:
			order = append(order, "call "+c.ItemID)
		case p.Signature != "":
			order = append(order, string(p.Kind)+" "+p.ItemID+" signed")
		default:
			order = append(order, string(p.Kind)+" "+p.ItemID)
		}
	})
	want := "THINKING rs_0a1b2c3d4e5f6071aa01 signed|THINKING rs_0a1b2c3d4e5f6071aa01|TEXT |call fc_0a1b2c3d4e5f6071cc01|" +
		"THINKING rs_0a1b2c3d4e5f6071aa02 signed|TEXT |call fc_0a1b2c3d4e5f6071cc02"
	if g := strings.Join(order, "|"); g != want {
		t.Errorf("interleaved.jsonl: got\n%s\nwant\n%s", g, want)
	}
	if p := got.Parts[0]; !strings.HasSuffix(p.Signature, "-reasoningA==") || p.Text != "**Reading the config**\n\nThe user wants the port; it is in config.yaml." {
		t.Errorf("interleaved.jsonl: first reasoning part %+v, want the first summary signed with the done item's encrypted_content", p)
	}
	if got.Parts[2].Text != "\n\n First the config." {
		t.Errorf("interleaved.jsonl: first text %q, want its leading blanks kept once the text came", got.Parts[2].Text)
	}
}

func at(n *int) string {
	if n == nil {
		return "none"
	}
	return strconv.Itoa(*n)
}
