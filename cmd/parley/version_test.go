package main

import (
	"context"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/pgtest"
)

// versionLine is what `parley version` and `parley --version` print: the version, the
// revision (or "unknown" for a build without VCS stamping), and the toolchain.
var versionLine = regexp.MustCompile(`^parley \S+ \(revision (unknown|[0-9a-f]{1,12}(-dirty)?)(, \S+)?, go\S+ \w+/\w+\)\n$`)

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"parley", "version"}, {"parley", "--version"}, {"parley", "-v"}} {
		var out, errOut syncBuffer
		if err := run(context.Background(), args, &out, &errOut); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !versionLine.MatchString(out.String()) {
			t.Errorf("%v: got %q, want a line matching %s", args, out.String(), versionLine)
		}
		if !strings.Contains(out.String(), runtime.Version()) {
			t.Errorf("%v: got %q, want the Go version %s in it", args, out.String(), runtime.Version())
		}
	}
}

// TestBuildInfoMetric: /metrics says which build runs.
func TestBuildInfoMetric(t *testing.T) {
	t.Parallel()
	url, stop := serve(t, "--database-url", pgtest.NewDatabase(t))
	defer stop()
	status, body := get(t, url+"/metrics")
	want := regexp.MustCompile(`(?m)^parley_build_info\{goversion="` + regexp.QuoteMeta(runtime.Version()) + `",revision="[^"]+",version="[^"]+"\} 1$`)
	if status != http.StatusOK || !want.MatchString(body) {
		t.Errorf("got %d, want a line matching %s in:\n%.3000s", status, want, body)
	}
	// The connection pool's statistics are there too.
	if !strings.Contains(body, `go_sql_open_connections{db_name="parley"}`) {
		t.Errorf("no go_sql_open_connections{db_name=\"parley\"} in /metrics:\n%.3000s", body)
	}
}
