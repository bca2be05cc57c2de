package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/metrics"
	"github.com/parley-dev/parley/server"
)

// TestRefusedCounted: requests refused before GraphQL reads them are counted by status
// (parley_http_refused_total); answered GraphQL requests are not.
func TestRefusedCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	srv := testserver.NewWith(t, testserver.Options{
		Auth:      func(store *db.DB) auth.Config { return auth.Config{Tokens: store} },
		Configure: func(c *server.Config) { c.Metrics, c.ServeMetrics = m, true },
	})
	good, _ := token(t, srv, "ivy", nil)
	post(t, srv.URL, "", `{ conversations { totalCount } }`)
	post(t, srv.URL, "Bearer prl_unknown", `{ conversations { totalCount } }`)
	post(t, srv.URL, "Bearer "+good, `{ conversations { totalCount } }`)
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/graphql", nil)
	req.Header.Set("Authorization", "Bearer "+good)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	b := scrapeMetrics(t, srv.URL)
	for _, want := range []string{`parley_http_refused_total{status="401"} 2`, `parley_http_refused_total{status="405"} 1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics: no %s in\n%s", want, grepLines(string(b), "parley_http_refused"))
		}
	}
	if strings.Contains(string(b), `status="200"`) {
		t.Errorf("an answered request was counted as refused:\n%s", grepLines(string(b), "parley_http_refused"))
	}
}

// scrapeMetrics returns the server's /metrics.
func scrapeMetrics(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
