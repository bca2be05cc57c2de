package anthropic_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	"github.com/goccy/go-yaml"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/anthropic"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/stream")

func eventStream(body string) *http.Response {
	return &http.Response{
		Header: http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:   io.NopCloser(strings.NewReader(body)),
	}
}

// sseEvents splits a server-sent event stream with the SDK's own decoder, as a client
// reads it, and returns the data of each event, pings included.
func sseEvents(t *testing.T, body string) [][]byte {
	t.Helper()
	dec := ssestream.NewDecoder(eventStream(body))
	var events [][]byte
	for dec.Next() {
		events = append(events, bytes.Clone(dec.Event().Data))
	}
	if err := dec.Err(); err != nil {
		t.Fatalf("decode the event stream: %v", err)
	}
	return events
}

// sdkEvents decodes the stream as the SDK's client does (ssestream.Stream, which skips
// pings): what a backend would hand to MessageStream.Add.
func sdkEvents(t *testing.T, body string) []sdk.MessageStreamEventUnion {
	t.Helper()
	stream := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(eventStream(body)), nil)
	var events []sdk.MessageStreamEventUnion
	for stream.Next() {
		events = append(events, stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("decode the events: %v", err)
	}
	return events
}

// feed adds every event to a new MessageStream, checking after each that the deltas so
// far, applied to an empty draft, give the stream's message.
func feed(t *testing.T, events [][]byte) (*anthropic.MessageStream, []parley.Delta) {
	t.Helper()
	s := anthropic.NewMessageStream()
	var dr parley.Draft
	var all []parley.Delta
	for i, raw := range events {
		deltas, err := s.AddJSON(raw)
		if err != nil {
			t.Fatalf("event %d: %v", i+1, err)
		}
		for _, d := range deltas {
			if err := dr.Apply(d); err != nil {
				t.Fatalf("event %d: apply %+v: %v", i+1, d, err)
			}
		}
		all = append(all, deltas...)
		if got, want := dr.Message(), s.Message(); !reflect.DeepEqual(got, want) {
			t.Fatalf("event %d: got %#v from the deltas so far, want the assembled %#v", i+1, got, want)
		}
	}
	return s, all
}

// compareWithSDK checks the stream's message and provenance against what the SDK's
// accumulator assembled from the same events, field by field. Until a tool_use's input
// starts, the SDK holds a placeholder {} where the stream has no arguments yet; a server
// tool's block is a part once it has stopped (stopped holds the indexes of the blocks
// that have).
func compareWithSDK(t *testing.T, s *anthropic.MessageStream, acc sdk.Message, stopped map[int]bool) {
	t.Helper()
	p := s.Provenance()
	if p.Provider != "anthropic" || p.Model != string(acc.Model) || p.ResponseID != acc.ID || p.FinishReason != string(acc.StopReason) {
		t.Errorf("got provenance %+v, want anthropic %s %s %s", p, acc.Model, acc.ID, acc.StopReason)
	}
	want := parley.Usage{InputTokens: acc.Usage.InputTokens, OutputTokens: acc.Usage.OutputTokens,
		CachedInputTokens: acc.Usage.CacheReadInputTokens, CacheCreationInputTokens: acc.Usage.CacheCreationInputTokens}
	if p.Usage != want {
		t.Errorf("got usage %+v, want %+v", p.Usage, want)
	}
	msg := s.Message()
	if msg.Meta().Role != parley.RoleAssistant {
		t.Errorf("got role %s, want ASSISTANT", msg.Meta().Role)
	}
	var body parley.Body
	var calls []parley.ToolCall
	switch m := msg.(type) {
	case *parley.TextMessage:
		body = m.Body
	case *parley.ToolRequestMessage:
		body, calls = m.Body, m.ToolCalls
	default:
		t.Fatalf("got a %T, want a text or tool request message", msg)
	}
	var parts []parley.Part
	var wantCalls []parley.ToolCall
	var at []int // the parts before each call
	for i, b := range acc.Content {
		switch b.Type {
		case "text":
			p := parley.Part{Kind: parley.PartText, Text: b.Text}
			if len(b.Citations) > 0 {
				var cs []json.RawMessage
				for _, c := range b.Citations {
					cs = append(cs, json.RawMessage(c.RawJSON()))
				}
				raw, _ := json.Marshal(cs) // compact, as the stream keeps them
				p.Citations = parley.JSON(raw)
			}
			parts = append(parts, p)
		case "thinking":
			parts = append(parts, parley.Part{Kind: parley.PartThinking, Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			parts = append(parts, parley.Part{Kind: parley.PartRedactedThinking, Signature: b.Data})
		case "tool_use":
			wantCalls = append(wantCalls, parley.ToolCall{ID: b.ID, Name: b.Name, Arguments: parley.JSON(b.Input)})
			at = append(at, len(parts))
		case "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result", "mcp_tool_use", "mcp_tool_result":
			if stopped[i] {
				var raw bytes.Buffer
				if err := json.Compact(&raw, []byte(b.RawJSON())); err != nil {
					t.Fatal(err)
				}
				parts = append(parts, parley.Part{Kind: parley.PartServerTool, Raw: parley.JSON(raw.Bytes())})
			}
		}
	}
	if !reflect.DeepEqual(body.Parts, parts) {
		t.Errorf("got parts %q, want %q", body.Parts, parts)
	}
	if len(calls) != len(wantCalls) {
		t.Fatalf("got %d tool calls, want %d", len(calls), len(wantCalls))
	}
	parley.AnchorCalls(wantCalls, at, len(parts))
	for i, w := range wantCalls {
		g := calls[i]
		placeholder := len(g.Arguments) == 0 && string(w.Arguments) == "{}" && s.Provenance().FinishReason == ""
		if g.ID != w.ID || g.Name != w.Name || string(g.Arguments) != string(w.Arguments) && !placeholder {
			t.Errorf("tool call %d: got %s %s %s, want %s %s %s", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
		}
		if place(g.PartIndex) != place(w.PartIndex) {
			t.Errorf("tool call %d: got partIndex %s, want %s (the blocks' order)", i, place(g.PartIndex), place(w.PartIndex))
		}
	}
}

// place shows a call's partIndex.
func place(at *int) string {
	if at == nil {
		return "none"
	}
	return strconv.Itoa(*at)
}

type cassette struct {
	Interactions []struct {
		Response struct {
			Body struct {
				String string `yaml:"string"`
			} `yaml:"body"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// TestMessageStreamRecorded feeds the recorded stream of ../shared/fixtures/streams,
// when it is there, event by event, after every event comparing with the SDK's
// accumulator fed the same events so far: a stream stopped there keeps exactly that.
func TestMessageStreamRecorded(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "..", "shared", "fixtures", "streams", "anthropic-thinking.cassette.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no recorded streams: %v", err)
	}
	var c cassette
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if len(c.Interactions) == 0 {
		t.Fatalf("%s: no interactions", path)
	}
	for i, in := range c.Interactions {
		checkAgainstSDK(t, in.Response.Body.String)
		s, _ := feed(t, sseEvents(t, in.Response.Body.String))
		m, ok := s.Message().(*parley.TextMessage)
		if !ok || len(m.Parts) != 2 || m.Parts[0].Signature == "" || s.Provenance().Usage.OutputTokens == 0 {
			t.Errorf("stream %d: got %#v, want signed thinking and text with usage; the fixture is not what this test expects", i, s.Message())
		}
	}
}

// checkAgainstSDK feeds body's events as JSON and compares with the SDK's accumulator
// after every event; then feeds them as the SDK decoded them, which must assemble the
// same.
func checkAgainstSDK(t *testing.T, body string) (*anthropic.MessageStream, []parley.Delta) {
	t.Helper()
	raw := sseEvents(t, body)
	s, deltas := feed(t, raw)
	var acc sdk.Message
	stopped := make(map[int]bool)
	prefix := anthropic.NewMessageStream()
	for k, data := range raw {
		if _, err := prefix.AddJSON(data); err != nil {
			t.Fatal(err)
		}
		var ev sdk.MessageStreamEventUnion
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "ping" {
			continue
		}
		if err := acc.Accumulate(ev); err != nil {
			t.Fatalf("event %d: the SDK refused it: %v", k+1, err)
		}
		if ev.Type == "content_block_stop" {
			stopped[int(ev.Index)] = true
		}
		compareWithSDK(t, prefix, acc, stopped)
	}
	typed := anthropic.NewMessageStream()
	var typedDeltas []parley.Delta
	for k, ev := range sdkEvents(t, body) {
		d, err := typed.Add(ev)
		if err != nil {
			t.Fatalf("typed event %d: %v", k+1, err)
		}
		typedDeltas = append(typedDeltas, d...)
	}
	if !reflect.DeepEqual(typed.Message(), s.Message()) || typed.Provenance() != s.Provenance() ||
		!reflect.DeepEqual(typedDeltas, deltas) {
		t.Errorf("typed events got %#v, want %#v as from their JSON", typed.Message(), s.Message())
	}
	return s, deltas
}

// golden is how a test shows an assembled stream: the message, its provenance and the
// deltas reported on the way.
type golden struct {
	Kind       parley.MessageKind
	Parts      []parley.Part `json:",omitempty"`
	ToolCalls  []goldenCall  `json:",omitempty"`
	Provenance parley.Provenance
	Deltas     []goldenDelta
}

// goldenDelta is a parley.Delta, without the fields that few deltas have when empty.
type goldenDelta struct {
	Kind                       parley.DeltaKind
	Index                      int
	Text, ToolCallID, ToolName string
	PartIndex                  *int   `json:",omitempty"`
	ItemID                     string `json:",omitempty"`
}

type goldenCall struct {
	ID, Name, Arguments string
	PartIndex           *int `json:",omitempty"`
}

func view(s *anthropic.MessageStream, deltas []parley.Delta) golden {
	g := golden{Kind: s.Message().Kind(), Provenance: s.Provenance()}
	for _, d := range deltas {
		g.Deltas = append(g.Deltas, goldenDelta{d.Kind, d.Index, d.Text, d.ToolCallID, d.ToolName, d.PartIndex, d.ItemID})
	}
	switch m := s.Message().(type) {
	case *parley.TextMessage:
		g.Parts = m.Parts
	case *parley.ToolRequestMessage:
		g.Parts = m.Parts
		for _, c := range m.ToolCalls {
			g.ToolCalls = append(g.ToolCalls, goldenCall{c.ID, c.Name, string(c.Arguments), c.PartIndex})
		}
	}
	return g
}

// TestMessageStreamGolden assembles the handcrafted streams of testdata/stream: each
// must equal the SDK's assembly after every event, and its golden file at the end.
func TestMessageStreamGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "stream", "*.sse"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no streams in testdata/stream: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, deltas := checkAgainstSDK(t, string(data))
			got, err := json.MarshalIndent(view(s, deltas), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			gold := strings.TrimSuffix(file, ".sse") + ".golden.json"
			if *update {
				if err := os.WriteFile(gold, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(gold)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got\n%s\nwant (%s)\n%s", got, gold, want)
			}
		})
	}
}

const messageStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}`

// TestMessageStreamRefuses feeds a good start, then one bad event: the error names what
// is wrong, and the stream is as it was.
func TestMessageStreamRefuses(t *testing.T) {
	t.Parallel()
	start := []string{
		messageStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`,
	}
	tests := []struct {
		name  string
		event string
		want  string
	}{
		{"bad JSON", `{"type":"content_block_delta","index":1,"delta":`, "event 6: not valid JSON (it ends early: the event is truncated)"},
		{"empty", ``, "event 6: empty; want an event's JSON"},
		{"not an object", `"ping"`, "event 6: want an object, got a string"},
		{"no type", `{"index":1}`, "event 6: type: missing"},
		{"a wrong field type", `{"type":"content_block_delta","index":"1","delta":{"type":"input_json_delta","partial_json":"{"}}`,
			"event 6 (content_block_delta): index: want a number, got string"},
		{"an unknown event type", `{"type":"message_update"}`, `event 6 (message_update): type: "message_update" is not a Messages stream event`},
		{"an OpenAI chunk", `{"id":"c1","object":"chat.completion.chunk","choices":[]}`, "event 6: type: missing"},
		{"a provider error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			"event 6 (error): the provider reported an error: overloaded_error: Overloaded"},
		{"a second message_start", messageStart, "event 6 (message_start): a second message_start; one stream is one message"},
		{"a delta for an unknown index", `{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{"}}`,
			"event 6 (content_block_delta): index: 4, but the block streaming is 1"},
		{"a delta for an ended block", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}`,
			"event 6 (content_block_delta): index: 0, but the block streaming is 1"},
		{"a delta that does not fit", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"x"}}`,
			"event 6 (content_block_delta): delta.type: a text_delta does not fit block 1, a tool_use block"},
		{"an unknown delta", `{"type":"content_block_delta","index":1,"delta":{"type":"image_delta"}}`,
			`event 6 (content_block_delta): delta.type: "image_delta" is not a content block delta`},
		{"a delta without type", `{"type":"content_block_delta","index":1,"delta":{"partial_json":"{"}}`,
			"event 6 (content_block_delta): delta.type: missing"},
		{"a delta without index", `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}`,
			"event 6 (content_block_delta): index: missing"},
		{"a block skipped", `{"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}`,
			"event 6 (content_block_start): index: 3, but the next block is 2"},
		{"a tool_use without id", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","name":"f","input":{}}}`,
			"event 6 (content_block_start): content_block.id: a tool_use needs an id"},
		{"a tool_use with another's id", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"g","input":{}}}`,
			`event 6 (content_block_start): content_block.id: "toolu_1" is already the id of tool_use 0`},
		{"a tool_use without name", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","input":{}}}`,
			"event 6 (content_block_start): content_block.name: tool_use toolu_2 needs a name"},
		{"a block without type", `{"type":"content_block_start","index":2,"content_block":{"text":""}}`,
			"event 6 (content_block_start): content_block.type: missing"},
	}
	// A server tool's block opens its part when it ends: nothing may start before.
	serverTool := append(append([]string(nil), start...), `{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`)
	redacted := append(append([]string(nil), start...), `{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"redacted_thinking","data":"Em"}}`)
	for _, tc := range []struct {
		name   string
		events []string
		event  string
		want   string
	}{
		{"a block starting inside a server tool's", serverTool, `{"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}`,
			"event 8 (content_block_start): index: 3, but block 2 (server_tool_use) has not ended (content_block_stop)"},
		{"text into a server tool's block", serverTool, `{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"x"}}`,
			"event 8 (content_block_delta): delta.type: a text_delta does not fit block 2, a server_tool_use block"},
		{"thinking into redacted thinking", redacted, `{"type":"content_block_delta","index":2,"delta":{"type":"thinking_delta","thinking":"x"}}`,
			"event 8 (content_block_delta): delta.type: a thinking_delta does not fit block 2, a redacted_thinking block"},
	} {
		s := anthropic.NewMessageStream()
		for _, e := range tc.events {
			if _, err := s.AddJSON([]byte(e)); err != nil {
				t.Fatal(err)
			}
		}
		msg := s.Message()
		if _, err := s.AddJSON([]byte(tc.event)); parley.ErrorCode(err) != parley.EINVALID || !strings.Contains(parley.ErrorMessage(err), tc.want) {
			t.Errorf("%s: got %v, want EINVALID containing %q", tc.name, err, tc.want)
		}
		if !reflect.DeepEqual(s.Message(), msg) {
			t.Errorf("%s: got %#v after a refused event, want it unchanged", tc.name, s.Message())
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := anthropic.NewMessageStream()
			for _, e := range start {
				if _, err := s.AddJSON([]byte(e)); err != nil {
					t.Fatal(err)
				}
			}
			msg, prov := s.Message(), s.Provenance()
			deltas, err := s.AddJSON([]byte(tc.event))
			if parley.ErrorCode(err) != parley.EINVALID || !strings.Contains(parley.ErrorMessage(err), tc.want) {
				t.Fatalf("got %v, want EINVALID containing %q", err, tc.want)
			}
			if deltas != nil {
				t.Errorf("got deltas %+v with the error, want none", deltas)
			}
			if !reflect.DeepEqual(s.Message(), msg) || s.Provenance() != prov {
				t.Errorf("got %#v after a refused event, want it unchanged: %#v", s.Message(), msg)
			}
			// The stream goes on after a refused event.
			next := `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`
			if _, err := s.AddJSON([]byte(next)); err != nil {
				t.Errorf("got %v for a good event after a refused one, want it added", err)
			}
		})
	}
}

// TestMessageStreamOrder refuses events out of the stream's order.
func TestMessageStreamOrder(t *testing.T) {
	t.Parallel()
	text := `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	delta := `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`
	stop := `{"type":"message_stop"}`
	tests := []struct {
		name   string
		events []string
		want   string
	}{
		{"a block before message_start", []string{text}, "event 1 (content_block_start): before message_start, which opens the stream"},
		{"a delta before any block", []string{messageStart, delta}, "event 2 (content_block_delta): index: 0, but no content block has started"},
		{"an event after message_stop", []string{messageStart, text, delta, stop, delta}, "event 5 (content_block_delta): after message_stop"},
		{"a stop twice", []string{messageStart, text, `{"type":"content_block_stop","index":0}`, `{"type":"content_block_stop","index":0}`},
			"event 4 (content_block_stop): index: 0, but block 0 has ended"},
		{"input after a complete {}", []string{messageStart,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"x"}}`},
			"event 4 (content_block_delta): delta.partial_json: more input after tool_use 0's complete {}"},
		{"content in message_start", []string{`{"type":"message_start","message":{"id":"m","model":"x","content":[{"type":"text","text":"hi"}]}}`},
			"event 1 (message_start): message.content: 1 blocks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := anthropic.NewMessageStream()
			last := len(tc.events) - 1
			for _, e := range tc.events[:last] {
				if _, err := s.AddJSON([]byte(e)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.AddJSON([]byte(tc.events[last]))
			if parley.ErrorCode(err) != parley.EINVALID || !strings.Contains(parley.ErrorMessage(err), tc.want) {
				t.Fatalf("got %v, want EINVALID containing %q", err, tc.want)
			}
		})
	}
}

// FuzzMessageStream feeds a stream arbitrary events, one per line: it must not panic, a
// refused event must change nothing, and after every event the deltas so far must add
// up to the message. The streams of testdata/stream are its seeds.
//
//	go test -run='^$' -fuzz=FuzzMessageStream -fuzztime=30s ./interop/anthropic/
func FuzzMessageStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "stream", "*.sse"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var lines []string
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "data: "); ok {
				lines = append(lines, rest)
			}
		}
		f.Add(strings.Join(lines, "\n"))
	}
	f.Fuzz(func(t *testing.T, in string) {
		s := anthropic.NewMessageStream()
		var dr parley.Draft
		for i, line := range strings.Split(in, "\n") {
			before := s.Message()
			deltas, err := s.AddJSON([]byte(line))
			if err != nil {
				if !reflect.DeepEqual(s.Message(), before) {
					t.Fatalf("event %d: refused (%v), yet the message changed", i+1, err)
				}
				continue
			}
			for _, d := range deltas {
				if err := dr.Apply(d); err != nil {
					t.Fatalf("event %d: apply %+v: %v", i+1, d, err)
				}
			}
			if got, want := dr.Message(), s.Message(); !reflect.DeepEqual(got, want) {
				t.Fatalf("event %d: got %#v from the deltas, want the assembled %#v", i+1, got, want)
			}
		}
	})
}

// TestMessageStreamAddNeedsJSON refuses an event built in Go rather than decoded: the
// SDK's accumulator reads a content block from the event's JSON.
func TestMessageStreamAddNeedsJSON(t *testing.T) {
	t.Parallel()
	s := anthropic.NewMessageStream()
	_, err := s.Add(sdk.MessageStreamEventUnion{Type: "message_start"})
	if want := "event 1: empty; want an event's JSON"; parley.ErrorCode(err) != parley.EINVALID || parley.ErrorMessage(err) != want {
		t.Fatalf("got %v, want EINVALID %q", err, want)
	}
}

// TestMessageStreamEqualsImport assembles each complete stream (the handcrafted ones
// and the recorded one) and imports the reply the SDK assembled from the same events,
// as a finished Messages API reply: the message stored from the deltas is the imported
// one, part for part, call for call (redacted thinking, server tool blocks, citations
// and where each call came among the parts included). A stream cut short between two
// blocks is compared too, with the reply as far as it went: what an abort keeps.
func TestMessageStreamEqualsImport(t *testing.T) {
	t.Parallel()
	bodies := map[string]string{}
	files, _ := filepath.Glob(filepath.Join("testdata", "stream", "*.sse"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bodies[filepath.Base(f)] = string(data)
	}
	if data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "fixtures", "streams", "anthropic-thinking.cassette.yaml")); err == nil {
		var c cassette
		if err := yaml.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		for i, in := range c.Interactions {
			bodies["recorded "+strconv.Itoa(i)] = in.Response.Body.String
		}
	}
	compared, anchored := 0, 0
	for name, body := range bodies {
		var acc sdk.Message
		var dr parley.Draft
		s := anthropic.NewMessageStream()
		open := map[int64]bool{} // blocks that have not ended
		for _, raw := range sseEvents(t, body) {
			deltas, err := s.AddJSON(raw)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := dr.ApplyAll(deltas); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var ev sdk.MessageStreamEventUnion
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			if err := acc.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
			switch {
			case ev.Type == "content_block_start":
				open[ev.Index] = true
			case ev.Type == "content_block_stop":
				delete(open, ev.Index)
			}
		}
		if acc.StopReason == "" && len(open) > 0 {
			continue // cut short inside a block: the SDK has not written it whole
		}
		compared++
		content := json.RawMessage(acc.RawJSON())
		if acc.StopReason == "" {
			// The SDK writes the blocks into its JSON at message_stop only: what it
			// holds so far, as it would send it back.
			b, err := json.Marshal(acc.ToParam())
			if err != nil {
				t.Fatal(err)
			}
			content = b
		}
		var reply struct{ Content json.RawMessage }
		if err := json.Unmarshal(content, &reply); err != nil {
			t.Fatal(err)
		}
		history := `{"messages":[{"role":"user","content":"Go."},{"role":"assistant","content":` + string(reply.Content) + `}]}`
		imp, err := anthropic.Parse(strings.NewReader(history))
		if err != nil {
			t.Fatalf("%s: import the assembled reply: %v", name, err)
		}
		if len(imp.Messages) != 2 {
			t.Fatalf("%s: imported %d messages, want the prompt and the reply", name, len(imp.Messages))
		}
		got, want := dr.Final(), imp.Messages[1].Message
		if got.Kind() != want.Kind() {
			t.Errorf("%s: streamed a %s, imported a %s", name, got.Kind(), want.Kind())
			continue
		}
		var gotBody, wantBody parley.Body
		var gotCalls, wantCalls []parley.ToolCall
		switch m := got.(type) {
		case *parley.TextMessage:
			gotBody = m.Body
		case *parley.ToolRequestMessage:
			gotBody, gotCalls = m.Body, m.ToolCalls
		}
		switch m := want.(type) {
		case *parley.TextMessage:
			wantBody = m.Body
		case *parley.ToolRequestMessage:
			wantBody, wantCalls = m.Body, m.ToolCalls
		}
		if !reflect.DeepEqual(gotBody.Parts, wantBody.Parts) {
			t.Errorf("%s: streamed parts\n%q\nimported\n%q", name, gotBody.Parts, wantBody.Parts)
		}
		if len(gotCalls) != len(wantCalls) {
			t.Fatalf("%s: streamed %d calls, imported %d", name, len(gotCalls), len(wantCalls))
		}
		for i, w := range wantCalls {
			g := gotCalls[i]
			if g.ID != w.ID || g.Name != w.Name || *g.ArgumentsRaw != *w.ArgumentsRaw {
				t.Errorf("%s: call %d streamed %s %s %s, imported %s %s %s", name, i, g.ID, g.Name, *g.ArgumentsRaw, w.ID, w.Name, *w.ArgumentsRaw)
			}
			if place(g.PartIndex) != place(w.PartIndex) {
				t.Errorf("%s: call %d streamed at partIndex %s, imported at %s", name, i, place(g.PartIndex), place(w.PartIndex))
			}
			if w.PartIndex != nil && *w.PartIndex < len(wantBody.Parts) {
				anchored++
			}
		}
		if err := parley.Prepare(got, parley.DefaultLimits); err != nil {
			t.Errorf("%s: the streamed message does not prepare: %v", name, err)
		}
	}
	if compared < 5 {
		t.Errorf("compared %d streams, want the complete ones of testdata/stream and the interleaved one cut short", compared)
	}
	if anchored < 2 {
		t.Errorf("%d calls came before a part, want those of interleaved.sse and interleaved-stopped.sse", anchored)
	}
}

// TestMessageStreamKeepsPartOrder: a reply of text, tool_use, text, tool_use, streamed,
// keeps each call where it came, complete or cut short after the second text, and the
// delta that opens each call says so.
func TestMessageStreamKeepsPartOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file   string
		places string // each call's partIndex
		opens  string // the partIndex of each delta opening a call
	}{
		{"interleaved.sse", "2 3", "2 3"},
		{"interleaved-stopped.sse", "2", "2"},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "stream", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		s, deltas := feed(t, sseEvents(t, string(data)))
		var opens []string
		for _, d := range deltas {
			if d.Kind == parley.DeltaToolArguments && d.ToolCallID != "" {
				opens = append(opens, place(d.PartIndex))
			}
		}
		req, ok := s.Message().(*parley.ToolRequestMessage)
		if !ok {
			t.Fatalf("%s: got a %T, want a tool request", tc.file, s.Message())
		}
		var places []string
		for _, c := range req.ToolCalls {
			places = append(places, place(c.PartIndex))
		}
		if got := strings.Join(places, " "); got != tc.places {
			t.Errorf("%s: calls at %s, want %s", tc.file, got, tc.places)
		}
		if got := strings.Join(opens, " "); got != tc.opens {
			t.Errorf("%s: deltas opening calls at %s, want %s", tc.file, got, tc.opens)
		}
		var order []string
		req.InOrder(func(p *parley.Part, c *parley.ToolCall) {
			if c != nil {
				order = append(order, "tool_use")
			} else {
				order = append(order, strings.ToLower(string(p.Kind)))
			}
		})
		want := "thinking text tool_use text tool_use"
		if tc.file == "interleaved-stopped.sse" {
			want = "thinking text tool_use text"
		}
		if got := strings.Join(order, " "); got != want {
			t.Errorf("%s: in order %s, want %s", tc.file, got, want)
		}
	}
}
