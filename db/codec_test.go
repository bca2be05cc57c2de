package db

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
)

// codecRows encodes a message of every variant, with text that needs escaping and
// optional fields set, as rows read back from the database would hold them.
func codecRows(t testing.TB) []messageRow {
	t.Helper()
	now := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)
	n, conf, mode := 4, 0.5, parley.RecognitionOCR
	tricky := "Look at **this** <b>&amp;</b> \"quoted\" \\ é 😀 \u2028"
	msgs := []parley.Message{
		&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody(tricky)},
		&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant}, Body: parley.Body{Parts: []parley.Part{
			{Kind: parley.PartThinking, Text: "hmm", Signature: "sig"}, {Kind: parley.PartText, Text: tricky}}}},
		&parley.ToolRequestMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleInvocation}, Body: parley.TextBody("Reading it."),
			ToolCalls: []parley.ToolCall{{ID: "call_1", Name: "read_file", Arguments: parley.JSON(`{"n": 1, "path": "main.go"}`), ApprovalStatus: parley.ApprovalApproved,
				Decision: &parley.ApprovalDecision{Status: parley.ApprovalApproved, DecidedBy: "me", Reason: tricky, DecidedAt: now}}}},
		&parley.ToolResultMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleResult}, Body: parley.TextBody(strings.Repeat("package main\n", 20)),
			ToolCallID: "call_1", ToolName: "read_file", Status: parley.ToolError, Output: parley.JSON(`{"ok": true, "lines": [1, 2.5]}`),
			Error: &parley.ToolErrorDetail{Message: "x", StackTrace: "y", Recoverable: true}, DurationMs: &n, ExecutedAt: &now, Truncated: true, OriginalSize: &n},
		&parley.FileReferenceMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleDocument}, Path: "src/main.go", StartLine: &n, EndLine: &n,
			Resolution: &parley.FileResolution{Status: "COMPLETED", Content: tricky, OriginalSize: &n, ResolvedAt: now}},
		&parley.MCPResourceMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleDocument}, Body: parley.TextBody("CREATE TABLE t (a int);"),
			ServerName: "docs", ResourceURI: "file:///x", MimeType: "application/sql", RetrievedAt: now, Truncated: true},
		&parley.SystemControlMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleSupervisor}, ControlKind: parley.ControlModeChange,
			From: "plan", To: "act", Params: parley.JSON(`{"a": null}`)},
		&parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Source: parley.ImageSource{Kind: parley.ImageURL, URL: "https://example.com/x.png"},
			RecognitionMode: parley.RecognitionAuto, Recognition: &parley.ImageRecognition{Status: "COMPLETED", ModeUsed: &mode, RecognizedText: tricky,
				Confidence: &conf, Language: "eng", ProcessedAt: now, Error: &parley.ProcessingError{Message: "m", Retryable: true}}},
		&parley.CompactionMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant}, Body: parley.TextBody(tricky),
			Provider: "anthropic", Data: parley.JSON(`{"type":"compaction","content":"x"}`), CoversThrough: 3},
		&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant}, Body: parley.Body{Parts: []parley.Part{
			{Kind: parley.PartRedactedThinking, Raw: parley.JSON(`{"type": "redacted_thinking", "data": "abc"}`)},
			{Kind: parley.PartText, Text: tricky, ItemID: "msg_1", Citations: parley.JSON(`[{"type": "char_location", "cited_text": "é\n"}]`)}}}},
	}
	var rows []messageRow
	for i, m := range msgs {
		r, err := encodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		r.ID, r.ConversationID, r.Position, r.CreatedAt, r.UpdatedAt = "a1607837-3c50-4a07-99b2-71380aeb50cd", "b1607837-3c50-4a07-99b2-71380aeb50cd", i+1, now, now
		rows = append(rows, r)
	}
	// A reply's provenance, as stored beside it.
	rows[1].Provenance = []byte(encodeProvenance(&parley.Provenance{Provider: "anthropic", Model: "claude", ResponseID: "msg_1",
		FinishReason: "end_turn", Usage: parley.Usage{InputTokens: 10, OutputTokens: 20, CachedInputTokens: 3}, TimeToFirstTokenMs: 120, DurationMs: 900}).(string))
	return rows
}

// TestDecodeAsTheStandardLibraryDoes: payloads are decoded with segmentio's encoding/json
// for speed; the messages must be those the standard library would decode.
func TestDecodeAsTheStandardLibraryDoes(t *testing.T) {
	rows := codecRows(t)
	decodeAll := func() []parley.Message {
		var out []parley.Message
		for i := range rows {
			m, err := decodeMessage(&rows[i], nil)
			if err != nil {
				t.Fatalf("row %d: %v", i, err)
			}
			out = append(out, m)
		}
		return out
	}
	got := decodeAll()
	fast := unmarshal
	unmarshal = json.Unmarshal
	want := decodeAll()
	unmarshal = fast
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s: got %+v, want %+v", want[i].Kind(), got[i], want[i])
		}
	}
}

// BenchmarkDecodeMessages decodes rows of every variant, as a history read does.
func BenchmarkDecodeMessages(b *testing.B) {
	benchDecode(b, codecRows(b))
}

// benchDecode decodes rows, all of them an operation.
func benchDecode(b *testing.B, rows []messageRow) {
	b.ReportAllocs()
	for b.Loop() {
		for i := range rows {
			if _, err := decodeMessage(&rows[i], nil); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// exportRows are the rows of one exchange of the export benchmarks' sessions: a prompt,
// a reply with a tool call, its result of about 2 kB of test output (tabs and newlines
// to unescape) and an answer.
func exportRows(t testing.TB) []messageRow {
	t.Helper()
	output := strings.Repeat("ok  \tgithub.com/acme/app/internal/pkg\t0.012s\n", 45)
	msgs := []parley.Message{
		&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}, Body: parley.TextBody("Step 7: run the tests and fix what fails.")},
		&parley.ToolRequestMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleInvocation}, Body: parley.TextBody("Running the tests in both modules."),
			ToolCalls: []parley.ToolCall{{ID: "toolu_7_a", Name: "Bash", Arguments: parley.JSON(`{"command": "go test ./..."}`), ApprovalStatus: parley.ApprovalApproved, Imported: true}}},
		&parley.ToolResultMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleResult}, Body: parley.TextBody(output),
			ToolCallID: "toolu_7_a", ToolName: "Bash", Status: parley.ToolSuccess},
		&parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant}, Body: parley.TextBody("All green.")},
	}
	rows := make([]messageRow, len(msgs))
	for i, m := range msgs {
		r, err := encodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		r.ID, r.ConversationID, r.Position = "a1607837-3c50-4a07-99b2-71380aeb50cd", "b1607837-3c50-4a07-99b2-71380aeb50cd", i+1
		rows[i] = r
	}
	return rows
}

// BenchmarkDecodeExportRows decodes the rows of exportRows, as a transcript's read does.
func BenchmarkDecodeExportRows(b *testing.B) {
	benchDecode(b, exportRows(b))
}
