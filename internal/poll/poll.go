// Package poll is for tests that wait for what nothing signals to them: another
// process's state, a background goroutine's work, a sweeper's pass. A wait checks its
// condition every Interval until it holds or its limit passes; one that times out
// fails the test, saying what it waited for and, with Until, what it saw last.
package poll

import (
	"errors"
	"testing"
	"time"
)

// Interval is how often a condition is checked.
const Interval = 10 * time.Millisecond

// errNotYet is For's condition not holding: it has nothing to add to what.
var errNotYet = errors.New("not yet")

// Until checks every Interval until check returns nil and returns how long that
// took. Once limit has passed it fails t, naming what it waited for and check's last
// error (what it saw instead). check runs on the test's goroutine, so it may call
// t.Fatal itself.
func Until(t testing.TB, what string, limit time.Duration, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			if errors.Is(err, errNotYet) {
				t.Fatalf("timed out after %s waiting for %s", limit, what)
			}
			t.Fatalf("timed out after %s waiting for %s: %v", limit, what, err)
		}
		<-tick.C
	}
}

// For is Until for a condition with nothing to say when it does not hold.
func For(t testing.TB, what string, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	return Until(t, what, limit, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}
