package interop_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/testserver"
)

// update rewrites the golden files with what the code produces now:
//
//	go test ./interop/ -run Golden -update
var update = flag.Bool("update", false, "rewrite golden files")

func TestMain(m *testing.M) { pgtest.Main(m) }

// golden compares got with testdata/golden/name, or writes it there with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended):\n%s", path, diff(string(want), string(got)))
	}
}

// diff shows the first lines where want and got part.
func diff(want, got string) string {
	wl, gl := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			return "line " + itoa(i+1) + ":\n  want: " + string(w) + "\n  got:  " + string(g)
		}
	}
	return "(no line differs)"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func indent(t *testing.T, raw []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		t.Fatalf("indent %s: %v", raw, err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameJSON reports whether a and b encode the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// report is an import report as the API gives it.
type report struct {
	Conversation struct {
		ID           string
		Title        string
		MessageCount int
	}
	Created        bool
	Added          int
	AddedByVariant []struct {
		Variant string
		Count   int
	}
	AlreadyPresent int
	Skipped        []struct {
		Reason string
		Count  int
		Where  []string
	}
	Warnings     []string
	SystemPrompt *string
}

func (r report) variants() map[string]int {
	out := make(map[string]int)
	for _, v := range r.AddedByVariant {
		out[v.Variant] = v.Count
	}
	return out
}

func (r report) skipped(reason string) int {
	for _, s := range r.Skipped {
		if s.Reason == reason {
			return s.Count
		}
	}
	return 0
}

const importMutation = `mutation($f: ImportFormat!, $d: String!, $c: ID, $t: String) {
	importConversation(format: $f, data: $d, conversationId: $c, title: $t) {
		conversation { id title messageCount }
		created added addedByVariant { variant count } alreadyPresent
		skipped { reason count where } warnings systemPrompt
	}
}`

// importData imports data and returns the report, failing t on errors.
func importData(t *testing.T, srv *testserver.Server, format, data, conv, title string) report {
	t.Helper()
	var out struct{ ImportConversation report }
	srv.MustDo(t, importMutation, importVars(format, data, conv, title), &out)
	return out.ImportConversation
}

func importVars(format, data, conv, title string) map[string]any {
	vars := map[string]any{"f": format, "d": data}
	if conv != "" {
		vars["c"] = conv
	}
	if title != "" {
		vars["t"] = title
	}
	return vars
}

const transcriptQuery = `query($id: ID!, $f: TranscriptFormat!, $s: String, $m: Int, $r: Boolean,
	$i: TranscriptImages, $mo: String, $cb: Int, $a: String) {
	conversation(id: $id) {
		transcript(format: $f, system: $s, maxTokens: $m, repair: $r, images: $i, model: $mo, cacheBreakpoints: $cb, after: $a)
		transcriptReport(format: $f, system: $s, maxTokens: $m, repair: $r, images: $i, model: $mo, cacheBreakpoints: $cb, after: $a) {
			format tokenCounting estimatedTokens maxTokens
			dropped { messageId position label reason } repairs notes endCursor cutPosition
		}
	}
}`

// transcriptOnlyQuery asks for the transcript alone, for tests of its errors.
const transcriptOnlyQuery = `query($id: ID!, $f: TranscriptFormat!, $s: String, $m: Int, $r: Boolean,
	$i: TranscriptImages, $mo: String, $cb: Int, $a: String) {
	conversation(id: $id) { transcript(format: $f, system: $s, maxTokens: $m, repair: $r, images: $i, model: $mo, cacheBreakpoints: $cb, after: $a) }
}`

// transcriptReport is a transcript report as the API gives it.
type transcriptReport struct {
	Format          string
	TokenCounting   string
	EstimatedTokens int
	MaxTokens       *int
	Dropped         []struct {
		MessageID string
		Position  int
		Label     string
		Reason    string
	}
	Repairs     []string
	Notes       []string
	EndCursor   *string
	CutPosition *int
}

type transcriptOpts struct {
	system           string
	maxTokens        int
	repair           bool
	images, model    string
	cacheBreakpoints int
	after            string
}

func transcriptVars(conv, format string, o transcriptOpts) map[string]any {
	vars := map[string]any{"id": conv, "f": format}
	if o.system != "" {
		vars["s"] = o.system
	}
	if o.maxTokens != 0 {
		vars["m"] = o.maxTokens
	}
	if o.repair {
		vars["r"] = true
	}
	if o.images != "" {
		vars["i"] = o.images
	}
	if o.model != "" {
		vars["mo"] = o.model
	}
	if o.cacheBreakpoints != 0 {
		vars["cb"] = o.cacheBreakpoints
	}
	if o.after != "" {
		vars["a"] = o.after
	}
	return vars
}

// transcript exports a conversation, failing t on errors.
func transcript(t *testing.T, srv *testserver.Server, conv, format string, o transcriptOpts) (json.RawMessage, transcriptReport) {
	t.Helper()
	var out struct {
		Conversation struct {
			Transcript       json.RawMessage
			TranscriptReport transcriptReport
		}
	}
	srv.MustDo(t, transcriptQuery, transcriptVars(conv, format, o), &out)
	return out.Conversation.Transcript, out.Conversation.TranscriptReport
}

// messageCount is how many messages a conversation has.
func messageCount(t *testing.T, srv *testserver.Server, conv string) int {
	t.Helper()
	var out struct{ Conversation struct{ MessageCount int } }
	srv.MustDo(t, `query($id: ID!) { conversation(id: $id) { messageCount } }`, map[string]any{"id": conv}, &out)
	return out.Conversation.MessageCount
}

// conversationCount is how many conversations there are.
func conversationCount(t *testing.T, srv *testserver.Server) int {
	t.Helper()
	var out struct{ Conversations struct{ TotalCount int } }
	srv.MustDo(t, `{ conversations { totalCount } }`, nil, &out)
	return out.Conversations.TotalCount
}
