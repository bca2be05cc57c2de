package poll

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the failure and ends the goroutine
// that called it, as testing's does.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls wait with a recorder on a goroutine of its own and returns what it
// recorded, and whether wait returned (rather than failing).
func run(wait func(testing.TB)) (failure string, returned bool) {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(r)
		returned = true
	}()
	<-done
	return r.failure, returned
}

func TestUntilReturnsOnceTheCheckPasses(t *testing.T) {
	calls := 0
	var took time.Duration
	failure, returned := run(func(tb testing.TB) {
		took = Until(tb, "the third call", time.Minute, func() error {
			if calls++; calls < 3 {
				return fmt.Errorf("call %d", calls)
			}
			return nil
		})
	})
	if !returned || failure != "" || calls != 3 {
		t.Fatalf("got returned %v, failure %q after %d calls; want a return after 3", returned, failure, calls)
	}
	if took < 2*Interval {
		t.Errorf("took %s for two waits, want at least %s", took, 2*Interval)
	}
}

func TestUntilFailsWithWhatItSawLast(t *testing.T) {
	calls := 0
	failure, returned := run(func(tb testing.TB) {
		Until(tb, "the status to change", 30*time.Millisecond, func() error {
			calls++
			return fmt.Errorf("status STREAMING after %d checks", calls)
		})
	})
	want := fmt.Sprintf("timed out after 30ms waiting for the status to change: status STREAMING after %d checks", calls)
	if returned || failure != want {
		t.Errorf("got returned %v, failure %q; want %q", returned, failure, want)
	}
}

func TestForFailsNamingWhatItWaitedFor(t *testing.T) {
	failure, returned := run(func(tb testing.TB) {
		For(tb, "a condition that never holds", 20*time.Millisecond, func() bool { return false })
	})
	if want := "timed out after 20ms waiting for a condition that never holds"; returned || failure != want {
		t.Errorf("got returned %v, failure %q; want %q", returned, failure, want)
	}
	failure, returned = run(func(tb testing.TB) {
		For(tb, "a condition that holds", time.Minute, func() bool { return true })
	})
	if !returned || failure != "" {
		t.Errorf("a condition that holds: got returned %v, failure %q", returned, failure)
	}
}
