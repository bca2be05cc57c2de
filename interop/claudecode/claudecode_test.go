package claudecode_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/claudecode"
)

func lines(t *testing.T, records ...map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, r := range records {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
		b.WriteString("\n")
	}
	return b.String()
}

func user(uuid string, content any, extra ...any) map[string]any {
	r := map[string]any{"type": "user", "uuid": uuid, "timestamp": "2026-02-10T10:00:00Z", "message": map[string]any{"role": "user", "content": content}}
	for i := 0; i+1 < len(extra); i += 2 {
		r[extra[i].(string)] = extra[i+1]
	}
	return r
}

func assistant(uuid, id string, blocks ...map[string]any) map[string]any {
	return map[string]any{"type": "assistant", "uuid": uuid, "timestamp": "2026-02-10T10:00:01Z",
		"message": map[string]any{"id": id, "role": "assistant", "model": "m", "content": blocks}}
}

func parse(t *testing.T, data string) *parley.Import {
	t.Helper()
	imp, err := claudecode.Parse(strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return imp
}

// A screenshot makes a line of more than a megabyte; it is read whole.
func TestLongLine(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 900, 900))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.IntN(256)) // noise does not compress
	}
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	data := base64.StdEncoding.EncodeToString(jpg.Bytes())
	src := lines(t, user("u1", []any{
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": data}},
		map[string]any{"type": "text", "text": "what is this?"},
	}))
	if len(src) < 1<<20 {
		t.Fatalf("the line is only %d bytes", len(src))
	}
	imp := parse(t, src)
	if len(imp.Messages) != 2 {
		t.Fatalf("got %d messages, want the image and the text", len(imp.Messages))
	}
	img2 := imp.Messages[0].Message.(*parley.ImageMessage)
	// The file said PNG; the bytes are JPEG: the media type follows the bytes, and says so.
	if img2.Source.MediaType != "image/jpeg" || len(img2.Source.Data) != len(data) || len(imp.Warnings) != 1 {
		t.Errorf("got media type %s, %d bytes, warnings %q", img2.Source.MediaType, len(img2.Source.Data), imp.Warnings)
	}
	if err := parley.Prepare(img2, parley.DefaultLimits); err != nil {
		t.Errorf("the store would refuse it: %v", err)
	}
}

// A compaction summary is a compaction covering what came before it, whether the file
// starts with it or not; the turns before it are kept.
func TestCompactSummary(t *testing.T) {
	const summary = "This session is being continued from a previous conversation. Summary: ..."
	for _, tc := range []struct {
		name   string
		before []map[string]any
	}{
		{"first", nil},
		{"after turns", []map[string]any{user("u0", "hello"), assistant("a0", "msg_0", map[string]any{"type": "text", "text": "hi"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := append(tc.before,
				map[string]any{"type": "system", "subtype": "compact_boundary", "uuid": "s1"},
				user("u1", summary, "isCompactSummary", true),
				user("u2", "go on"))
			imp := parse(t, lines(t, recs...))
			n := len(tc.before)
			if len(imp.Messages) != n+2 {
				t.Fatalf("got %d messages, want %d", len(imp.Messages), n+2)
			}
			c, ok := imp.Messages[n].Message.(*parley.CompactionMessage)
			if !ok || c.Text() != summary || c.Provider != "" || c.CoversThrough != 0 || len(imp.Warnings) != 0 {
				t.Errorf("got %#v, warnings %q; want a compaction of the summary covering everything before it", imp.Messages[n].Message, imp.Warnings)
			}
			if err := parley.Prepare(c, parley.DefaultLimits); err != nil {
				t.Errorf("the store would refuse it: %v", err)
			}
		})
	}
}

func TestTitleAndIDs(t *testing.T) {
	imp := parse(t, "\ufeff"+strings.ReplaceAll(lines(t,
		map[string]any{"type": "summary", "summary": "Another session's title", "leafUuid": "elsewhere"},
		map[string]any{"type": "summary", "summary": "This session", "leafUuid": "u1"},
		map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "no uuid here"}},
		user("u1", "hello"),
		assistant("a1", "msg_1", map[string]any{"type": "thinking", "thinking": "hmm", "signature": "s"}),
	), "\n", "\r\n"))
	if imp.Title != "This session" {
		t.Errorf("title: got %q, want the summary of a record in this file", imp.Title)
	}
	if got := imp.Messages[0].Message.Meta().SourceID; !strings.HasPrefix(got, "sha256:") {
		t.Errorf("a record without a uuid: got source id %q, want a digest", got)
	}
	if len(imp.Messages) != 2 {
		t.Errorf("got %d messages; the reply with only thinking should be skipped", len(imp.Messages))
	}
	var thinkingOnly int
	for _, s := range imp.Skipped {
		if strings.Contains(s.Reason, "only thinking") {
			thinkingOnly = s.Count
		}
	}
	if thinkingOnly != 1 {
		t.Errorf("skipped: got %+v", imp.Skipped)
	}
	custom := parse(t, lines(t,
		map[string]any{"type": "summary", "summary": "Summary", "leafUuid": "u1"},
		map[string]any{"type": "custom-title", "customTitle": "Named by the user"},
		user("u1", "hello"),
	))
	if custom.Title != "Named by the user" {
		t.Errorf("title: got %q, want the custom title", custom.Title)
	}
}

// A reply's lines carry its model and usage: the reply keeps them as its provenance, the
// last line's usage (Claude Code repeats it, growing, on each line of a reply).
func TestReplyProvenance(t *testing.T) {
	t.Parallel()
	line := func(uuid, block string, out int) string {
		return `{"type":"assistant","uuid":"` + uuid + `","timestamp":"2026-02-10T10:00:01Z","message":{"id":"msg_1","role":"assistant",` +
			`"model":"claude-opus-4","stop_reason":"end_turn","content":[{"type":"text","text":"` + block + `"}],` +
			`"usage":{"input_tokens":12,"output_tokens":` + strconv.Itoa(out) + `,"cache_read_input_tokens":1000,"cache_creation_input_tokens":30}}}` + "\n"
	}
	imp := parse(t, `{"type":"user","uuid":"u1","timestamp":"2026-02-10T10:00:00Z","message":{"role":"user","content":"hi"}}`+"\n"+
		line("a1", "one", 5)+line("a2", "two", 9))
	if len(imp.Messages) != 2 {
		t.Fatalf("got %d messages, want 2", len(imp.Messages))
	}
	got := imp.Messages[1].Message.Meta().Live.Provenance
	want := &parley.Provenance{Provider: "anthropic", Model: "claude-opus-4", ResponseID: "msg_1", FinishReason: "end_turn",
		Usage: parley.Usage{InputTokens: 12, OutputTokens: 9, CachedInputTokens: 1000, CacheCreationInputTokens: 30}}
	if got == nil || *got != *want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if p := imp.Messages[0].Message.Meta().Live.Provenance; p != nil {
		t.Errorf("the user's message: got provenance %+v, want none", p)
	}
}

// TestThinkingKept: signed thinking whose display was omitted (empty text) and redacted
// thinking are kept in order, as are calls made between texts and arguments as given.
func TestThinkingKept(t *testing.T) {
	t.Parallel()
	imp := parse(t, lines(t,
		user("u1", "Go."),
		assistant("a1", "msg_1",
			map[string]any{"type": "thinking", "thinking": "", "signature": "sig-1"},
			map[string]any{"type": "redacted_thinking", "data": "ENC-1"},
			map[string]any{"type": "text", "text": "First."},
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": json.RawMessage(`{"z": 1, "a": 1e2}`)},
			map[string]any{"type": "text", "text": "Then."},
			map[string]any{"type": "tool_use", "id": "toolu_2", "name": "Read", "input": json.RawMessage(`[1]`)},
		),
	))
	if len(imp.Messages) != 2 {
		t.Fatalf("got %d messages, want 2", len(imp.Messages))
	}
	req, ok := imp.Messages[1].Message.(*parley.ToolRequestMessage)
	if !ok {
		t.Fatalf("got %T, want a tool request", imp.Messages[1].Message)
	}
	want := []parley.Part{{Kind: parley.PartThinking, Signature: "sig-1"}, {Kind: parley.PartRedactedThinking, Signature: "ENC-1"},
		{Kind: parley.PartText, Text: "First."}, {Kind: parley.PartText, Text: "Then."}}
	if len(req.Parts) != len(want) {
		t.Fatalf("parts: got %+v, want %+v", req.Parts, want)
	}
	for i := range want {
		if !reflect.DeepEqual(req.Parts[i], want[i]) {
			t.Errorf("part %d: got %+v, want %+v", i, req.Parts[i], want[i])
		}
	}
	var got []string
	for _, c := range req.ToolCalls {
		got = append(got, strconv.Itoa(*c.PartIndex)+" "+*c.ArgumentsRaw)
	}
	if g, w := strings.Join(got, " | "), `3 {"z":1,"a":1e2} | 4 [1]`; g != w {
		t.Errorf("calls: got %s, want %s", g, w)
	}
	if err := parley.Prepare(req, parley.Limits{}); err != nil {
		t.Fatal(err)
	}
	if !req.ToolCalls[1].ArgumentsInvalid || req.ToolCalls[0].ArgumentsInvalid {
		t.Errorf("invalid flags: got %v %v, want false true", req.ToolCalls[0].ArgumentsInvalid, req.ToolCalls[1].ArgumentsInvalid)
	}
}
