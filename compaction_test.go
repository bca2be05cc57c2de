package parley_test

import (
	"testing"

	"github.com/parley-dev/parley"
)

// TestCompactionRules checks what a compaction covers and which transcript formats take
// it, and that an Anthropic block's readable summary becomes its text.
func TestCompactionRules(t *testing.T) {
	t.Parallel()
	meta := func(pos int) parley.MessageMeta { return parley.MessageMeta{Position: pos} }
	tests := []struct {
		name   string
		m      parley.CompactionMessage
		covers int
		valid  []parley.TranscriptFormat
	}{
		{"a summary covering all before it", parley.CompactionMessage{MessageMeta: meta(7), Body: parley.TextBody("so far")}, 6,
			[]parley.TranscriptFormat{parley.TranscriptOpenAIChat, parley.TranscriptOpenAIResponses, parley.TranscriptAnthropicMessages}},
		{"a summary covering some", parley.CompactionMessage{MessageMeta: meta(7), Body: parley.TextBody("so far"), CoversThrough: 3}, 3,
			[]parley.TranscriptFormat{parley.TranscriptOpenAIChat, parley.TranscriptOpenAIResponses, parley.TranscriptAnthropicMessages}},
		{"an empty summary suits nothing", parley.CompactionMessage{MessageMeta: meta(2)}, 1, nil},
		{"Anthropic's", parley.CompactionMessage{MessageMeta: meta(4), Provider: parley.CompactionAnthropic}, 3,
			[]parley.TranscriptFormat{parley.TranscriptAnthropicMessages}},
		{"OpenAI's", parley.CompactionMessage{MessageMeta: meta(4), Provider: parley.CompactionOpenAI}, 3,
			[]parley.TranscriptFormat{parley.TranscriptOpenAIResponses}},
	}
	for _, tc := range tests {
		if got := tc.m.Covers(); got != tc.covers {
			t.Errorf("%s: covers through %d, want %d", tc.name, got, tc.covers)
		}
		var valid []parley.TranscriptFormat
		for _, f := range parley.TranscriptFormats {
			if tc.m.ValidFor(f) {
				valid = append(valid, f)
			}
		}
		if len(valid) != len(tc.valid) {
			t.Errorf("%s: valid for %v, want %v", tc.name, valid, tc.valid)
			continue
		}
		for i := range valid {
			if valid[i] != tc.valid[i] {
				t.Errorf("%s: valid for %v, want %v", tc.name, valid, tc.valid)
			}
		}
	}

	block := &parley.CompactionMessage{Provider: parley.CompactionAnthropic,
		Data: parley.JSON(`{"type":"compaction","content":"We fixed the test.","encrypted_content":"E"}`)}
	if err := parley.Prepare(block, parley.DefaultLimits); err != nil || block.Text() != "We fixed the test." || block.Role != parley.RoleSupervisor {
		t.Errorf("an Anthropic block: got text %q, role %s, error %v", block.Text(), block.Role, err)
	}
	if err := parley.CheckCompactionCovers(&parley.CompactionMessage{MessageMeta: meta(3), CoversThrough: 3}); parley.ErrorCode(err) != parley.EINVALID {
		t.Errorf("covering itself: got %v", err)
	}
}

// TestImageLLMContent checks that recognizing an image does not change how it goes to
// an LLM, and when it goes as text.
func TestImageLLMContent(t *testing.T) {
	t.Parallel()
	ocr := parley.RecognitionOCR
	read := &parley.ImageRecognition{Status: parley.ProcessingCompleted, ModeUsed: &ocr, RecognizedText: "Invoice 4711"}
	for _, tc := range []struct {
		name    string
		m       parley.ImageMessage
		asImage bool
		text    string
	}{
		{"a user's image", parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Source: parley.ImageSource{Data: "AAAA"}}, true, ""},
		{"the same, read by OCR", parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Source: parley.ImageSource{Data: "AAAA"}, Recognition: read}, true, ""},
		{"a file path, read", parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Source: parley.ImageSource{FilePath: "a.png"}, Recognition: read}, false, "[Image, as recognized text]\nInvoice 4711"},
		{"the assistant's, not read", parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant}, Source: parley.ImageSource{URL: "https://x/a.png"}}, false, ""},
	} {
		asImage, text := tc.m.LLMContent()
		if asImage != tc.asImage || text != tc.text {
			t.Errorf("%s: got %v %q, want %v %q", tc.name, asImage, text, tc.asImage, tc.text)
		}
	}
}
