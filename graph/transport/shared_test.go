package transport

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// TestSharedResultsExecuteOncePerOperationAndEvent: subscribers of one event running
// operations alike, arriving together, execute it once and get the same bytes; another
// operation or another event executes again; a result with errors is never shared.
func TestSharedResultsExecuteOncePerOperationAndEvent(t *testing.T) {
	t.Parallel()
	const subscribers = 50
	type event struct{ n int }
	e1, e2 := &event{1}, &event{2}
	tests := []struct {
		name      string
		op        func(i int) string
		event     func(i int) any
		resp      *graphql.Response
		executed  int64
		sharedOut bool
	}{
		{"one operation, one event", func(int) string { return "q" }, func(int) any { return e1 }, &graphql.Response{Data: []byte(`{"a":1}`)}, 1, true},
		{"two operations", func(i int) string { return []string{"q", "r"}[i%2] }, func(int) any { return e1 }, &graphql.Response{Data: []byte(`{"a":1}`)}, 2, true},
		{"two events", func(int) string { return "q" }, func(i int) any { return []any{e1, e2}[i%2] }, &graphql.Response{Data: []byte(`{"a":1}`)}, 2, true},
		{"errors", func(int) string { return "q" }, func(int) any { return e1 }, &graphql.Response{Errors: gqlerror.List{{Message: "no"}}}, subscribers, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSharedResults()
			var executed atomic.Int64
			release := make(chan struct{})
			var wg sync.WaitGroup
			results := make([][]byte, subscribers)
			owns := make([]*graphql.Response, subscribers)
			for i := range subscribers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], owns[i] = s.result(tc.op(i), tc.event(i), func() *graphql.Response {
						executed.Add(1)
						<-release // every subscriber arrives while the first executes
						return tc.resp
					})
				}()
			}
			close(release)
			wg.Wait()
			if got := executed.Load(); got != tc.executed {
				t.Errorf("got %d executions, want %d", got, tc.executed)
			}
			for i := range subscribers {
				switch {
				case tc.sharedOut && (string(results[i]) != string(tc.resp.Data) || owns[i] != nil):
					t.Errorf("subscriber %d: got data %s and own %v, want data %s", i, results[i], owns[i], tc.resp.Data)
				case !tc.sharedOut && (results[i] != nil || owns[i] != tc.resp):
					t.Errorf("subscriber %d: got data %s and own %v, want its own response", i, results[i], owns[i])
				}
			}
		})
	}
}
