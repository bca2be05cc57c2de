package openai_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/parley-dev/parley"
	popenai "github.com/parley-dev/parley/interop/openai"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/stream")

// sseEvents splits a server-sent event stream with the SDK's own decoder, as a client
// reads it, and returns the data of each event.
func sseEvents(t *testing.T, body string) [][]byte {
	t.Helper()
	res := &http.Response{
		Header: http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:   io.NopCloser(strings.NewReader(body)),
	}
	dec := ssestream.NewDecoder(res)
	var events [][]byte
	for dec.Next() {
		events = append(events, bytes.Clone(dec.Event().Data))
	}
	if err := dec.Err(); err != nil {
		t.Fatalf("decode the event stream: %v", err)
	}
	return events
}

// sdkChunks decodes the stream as the SDK's client does (ssestream.Stream), which is
// what a backend would hand to ChatStream.Add.
func sdkChunks(t *testing.T, body string) []openai.ChatCompletionChunk {
	t.Helper()
	res := &http.Response{
		Header: http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:   io.NopCloser(strings.NewReader(body)),
	}
	stream := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		chunks = append(chunks, stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("decode the chunks: %v", err)
	}
	return chunks
}

// feed adds every event to a new ChatStream, checking after each that the deltas so far,
// applied to an empty draft, give the stream's message. It returns the stream and the
// deltas.
func feed(t *testing.T, events [][]byte) (*popenai.ChatStream, []parley.Delta) {
	t.Helper()
	s := popenai.NewChatStream()
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
// accumulator assembled from the same chunks, field by field.
func compareWithSDK(t *testing.T, s *popenai.ChatStream, sdk openai.ChatCompletion) {
	t.Helper()
	p := s.Provenance()
	if p.ResponseID != sdk.ID || p.Model != sdk.Model || p.Provider != "openai" {
		t.Errorf("got provenance %s %s %s, want openai %s %s", p.Provider, p.Model, p.ResponseID, sdk.Model, sdk.ID)
	}
	u := sdk.Usage
	want := parley.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens}
	if p.Usage != want {
		t.Errorf("got usage %+v, want %+v", p.Usage, want)
	}
	msg := s.Message()
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
	if msg.Meta().Role != parley.RoleAssistant {
		t.Errorf("got role %s, want ASSISTANT", msg.Meta().Role)
	}
	if len(sdk.Choices) == 0 {
		if len(body.Parts) != 0 || len(calls) != 0 {
			t.Errorf("got %d parts and %d calls, want none: the SDK assembled no choice", len(body.Parts), len(calls))
		}
		return
	}
	c := sdk.Choices[0]
	if p.FinishReason != c.FinishReason {
		t.Errorf("got finish reason %q, want %q", p.FinishReason, c.FinishReason)
	}
	var text []string
	for _, part := range body.Parts {
		if part.Kind != parley.PartText || part.Signature != "" {
			t.Errorf("got a %s part signed %q, want TEXT parts only", part.Kind, part.Signature)
		}
		text = append(text, part.Text)
	}
	var wantText []string
	for _, s := range []string{c.Message.Content, c.Message.Refusal} {
		if s != "" {
			wantText = append(wantText, s)
		}
	}
	// The parts come in the order they started, which the SDK does not keep: it holds
	// content and refusal apart.
	slices.Sort(text)
	slices.Sort(wantText)
	if !slices.Equal(text, wantText) {
		t.Errorf("got parts %q, want %q", text, wantText)
	}
	if len(calls) != len(c.Message.ToolCalls) {
		t.Fatalf("got %d tool calls, want %d", len(calls), len(c.Message.ToolCalls))
	}
	for i, w := range c.Message.ToolCalls {
		g := calls[i]
		if g.ID != w.ID || g.Name != w.Function.Name || string(g.Arguments) != w.Function.Arguments {
			t.Errorf("tool call %d: got %s %s %s, want %s %s %s", i, g.ID, g.Name, g.Arguments, w.ID, w.Function.Name, w.Function.Arguments)
		}
	}
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

// TestChatStreamRecorded feeds the recorded streams of ../shared/fixtures/streams, when
// they are there, event by event, after every event comparing with the SDK's
// accumulator fed the same events so far: a stream stopped there keeps exactly that.
func TestChatStreamRecorded(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "..", "shared", "fixtures", "streams", "openai-chat-tool-calls.cassette.yaml")
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
		body := in.Response.Body.String
		events := sseEvents(t, body)
		chunks := sdkChunks(t, body)
		s, deltas := feed(t, events)
		var acc openai.ChatCompletionAccumulator
		for k, chunk := range chunks {
			if !acc.AddChunk(chunk) {
				t.Fatalf("stream %d: the SDK refused chunk %d", i, k+1)
			}
			prefix := popenai.NewChatStream()
			for _, raw := range events[:k+1] {
				if _, err := prefix.AddJSON(raw); err != nil {
					t.Fatal(err)
				}
			}
			compareWithSDK(t, prefix, acc.ChatCompletion)
		}
		compareWithSDK(t, s, acc.ChatCompletion)
		if len(acc.Choices) == 0 || len(acc.Choices[0].Message.ToolCalls) == 0 || acc.Usage.PromptTokens == 0 {
			t.Errorf("stream %d: the SDK assembled no tool call or no usage; the fixture is not what this test expects", i)
		}
		// The typed chunks, as the SDK's client decodes them, assemble the same.
		typed := popenai.NewChatStream()
		var typedDeltas []parley.Delta
		for k, chunk := range chunks {
			d, err := typed.Add(chunk)
			if err != nil {
				t.Fatalf("stream %d: typed chunk %d: %v", i, k+1, err)
			}
			typedDeltas = append(typedDeltas, d...)
		}
		if !reflect.DeepEqual(typed.Message(), s.Message()) || typed.Provenance() != s.Provenance() ||
			!reflect.DeepEqual(typedDeltas, deltas) {
			t.Errorf("stream %d: typed chunks got %#v, want %#v as from their JSON", i, typed.Message(), s.Message())
		}
	}
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

type goldenCall struct{ ID, Name, Arguments string }

func view(s *popenai.ChatStream, deltas []parley.Delta) golden {
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
			g.ToolCalls = append(g.ToolCalls, goldenCall{c.ID, c.Name, string(c.Arguments)})
		}
	}
	return g
}

// TestChatStreamGolden assembles the handcrafted streams of testdata/stream: each must
// equal the SDK's assembly, and its golden file.
func TestChatStreamGolden(t *testing.T) {
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
			s, deltas := feed(t, sseEvents(t, string(data)))
			var acc openai.ChatCompletionAccumulator
			for _, chunk := range sdkChunks(t, string(data)) {
				acc.AddChunk(chunk)
			}
			compareWithSDK(t, s, acc.ChatCompletion)
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

const chunkHead = `"id":"c1","object":"chat.completion.chunk","model":"gpt-4o"`

// TestChatStreamRefuses feeds a good start, then one bad chunk: the error names what is
// wrong, and the stream is as it was.
func TestChatStreamRefuses(t *testing.T) {
	t.Parallel()
	start := []string{
		`{` + chunkHead + `,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}`,
		`{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":"{"}}]}}]}`,
	}
	tests := []struct {
		name  string
		chunk string
		want  string
	}{
		{"bad JSON", `{"id":"c1",`, "chunk 3: not valid JSON (it ends early: the chunk is truncated)"},
		{"not an object", `[1]`, "chunk 3: want an object, got an array"},
		{"a wrong type", `{` + chunkHead + `,"choices":[{"index":0,"delta":{"content":3}}]}`, "chunk 3: choices.delta.content: want a string, got number"},
		{"an Anthropic event", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`,
			`chunk 3: type: "content_block_delta" is not a Chat Completions chunk`},
		{"a Responses event", `{"type":"response.output_text.delta","delta":"x"}`, `type: "response.output_text.delta" is not a Chat Completions chunk`},
		{"another object", `{"id":"c1","object":"chat.completion","choices":[]}`, `chunk 3: object: "chat.completion", want "chat.completion.chunk"`},
		{"another completion", `{"id":"c2","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}`,
			`chunk 3: id: "c2", but the stream is completion "c1"`},
		{"a second choice", `{` + chunkHead + `,"choices":[{"index":1,"delta":{"content":"x"}}]}`, "chunk 3: choices[0].index: 1; only choice 0"},
		{"a call index skipped", `{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"call_c","function":{"name":"g"}}]}}]}`,
			"chunk 3: choices[0].delta.tool_calls[0].index: 2, but the message has 1 tool calls; a new call is number 1"},
		{"a call without id", `{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"g","arguments":"{}"}}]}}]}`,
			"chunk 3: choices[0].delta.tool_calls[0]: tool call 1 opens without an id"},
		{"a call without name", `{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"arguments":"{}"}}]}}]}`,
			"chunk 3: choices[0].delta.tool_calls[0].function.name: tool call 1 (call_b) opens without a name"},
		{"a second call with the first's id", `{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_a","function":{"name":"g"}}]}}]}`,
			`chunk 3: choices[0].delta.tool_calls[0].id: "call_a" is already the id of tool call 0`},
		{"a call changing id", `{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_z","function":{"arguments":"}"}}]}}]}`,
			`chunk 3: choices[0].delta.tool_calls[0].id: "call_z", but tool call 0 is "call_a"`},
		{"one chunk changing the id of the call it opens", `{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"g"}},{"index":1,"id":"call_c","function":{"arguments":"{}"}}]}}]}`,
			`chunk 3: choices[0].delta.tool_calls[1].id: "call_c", but tool call 1 is "call_b"`},
		{"a custom tool", `{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"custom","function":{"name":"g"}}]}}]}`,
			`chunk 3: choices[0].delta.tool_calls[0].type: "custom", want "function"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := popenai.NewChatStream()
			for _, c := range start {
				if _, err := s.AddJSON([]byte(c)); err != nil {
					t.Fatal(err)
				}
			}
			msg, prov := s.Message(), s.Provenance()
			deltas, err := s.AddJSON([]byte(tc.chunk))
			if parley.ErrorCode(err) != parley.EINVALID || !strings.Contains(parley.ErrorMessage(err), tc.want) {
				t.Fatalf("got %v, want EINVALID containing %q", err, tc.want)
			}
			if deltas != nil {
				t.Errorf("got deltas %+v with the error, want none", deltas)
			}
			if !reflect.DeepEqual(s.Message(), msg) || s.Provenance() != prov {
				t.Errorf("got %#v after a refused chunk, want it unchanged: %#v", s.Message(), msg)
			}
			// The stream goes on after a refused chunk.
			next := `{` + chunkHead + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}`
			if _, err := s.AddJSON([]byte(next)); err != nil {
				t.Errorf("got %v for a good chunk after a refused one, want it added", err)
			}
		})
	}
}

// TestChatStreamEnd refuses what comes after the end of a choice or of the stream.
func TestChatStreamEnd(t *testing.T) {
	t.Parallel()
	finish := `{` + chunkHead + `,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	usage := `{` + chunkHead + `,"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`
	late := `{` + chunkHead + `,"choices":[{"index":0,"delta":{"content":"x"}}]}`
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"content after the finish", []string{finish, late}, `chunk 2: choices[0]: a delta after finish_reason "stop"`},
		{"a chunk after [DONE]", []string{finish, usage, "[DONE]", usage}, "chunk 3: after [DONE]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := popenai.NewChatStream()
			last := len(tc.chunks) - 1
			for _, c := range tc.chunks[:last] {
				if _, err := s.AddJSON([]byte(c)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.AddJSON([]byte(tc.chunks[last]))
			if parley.ErrorCode(err) != parley.EINVALID || !strings.Contains(parley.ErrorMessage(err), tc.want) {
				t.Fatalf("got %v, want EINVALID containing %q", err, tc.want)
			}
		})
	}
}

// FuzzChatStream feeds a stream arbitrary chunks, one per line: it must not panic, a
// refused chunk must change nothing, and after every chunk the deltas so far must add
// up to the message. The streams of testdata/stream are its seeds.
//
//	go test -run='^$' -fuzz=FuzzChatStream -fuzztime=30s ./interop/openai/
func FuzzChatStream(f *testing.F) {
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
		s := popenai.NewChatStream()
		var dr parley.Draft
		for i, line := range strings.Split(in, "\n") {
			before := s.Message()
			deltas, err := s.AddJSON([]byte(line))
			if err != nil {
				if !reflect.DeepEqual(s.Message(), before) {
					t.Fatalf("chunk %d: refused (%v), yet the message changed", i+1, err)
				}
				continue
			}
			for _, d := range deltas {
				if err := dr.Apply(d); err != nil {
					t.Fatalf("chunk %d: apply %+v: %v", i+1, d, err)
				}
			}
			if got, want := dr.Message(), s.Message(); !reflect.DeepEqual(got, want) {
				t.Fatalf("chunk %d: got %#v from the deltas, want the assembled %#v", i+1, got, want)
			}
		}
	})
}

// TestChatStreamEqualsImport assembles each complete stream (the handcrafted ones and
// the recorded ones) and imports the reply the SDK's accumulator assembled from the same
// chunks, as the SDK sends it back (ToParam), as an OPENAI_CHAT history: the message
// stored from the deltas is the imported one. A Chat message cannot interleave text and
// calls (its content is one string, its tool_calls one list), so content that streams
// between two calls (text-between-calls.sse) joins the one TEXT part, and no call has a
// partIndex, streamed or imported.
func TestChatStreamEqualsImport(t *testing.T) {
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
	if data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "fixtures", "streams", "openai-chat-tool-calls.cassette.yaml")); err == nil {
		var c cassette
		if err := yaml.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		for i, in := range c.Interactions {
			bodies["recorded "+strconv.Itoa(i)] = in.Response.Body.String
		}
	}
	compared := 0
	for name, body := range bodies {
		s := popenai.NewChatStream()
		var dr parley.Draft
		for _, raw := range sseEvents(t, body) {
			deltas, err := s.AddJSON(raw)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := dr.ApplyAll(deltas); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		var acc openai.ChatCompletionAccumulator
		for _, chunk := range sdkChunks(t, body) {
			acc.AddChunk(chunk)
		}
		if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
			continue // cut short: no finished reply to import
		}
		reply, err := json.Marshal(acc.Choices[0].Message.ToParam())
		if err != nil {
			t.Fatal(err)
		}
		imp, err := popenai.ParseChat(strings.NewReader(`[{"role":"user","content":"Go."},` + string(reply) + `]`))
		if err != nil {
			t.Fatalf("%s: import %s: %v", name, reply, err)
		}
		if len(imp.Messages) != 2 {
			t.Fatalf("%s: imported %d messages from %s, want the prompt and the reply", name, len(imp.Messages), reply)
		}
		compared++
		got, want := dr.Final(), imp.Messages[1].Message
		if got.Kind() != want.Kind() {
			t.Errorf("%s: streamed a %s, imported a %s", name, got.Kind(), want.Kind())
			continue
		}
		if g, w := partsOf(got), partsOf(want); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: streamed parts\n%q\nimported\n%q", name, g, w)
		}
		gotCalls, wantCalls := callsOf(got), callsOf(want)
		if len(gotCalls) != len(wantCalls) {
			t.Fatalf("%s: streamed %d calls, imported %d", name, len(gotCalls), len(wantCalls))
		}
		for i, w := range wantCalls {
			g := gotCalls[i]
			if g.ID != w.ID || g.Name != w.Name || *g.ArgumentsRaw != *w.ArgumentsRaw || g.PartIndex != nil || w.PartIndex != nil {
				t.Errorf("%s: call %d streamed %s %s %s at %v, imported %s %s %s at %v", name, i,
					g.ID, g.Name, *g.ArgumentsRaw, g.PartIndex, w.ID, w.Name, *w.ArgumentsRaw, w.PartIndex)
			}
		}
		if name == "text-between-calls.sse" {
			if p := partsOf(got); len(p) != 1 || p[0].Text != "First the config: Then the entry point." || len(gotCalls) != 2 {
				t.Errorf("%s: got parts %q and %d calls, want the content whole in one part and two calls", name, p, len(gotCalls))
			}
		}
	}
	if compared < 5 {
		t.Errorf("compared %d streams, want the complete ones of testdata/stream", compared)
	}
}

func partsOf(m parley.Message) []parley.Part {
	switch m := m.(type) {
	case *parley.TextMessage:
		return m.Parts
	case *parley.ToolRequestMessage:
		return m.Parts
	}
	return nil
}

func callsOf(m parley.Message) []parley.ToolCall {
	if r, ok := m.(*parley.ToolRequestMessage); ok {
		return r.ToolCalls
	}
	return nil
}
