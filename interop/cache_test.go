package interop_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go"
	openaisdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/internal/textimage"
)

// llmFormats are the transcript formats for an LLM.
var llmFormats = []string{"OPENAI_CHAT", "OPENAI_RESPONSES", "ANTHROPIC_MESSAGES"}

// flatten splits an export into what a provider's prompt cache matches, in order, each
// as canonical bytes: the items of an OpenAI array; for Anthropic, the system blocks,
// then every block of every message with its role (the API merges consecutive turns of
// one role, so a turn that gains blocks keeps its prefix). cache_control markers are left
// out: they say where to cache, not what is cached.
func flatten(t *testing.T, format string, body []byte) []string {
	t.Helper()
	canon := func(raw json.RawMessage) string {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: an item is not an object: %s", format, raw)
		}
		delete(v, "cache_control")
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var out []string
	if format != "ANTHROPIC_MESSAGES" {
		var items []json.RawMessage
		if err := json.Unmarshal(body, &items); err != nil {
			t.Fatalf("%s: %v\n%s", format, err, body)
		}
		for _, it := range items {
			out = append(out, canon(it))
		}
		return out
	}
	var doc struct {
		System   []json.RawMessage
		Messages []struct {
			Role    string
			Content []json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", format, err, body)
	}
	for _, b := range doc.System {
		out = append(out, "system:"+canon(b))
	}
	for _, m := range doc.Messages {
		for _, b := range m.Content {
			out = append(out, m.Role+":"+canon(b))
		}
	}
	return out
}

// prefixChanged says how next fails to continue prev: "" when everything prev holds
// starts next, in the units flatten makes, and, for the OpenAI arrays, in bytes too.
func prefixChanged(t *testing.T, format string, prev, next []byte) string {
	t.Helper()
	p, n := flatten(t, format, prev), flatten(t, format, next)
	for i := range p {
		if i >= len(n) || p[i] != n[i] {
			got := "(nothing)"
			if i < len(n) {
				got = n[i]
			}
			return fmt.Sprintf("item %d was %s, is now %s", i, p[i], got)
		}
	}
	if format != "ANTHROPIC_MESSAGES" && len(p) > 0 && !bytes.HasPrefix(next, prev[:len(prev)-1]) {
		return "the bytes of the array differ"
	}
	return ""
}

// decodeWithSDK checks that the official SDK of the format's provider reads the export
// into its request types.
func decodeWithSDK(t *testing.T, format string, body []byte) {
	t.Helper()
	var err error
	switch format {
	case "OPENAI_CHAT":
		var v []openaisdk.ChatCompletionMessageParamUnion
		err = json.Unmarshal(body, &v)
	case "OPENAI_RESPONSES":
		var v responses.ResponseInputParam
		err = json.Unmarshal(body, &v)
	case "ANTHROPIC_MESSAGES":
		var v struct {
			System   []anthropicsdk.TextBlockParam `json:"system"`
			Messages []anthropicsdk.MessageParam   `json:"messages"`
		}
		err = json.Unmarshal(body, &v)
	}
	if err != nil {
		t.Fatalf("%s: the SDK cannot read the export: %v\n%s", format, err, body)
	}
}

// TestExportsOnlyGrow appends turns to a conversation one at a time and exports it in
// every LLM format after each: every export starts with the whole of the one before
// (byte for byte in OpenAI's arrays, block for block in Anthropic's messages), a
// SUPERVISOR instruction in the middle included; recognizing an image already sent
// changes nothing; and an incremental export from the earlier export's endCursor is
// exactly what the later one added.
func TestExportsOnlyGrow(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "caches")
	png := base64.StdEncoding.EncodeToString(textimage.PNG("Invoice number 4711"))
	var imageID string
	add := func(input map[string]any) func() {
		return func() { srv.AddMessage(t, conv, input) }
	}
	steps := []struct {
		name string
		do   func()
		same bool // the history did not grow: the export must not change at all
	}{
		{name: "instructions", do: add(testserver.Text("SUPERVISOR", "Answer briefly."))},
		{name: "a question", do: add(testserver.Text("USER", "What is in this invoice?"))},
		{name: "an image", do: func() {
			imageID = srv.AddMessage(t, conv, map[string]any{"image": map[string]any{"base64": png, "mediaType": "image/png"}}).ID
		}},
		{name: "the answer", do: add(testserver.Text("ASSISTANT", "It is invoice 4711."))},
		{name: "the image recognized", same: true, do: func() {
			srv.MustDo(t, `mutation($m: ID!) { recognizeImage(messageId: $m, mode: OCR) { id } }`, map[string]any{"m": imageID}, nil)
		}},
		{name: "instructions mid-conversation", do: add(testserver.Text("SUPERVISOR", "From now on, answer in French."))},
		{name: "another question", do: add(testserver.Text("USER", "And the total?"))},
		{name: "a tool call and its result", do: func() {
			srv.AddMessage(t, conv, map[string]any{"toolRequest": map[string]any{"content": "Let me look.",
				"toolCalls": []any{map[string]any{"id": "call_1", "name": "read", "arguments": map[string]any{"path": "invoice.txt"}}}}})
			srv.AddMessage(t, conv, map[string]any{"toolResult": map[string]any{"toolCallId": "call_1", "status": "SUCCESS", "content": "Total due 99 EUR"}})
		}},
		{name: "the second answer", do: add(testserver.Text("ASSISTANT", "Le total est de 99 EUR."))},
		{name: "thanks", do: add(testserver.Text("USER", "Merci."))},
		{name: "welcome", do: add(testserver.Text("ASSISTANT", "De rien."))},
	}
	opts := func(format string) transcriptOpts {
		o := transcriptOpts{system: "You are terse."}
		if format == "ANTHROPIC_MESSAGES" {
			o.cacheBreakpoints = 2
		}
		return o
	}
	prev := map[string][]byte{}
	prevEnd := map[string]string{}
	for _, step := range steps {
		step.do()
		for _, format := range llmFormats {
			out, rep := transcript(t, srv, conv, format, opts(format))
			decodeWithSDK(t, format, out)
			if p := prev[format]; p != nil {
				if step.same && !bytes.Equal(p, out) {
					t.Errorf("%s after %s: the export changed:\n%s\nwas\n%s", format, step.name, out, p)
				}
				if why := prefixChanged(t, format, p, out); why != "" {
					t.Errorf("%s after %s: the earlier export is not a prefix: %s", format, step.name, why)
				}
				// What follows the earlier export's end is what this export added.
				o := opts(format)
				o.after = prevEnd[format]
				inc, _ := transcript(t, srv, conv, format, o)
				decodeWithSDK(t, format, inc)
				joined := append(flatten(t, format, p), flatten(t, format, inc)...)
				if full := flatten(t, format, out); !slices.Equal(joined, full) {
					t.Errorf("%s after %s: the earlier export and the increment make\n%q\nwant\n%q", format, step.name, joined, full)
				}
			}
			prev[format] = out
			if rep.EndCursor == nil {
				t.Fatalf("%s after %s: no endCursor", format, step.name)
			}
			prevEnd[format] = *rep.EndCursor
		}
	}

	// The instruction given mid-conversation is where it was given, not in system.
	var anth struct {
		System []struct {
			Text         string
			CacheControl *struct{ Type string } `json:"cache_control"`
		}
		Messages []struct {
			Role    string
			Content []map[string]any
		}
	}
	if err := json.Unmarshal(prev["ANTHROPIC_MESSAGES"], &anth); err != nil {
		t.Fatal(err)
	}
	var system []string
	for _, b := range anth.System {
		system = append(system, b.Text)
	}
	if want := []string{"You are terse.", "Answer briefly."}; !slices.Equal(system, want) {
		t.Errorf("system: got %q, want %q", system, want)
	}
	var shape []string
	marks := 0
	for _, m := range anth.Messages {
		for _, b := range m.Content {
			s := m.Role + ":" + b["type"].(string)
			if text, _ := b["text"].(string); text != "" {
				s += "(" + text + ")"
			}
			if b["cache_control"] != nil {
				marks++
			}
			shape = append(shape, s)
		}
	}
	want := []string{"user:text(What is in this invoice?)", "user:image", "assistant:text(It is invoice 4711.)",
		"user:text(From now on, answer in French.)", "user:text(And the total?)", "assistant:text(Let me look.)",
		"assistant:tool_use", "user:tool_result", "assistant:text(Le total est de 99 EUR.)", "user:text(Merci.)",
		"assistant:text(De rien.)"}
	if !slices.Equal(shape, want) {
		t.Errorf("blocks:\ngot  %q\nwant %q", shape, want)
	}
	// Two breakpoints: the end of the transcript and the end of system.
	last := anth.Messages[len(anth.Messages)-1].Content
	if last[len(last)-1]["cache_control"] == nil || anth.System[1].CacheControl == nil || anth.System[1].CacheControl.Type != "ephemeral" || marks != 1 {
		t.Errorf("cache_control: want it on the last block and the end of system only; got %s", prev["ANTHROPIC_MESSAGES"])
	}
}

// TestTranscriptImages exports a recognized image each way images may go: as sent (the
// default), as its recognized text, and by whether the target model sees images.
func TestTranscriptImages(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "images")
	png := base64.StdEncoding.EncodeToString(textimage.PNG("Invoice number 4711"))
	srv.AddMessage(t, conv, testserver.Text("USER", "Read this."))
	img := srv.AddMessage(t, conv, map[string]any{"image": map[string]any{"base64": png, "mediaType": "image/png"}})
	srv.MustDo(t, `mutation($m: ID!) { recognizeImage(messageId: $m, mode: OCR) { id } }`, map[string]any{"m": img.ID}, nil)
	for _, tc := range []struct {
		name, images, model string
		asText              bool
	}{
		{name: "default", asText: false},
		{name: "as sent", images: "AS_SENT", asText: false},
		{name: "as text", images: "AS_TEXT", asText: true},
		{name: "a model that sees", images: "FOR_MODEL", model: "gpt-4o", asText: false},
		{name: "a model that does not", images: "FOR_MODEL", model: "gpt-3.5-turbo", asText: true},
	} {
		for _, format := range llmFormats {
			out, rep := transcript(t, srv, conv, format, transcriptOpts{images: tc.images, model: tc.model})
			decodeWithSDK(t, format, out)
			hasText := strings.Contains(string(out), "[Image, as recognized text]") && strings.Contains(string(out), "4711")
			hasImage := strings.Contains(string(out), png)
			if hasText != tc.asText || hasImage == tc.asText {
				t.Errorf("%s, %s: got text %v, image %v; want the image as text: %v\n%s", tc.name, format, hasText, hasImage, tc.asText, out)
			}
			if noted := slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, "image sent as its recognized text") }); noted != tc.asText {
				t.Errorf("%s, %s: notes %q", tc.name, format, rep.Notes)
			}
		}
	}
	for _, tc := range []struct {
		opts transcriptOpts
		want string
	}{
		{transcriptOpts{images: "FOR_MODEL"}, "model: images: FOR_MODEL needs the model"},
		{transcriptOpts{images: "FOR_MODEL", model: "my-own-model"}, `model: "my-own-model" is not in the table of vision models`},
		{transcriptOpts{cacheBreakpoints: 5}, "cacheBreakpoints: 5 is not between 0 and 4"},
	} {
		r := srv.Do(t, transcriptOnlyQuery, transcriptVars(conv, "ANTHROPIC_MESSAGES", tc.opts))
		if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, tc.want) {
			t.Errorf("%+v: got %s %q, want %q", tc.opts, code, r.Errors[0].Message, tc.want)
		}
	}
	r := srv.Do(t, transcriptOnlyQuery, transcriptVars(conv, "OPENAI_CHAT", transcriptOpts{cacheBreakpoints: 1}))
	if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "cacheBreakpoints applies to ANTHROPIC_MESSAGES") {
		t.Errorf("cacheBreakpoints for OpenAI: got %s %q", code, r.Errors[0].Message)
	}
	r = srv.Do(t, transcriptOnlyQuery, transcriptVars(conv, "OPENAI_CHAT", transcriptOpts{after: "not-a-cursor"}))
	if code := r.ErrorCode(t); code != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "after") {
		t.Errorf("a bad cursor: got %s %q", code, r.Errors[0].Message)
	}
}
