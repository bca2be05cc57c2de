package server_test

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/metrics"
)

// TestGroupCommitTimed: each append written by a group commit is timed once per phase
// (parley_append_group_commit_seconds, queued and written); a repeated append, which
// takes the locking path and writes nothing, is not.
func TestGroupCommitTimed(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	srv := testserver.NewWith(t, testserver.Options{Metrics: m})
	conv := srv.CreateConversation(t, "timed")
	msg := startMessage(t, srv, conv, nil)
	for seq := 1; seq <= 4; seq++ {
		appendText(t, srv, msg.ID, seq, "t ")
	}
	if got := appendText(t, srv, msg.ID, 4, "t "); got != 4 { // a retry: acknowledged, not written
		t.Fatalf("repeated append acknowledged %d, want 4", got)
	}
	b := scrapeMetrics(t, srv.URL)
	for _, want := range []string{`parley_append_group_commit_seconds_count{phase="queued"} 4`,
		`parley_append_group_commit_seconds_count{phase="written"} 4`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics: no %s in\n%s", want, grepLines(string(b), "parley_append_group_commit_seconds_count"))
		}
	}
}
