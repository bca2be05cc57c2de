package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/testserver"
)

// TestValidationCostBounded: a document repeating one field without aliases passes the
// token limit and made gqlgen's validator compare every pair of its fields (15,000 of
// them: a minute of CPU). Its selections are counted before validation and refused
// with TOO_MANY_SELECTIONS, over HTTP and websockets, at once; so is the same count
// reached by spreading a fragment. A document at the limit validates quickly.
func TestValidationCostBounded(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	repeated := "{" + strings.Repeat(" __typename", 14000) + " }" // 154 KB, under 15,000 tokens
	var spread strings.Builder
	spread.WriteString("{")
	for range 100 {
		spread.WriteString(" ...F")
	}
	spread.WriteString(" } fragment F on Query {" + strings.Repeat(" __typename", 100) + " }") // 10,000 once spread
	atLimit := "{" + strings.Repeat(" __typename", 1000) + " }"

	// Generous for two loaded cores under -race; the unbounded document took 60 s on an
	// idle machine. A refused document is only parsed; the one at the limit is validated
	// (its 1,000 fields compared pairwise: 3-5 s under -race alone, 14-16 s at a load
	// average of 35), so its bound is wider, and still well under the unbounded cost.
	const bound, atLimitBound = 10 * time.Second, 40 * time.Second
	for _, tt := range []struct {
		name, query, want string
	}{
		{"one field repeated", repeated, "TOO_MANY_SELECTIONS"},
		{"a fragment spread many times", spread.String(), "TOO_MANY_SELECTIONS"},
		{"at the limit", atLimit, ""},
	} {
		limit := bound
		if tt.want == "" {
			limit = atLimitBound
		}
		start := time.Now()
		r := srv.Do(t, tt.query, nil)
		took := time.Since(start)
		t.Logf("HTTP, %s: %s", tt.name, took)
		if tt.want == "" {
			if len(r.Errors) > 0 {
				t.Errorf("HTTP, %s: got %+v, want no error", tt.name, r.Errors)
			}
		} else if code := r.ErrorCode(t); code != tt.want {
			t.Errorf("HTTP, %s: got %s, want %s", tt.name, code, tt.want)
		}
		if took > limit {
			t.Errorf("HTTP, %s: took %s, want under %s", tt.name, took, limit)
		}
	}

	conn, typ, _, _ := wsDial(t, srv.URL, nil)
	if typ != "connection_ack" {
		t.Fatalf("got %q, want connection_ack", typ)
	}
	start := time.Now()
	wsSubscribe(t, conn, "1", repeated, nil)
	m, code, reason := wsNext(t, conn, 2*bound)
	took := time.Since(start)
	t.Logf("websocket, one field repeated: %s", took)
	if m == nil || m["id"] != "1" || !strings.Contains(fmt.Sprint(m["payload"]), "TOO_MANY_SELECTIONS") {
		t.Fatalf("websocket: got %v (close %d %q), want TOO_MANY_SELECTIONS", m, code, reason)
	}
	if took > bound {
		t.Errorf("websocket: took %s, want under %s", took, bound)
	}
}
