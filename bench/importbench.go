package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/sessiongen"
)

// writeClaudeCodeSession writes the generated Claude Code session of n messages
// (internal/sessiongen) to path.
func writeClaudeCodeSession(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := sessiongen.Write(f, n); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// measureImport generates a Claude Code session of n messages and times `parley import`
// of it into a new conversation, runs times; it returns the figures for the report.
func (e *env) measureImport(ctx context.Context, cfg *config, n, runs int, logf func(string, ...any)) ([]extraFigure, error) {
	path := filepath.Join(e.work, "session.jsonl")
	if err := writeClaudeCodeSession(path, n); err != nil {
		return nil, fmt.Errorf("write the Claude Code session: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	// A database of its own, so that the serving Parley does not hear (by NOTIFY) of
	// every message imported, which would take CPU from the import.
	if err := createDatabase(ctx, e.cluster.DSN("postgres"), "parley_import"); err != nil {
		return nil, err
	}
	dsn := e.cluster.DSN("parley_import")
	if out, err := exec.CommandContext(ctx, cfg.parleyBin, "migrate", "--database-url", dsn).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("parley migrate: %w: %s", err, out)
	}
	var secs []float64
	for r := range runs {
		argv := []string{cfg.parleyBin, "import", "--format", "CLAUDE_CODE_JSONL", "--database-url", dsn,
			"--json", "--title", fmt.Sprintf("import %d", r+1), path}
		if r == 0 {
			e.commands = append(e.commands, redactDSN(strings.Join(argv, " "), dsn)+"   # a generated session of "+strconv.Itoa(n)+" messages")
		}
		logf("importing a %d-message Claude Code session (%.0f MiB), run %d of %d", n, float64(fi.Size())/(1<<20), r+1, runs)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		t0 := time.Now()
		out, err := cmd.Output()
		elapsed := time.Since(t0)
		if err != nil {
			msg := ""
			if ee, ok := err.(*exec.ExitError); ok {
				msg = string(ee.Stderr)
			}
			return nil, fmt.Errorf("parley import: %w: %.2000s", err, msg)
		}
		got, err := importedMessages(out)
		if err != nil {
			return nil, err
		}
		if got != n {
			return nil, fmt.Errorf("parley import made %d messages of the %d in the session: %.1000s", got, n, out)
		}
		secs = append(secs, elapsed.Seconds())
		logf("  %.1f s, %.0f messages/s", elapsed.Seconds(), float64(n)/elapsed.Seconds())
	}
	med := median(secs)
	each := make([]string, len(secs))
	for i, s := range secs {
		each[i] = fmt.Sprintf("%.1f s", s)
	}
	return []extraFigure{
		{Section: "Import", Name: fmt.Sprintf("`parley import` of a %d-message Claude Code session (%.0f MiB)", n, float64(fi.Size())/(1<<20)),
			Value: fmt.Sprintf("%.1f s, %.0f messages/s", med, float64(n)/med),
			Note: fmt.Sprintf("median of %d runs (%s), each a new conversation in the same database, timed over the whole process: start, read, one transaction",
				runs, strings.Join(each, ", "))},
	}, nil
}

// importedMessages reads how many messages an import added from its JSON report.
func importedMessages(out []byte) (int, error) {
	s := string(out)
	if i := strings.IndexByte(s, '{'); i >= 0 {
		s = s[i:]
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(s), &rep); err != nil {
		return 0, fmt.Errorf("read the import report: %w: %.500s", err, out)
	}
	for _, k := range []string{"added", "Added"} { // camelCase since the CLI speaks the API's names
		if v, ok := rep[k].(float64); ok {
			return int(v), nil
		}
	}
	return 0, fmt.Errorf("the import report says nothing of messages imported: %.500s", out)
}

// runFanout runs the realtime fan-out benchmark (bench/fanout, `make bench-realtime`),
// which starts its own Postgres and Parley, and returns its Markdown report, headings
// moved one level down, and its command line.
func runFanout(ctx context.Context, cfg *config, logf func(string, ...any)) (md, cmdline string, err error) {
	argv := append([]string{cfg.fanout, "-parley", cfg.parleyBin}, strings.Fields(cfg.fanoutArgs)...)
	logf("running the realtime fan-out benchmark: %s", strings.Join(argv, " "))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("fan-out benchmark: %w: %s", err, tail(stderr.String(), 2000))
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "#") {
			l = "#" + l
		}
		lines = append(lines, l)
	}
	rel := argv
	rel[0], rel[2] = "bin/parley-fanout", "bin/parley"
	return strings.Join(lines, "\n"), strings.Join(rel, " ") + "   # bench/fanout, as make bench-realtime runs it", nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// exportMessages is the length of the conversation the export rows read: the issue's
// "an agent re-exports the whole history every turn" at 5,000 messages.
const exportMessages = 5000

// exportFormats are the transcript formats the export rows measure.
var exportFormats = []string{"OPENAI_CHAT", "ANTHROPIC_MESSAGES"}

const parleyTranscriptQuery = `query ($c: ID!, $f: TranscriptFormat!) { conversation(id: $c) { transcript(format: $f) } }`

// seedExport imports a generated Claude Code session of exportMessages messages into the
// served database with `parley import` and returns the conversation's id, for the export
// rows (exportPlan).
func (e *env) seedExport(ctx context.Context, cfg *config, logf func(string, ...any)) (string, error) {
	path := filepath.Join(e.work, "export-session.jsonl")
	if err := writeClaudeCodeSession(path, exportMessages); err != nil {
		return "", fmt.Errorf("write the Claude Code session: %w", err)
	}
	logf("importing a %d-message Claude Code session for the export rows", exportMessages)
	argv := []string{cfg.parleyBin, "import", "--format", "CLAUDE_CODE_JSONL", "--database-url", e.cluster.DSN("parley"),
		"--json", "--title", "export", path}
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		return "", fmt.Errorf("parley import: %w: %.2000s", err, msg)
	}
	if got, err := importedMessages(out); err != nil {
		return "", err
	} else if got != exportMessages {
		return "", fmt.Errorf("parley import made %d messages of the %d in the session", got, exportMessages)
	}
	var rep struct {
		Conversation struct{ ID string }
	}
	s := string(out)
	if i := strings.IndexByte(s, '{'); i >= 0 {
		s = s[i:]
	}
	if err := json.Unmarshal([]byte(s), &rep); err != nil || rep.Conversation.ID == "" {
		return "", fmt.Errorf("read the conversation's id from the import report: %v: %.500s", err, out)
	}
	return rep.Conversation.ID, nil
}

// exportPlan is the export rows: the whole transcript of a conversation of
// exportMessages messages (seedExport) in each of exportFormats, through Parley's
// GraphQL API, one client (issue 15's target: p50 under 50 ms). Keys are
// export-<format>/1/parley.
func (e *env) exportPlan(convID string) [][]measurement {
	var plan [][]measurement
	for _, f := range exportFormats {
		key := keyOf("export-"+strings.ToLower(strings.ReplaceAll(f, "_", "-")), 1, "parley")
		plan = append(plan, []measurement{{key: key, clients: 1, op: parleyTranscript(e.parleyClient, convID, f)}})
	}
	return plan
}

// parleyTranscript reads the conversation's transcript in format.
func parleyTranscript(c *gqlClient, convID, format string) op {
	body := request(parleyTranscriptQuery, map[string]any{"c": convID, "f": format})
	return func(ctx context.Context, client int) error {
		b, err := c.post(ctx, client, body)
		if err == nil && len(b) < exportMessages*10 {
			err = fmt.Errorf("a transcript of %d bytes for %d messages: %.300s", len(b), exportMessages, b)
		}
		return err
	}
}
