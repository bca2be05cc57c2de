package openai_test

import (
	"bufio"
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
// the SDK's types: each reasoning summary a THINKING part, each output text or refusal a
// TEXT part, each function call a tool call.
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
			for _, s := range item.AsReasoning().Summary {
				dr.Parts = append(dr.Parts, parley.Part{Kind: parley.PartThinking, Text: s.Text})
			}
		case "message":
			for _, c := range item.AsMessage().Content {
				text := c.Text
				if c.Type == "refusal" {
					text = c.Refusal
				}
				dr.Parts = append(dr.Parts, parley.Part{Kind: parley.PartText, Text: text})
			}
		case "function_call":
			fc := item.AsFunctionCall()
			dr.ToolCalls = append(dr.ToolCalls, parley.ToolCall{ID: fc.CallID, Name: fc.Name, Arguments: parley.JSON(fc.Arguments)})
		}
	}
	return dr.Message(), ev.Response
}

// TestResponsesStreamAssembles: the deltas of a Responses stream, applied in order,
// give the message its response.completed event holds, and the provenance is the
// response's.
func TestResponsesStreamAssembles(t *testing.T) {
	t.Parallel()
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
	if !ok || len(req.Parts) != 2 || req.Parts[1].Text != "Let me check the current weather in Paris for you." ||
		len(req.ToolCalls) != 1 || string(req.ToolCalls[0].Arguments) != `{"city":"Paris","unit":"c"}` {
		t.Errorf("assembled: got %+v, want thinking, the text and get_weather's arguments", got)
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
