package processing_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
)

// TestAwaitingCallsDecodeEachRequestOnce: a thousand approved calls in few requests,
// read with first: 1000, cost what the requests hold, not a request per call. Each
// call's arguments are 4 KiB, so a request of 125 calls is 500 KiB: decoding it once
// per call (as before) allocated over a gigabyte and took seconds.
func TestAwaitingCallsDecodeEachRequestOnce(t *testing.T) {
	t.Parallel()
	e := start(t, "tools:\n  default: AUTO_APPROVE\n")
	conv := e.CreateConversation(t, "many calls")
	const requests, perRequest = 8, 125
	args := map[string]any{"content": strings.Repeat("x", 4096)}
	for r := range requests {
		calls := make([]map[string]any, perRequest)
		for i := range calls {
			calls[i] = map[string]any{"id": fmt.Sprintf("r%d-c%d", r, i), "name": "write", "arguments": args}
		}
		e.AddMessage(t, conv, toolRequest(calls...))
	}

	const q = `query($c: ID) { toolCallsAwaitingResult(conversationId: $c, first: 1000) {
		message { id position } toolCall { id name approvalStatus } } }`
	var out struct {
		ToolCallsAwaitingResult []struct {
			Message  struct{ ID string }
			ToolCall struct{ ID string }
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	e.MustDo(t, q, map[string]any{"c": conv}, &out)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc

	if got := len(out.ToolCallsAwaitingResult); got != requests*perRequest {
		t.Fatalf("got %d awaiting calls, want %d", got, requests*perRequest)
	}
	messages := map[string]bool{}
	for _, a := range out.ToolCallsAwaitingResult {
		messages[a.Message.ID] = true
	}
	if len(messages) != requests {
		t.Errorf("the calls name %d messages, want %d", len(messages), requests)
	}
	t.Logf("1000 awaiting calls of %d requests: %s, %d MiB allocated (the whole process)", requests, took, allocated>>20)
	// The requests hold 4 MiB of arguments; decoding each once and answering costs a
	// few times that. Other tests run beside this one, so the bound is generous: a
	// decode per call is over 1 GiB.
	if allocated > 300<<20 {
		t.Errorf("reading 1000 awaiting calls allocated %d MiB, want under 300 MiB", allocated>>20)
	}
	if took > 20*time.Second {
		t.Errorf("reading 1000 awaiting calls took %s, want well under 20s", took)
	}
}

// TestAwaitingWakesOnlyForItsOwner: a tool work subscription of every conversation
// wakes for its owner's changes only; another owner's writes do not make it look again.
func TestAwaitingWakesOnlyForItsOwner(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWiredWith(t, "tools:\n  default: AUTO_APPROVE\n", testserver.Options{Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store}
	}})
	newToken := func(owner string) string {
		_, secret, err := srv.Store.CreateToken(context.Background(), owner, "test", nil, false)
		if err != nil {
			t.Fatalf("create token: %v", err)
		}
		return secret
	}
	alice, bob := srv.As(newToken("alice")), srv.As(newToken("bob"))
	aliceConv := alice.CreateConversation(t, "alice's")
	bobConv := bob.CreateConversation(t, "bob's")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// What alice's subscription of every conversation registers for.
	aliceAll, releaseAll, err := srv.Hub.Watch(parley.WithOwner(ctx, "alice"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll()
	// Barriers: once these fire, the hub has handled the events of the writes before.
	bobBarrier, releaseBob, err := srv.Hub.Watch(parley.WithOwner(ctx, "bob"), bobConv)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseBob()
	aliceBarrier, releaseAlice, err := srv.Hub.Watch(parley.WithOwner(ctx, "alice"), aliceConv)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAlice()

	waitFor := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(wait):
			t.Fatalf("no wake-up for %s in %s", what, wait)
		}
	}
	// A first write, waited for, so the listener's resync on connecting is behind us.
	bob.AddMessage(t, bobConv, testserver.Text("USER", "hello"))
	waitFor(bobBarrier, "bob's conversation")
	select {
	case <-aliceAll:
	default:
	}
	// One write at a time, each waited for: the listener hands events to the hub one
	// after another, so when a write's wake-up reaches the barrier, the hub is done
	// with every write before it.
	for i := range 5 {
		bob.AddMessage(t, bobConv, toolRequest(call(fmt.Sprintf("b%d", i), "ls")))
		waitFor(bobBarrier, "bob's conversation")
	}
	bob.AddMessage(t, bobConv, testserver.Text("USER", "the last of bob's writes"))
	waitFor(bobBarrier, "bob's conversation")
	select {
	case <-aliceAll:
		t.Fatal("bob's writes woke alice's subscription of every conversation")
	default:
	}

	alice.AddMessage(t, aliceConv, toolRequest(call("a1", "ls")))
	waitFor(aliceBarrier, "alice's conversation")
	waitFor(aliceAll, "alice's subscription of every conversation")
}
