package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/testserver"
)

// TestMalformedBodyNotEchoed: a megabyte of malformed JSON gets a short 400 saying what
// is wrong, not the megabyte back.
func TestMalformedBodyNotEchoed(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	body := `{"query": "{ conversations { totalCount } }", "variables": ` + strings.Repeat("x", 1<<20) + `}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status: got %d, want 400", resp.StatusCode)
	}
	if len(got) > 2048 {
		t.Errorf("response: got %d bytes, want under 2 KiB: the body must not be echoed", len(got))
	}
	if !strings.Contains(string(got), "could not be decoded") || !strings.Contains(string(got), "1048") {
		t.Errorf("response: got %.300s, want it to say the body (and its size) could not be decoded", got)
	}
}
