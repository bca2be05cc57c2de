package interop_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop"
)

// inputs are the sample histories of each import format, kept with their importer.
var inputs = []struct {
	format parley.ImportFormat
	glob   string
}{
	{parley.ImportClaudeCode, "claudecode/testdata/*.jsonl"},
	{parley.ImportOpenAIChat, "openai/testdata/*.json"},
	{parley.ImportAnthropicMessages, "anthropic/testdata/*.json"},
	{parley.ImportParleyJSON, "parleyjson/testdata/*.json"},
}

// parseFile imports a sample without a database: parsed, then prepared as the store
// prepares it.
func parseFile(t *testing.T, format parley.ImportFormat, path string) *parley.Import {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imp, err := interop.Parse(format, f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	for _, im := range imp.Messages {
		if err := parley.Prepare(im.Message, parley.DefaultLimits); err != nil {
			t.Fatalf("%s %s: %v", path, im.Origin, err)
		}
	}
	return imp
}

// TestImportGolden pins what each sample history imports as: its messages in Parley's
// export format, and the report (title, system prompt, skipped records, warnings).
func TestImportGolden(t *testing.T) {
	t.Parallel()
	for _, in := range inputs {
		paths, _ := filepath.Glob(in.glob)
		if len(paths) == 0 {
			t.Fatalf("no samples match %s", in.glob)
		}
		for _, path := range paths {
			name := strings.ToLower(string(in.format)) + "/" + strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				imp := parseFile(t, in.format, path)
				msgs := make([]parley.Message, len(imp.Messages))
				origins := make([]string, len(imp.Messages))
				for i, im := range imp.Messages {
					msgs[i], origins[i] = im.Message, im.Origin
				}
				tr, err := interop.Build(nil, msgs, parley.TranscriptParleyJSON, parley.TranscriptOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var doc struct{ Messages []json.RawMessage }
				if err := json.Unmarshal(tr.Body, &doc); err != nil {
					t.Fatal(err)
				}
				record := map[string]any{
					"title": imp.Title, "systemPrompt": imp.SystemPrompt, "skipped": imp.Skipped,
					"warnings": imp.Warnings, "origins": origins, "messages": doc.Messages,
				}
				// Formats that record a tree: each message's parent ("ROOT" for a
				// root, "" to follow the message before it).
				parents := make([]string, len(imp.Messages))
				tree := false
				for i, im := range imp.Messages {
					parents[i] = im.Parent
					if im.Root {
						parents[i] = "ROOT"
					}
					tree = tree || parents[i] != ""
				}
				if tree {
					record["parents"] = parents
				}
				out, err := json.Marshal(record)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, "import/"+name+".json", indent(t, out))
			})
		}
	}
}

// stored gives imported messages what the store gives them: ids, positions, times
// (fixed here so that golden files are stable).
func stored(imp *parley.Import) (*parley.Conversation, []parley.Message) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	conv := &parley.Conversation{ID: "conv_golden", Title: imp.Title, CreatedAt: base, UpdatedAt: base}
	names := make(map[string]string)
	msgs := make([]parley.Message, len(imp.Messages))
	for i, im := range imp.Messages {
		m := im.Message
		meta := m.Meta()
		meta.ID = fmt.Sprintf("msg_%03d", i+1)
		meta.ConversationID = conv.ID
		meta.Position = i + 1
		if meta.CreatedAt.IsZero() {
			meta.CreatedAt = base.Add(time.Duration(i) * time.Second)
		}
		meta.UpdatedAt = meta.CreatedAt
		switch m := m.(type) {
		case *parley.ToolRequestMessage:
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Name
			}
		case *parley.ToolResultMessage:
			m.ToolName = names[m.ToolCallID]
		}
		msgs[i] = m
	}
	return conv, msgs
}

var exportFiles = map[parley.TranscriptFormat]string{
	parley.TranscriptOpenAIChat:        "openai_chat.json",
	parley.TranscriptOpenAIResponses:   "openai_responses.json",
	parley.TranscriptAnthropicMessages: "anthropic_messages.json",
	parley.TranscriptMarkdown:          "md",
	parley.TranscriptParleyJSON:        "parley.json",
}

// TestExportGolden pins every transcript format for the sample histories, with the
// report of each: what was left out, repaired or noted.
func TestExportGolden(t *testing.T) {
	t.Parallel()
	samples := []struct {
		name   string
		format parley.ImportFormat
		path   string
	}{
		// Every variant, SUPERVISOR text, a denied call, an unknown type.
		{"conversation", parley.ImportParleyJSON, "parleyjson/testdata/conversation.json"},
		// Thinking, images in tool results, errors, and an unanswered last call.
		{"claude-code-session", parley.ImportClaudeCode, "claudecode/testdata/session.jsonl"},
	}
	for _, s := range samples {
		for _, format := range parley.TranscriptFormats {
			t.Run(s.name+"/"+string(format), func(t *testing.T) {
				t.Parallel()
				conv, msgs := stored(parseFile(t, s.format, s.path))
				opts := parley.TranscriptOptions{}
				if format.ForLLM() {
					opts = parley.TranscriptOptions{System: "Be concise.", Repair: true}
				}
				tr, err := interop.Build(conv, msgs, format, opts)
				if err != nil {
					t.Fatal(err)
				}
				file := "export/" + s.name + "." + exportFiles[format]
				if format == parley.TranscriptMarkdown {
					var text string
					if err := json.Unmarshal(tr.Body, &text); err != nil {
						t.Fatal(err)
					}
					golden(t, file, []byte(text))
				} else {
					golden(t, file, indent(t, tr.Body))
				}
				rep, err := json.Marshal(tr.Report)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, "export/"+s.name+"."+strings.ToLower(string(format))+".report.json", indent(t, rep))
			})
		}
	}
}
