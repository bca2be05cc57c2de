package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/pgtest"
	"github.com/parley-dev/parley/internal/poll"
	"github.com/parley-dev/parley/internal/testserver"
)

// TestKill9Streaming kills (SIGKILL) a parley serve that is writing a streaming message:
// within the lease, the other replica on the same database closes the message as
// INTERRUPTED, with every acknowledged delta kept.
func TestKill9Streaming(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs parley serve as a child process")
	}
	dsn := pgtest.NewDatabase(t)
	writer := startProcess(t, "--database-url", dsn)
	other := testserver.NewWith(t, testserver.Options{DSN: dsn, SweepInterval: 100 * time.Millisecond})
	conv := createConversation(t, writer.url)
	data, err := gql(writer.url, `mutation($c: ID!) { startMessage(conversationId: $c, input: {leaseSeconds: 2}) {
		node { ... on MessageBase { id } } } }`, map[string]any{"c": conv})
	if err != nil {
		t.Fatal(err)
	}
	id := data["startMessage"].(map[string]any)["node"].(map[string]any)["id"].(string)
	var acked strings.Builder
	for i := 1; i <= 50; i++ {
		piece := fmt.Sprintf("piece %d, ", i)
		if _, err := gql(writer.url, `mutation($m: ID!, $s: Int!, $t: String!) {
			appendMessageDeltas(messageId: $m, seq: $s, deltas: [{kind: TEXT, index: 0, text: $t}]) { seq } }`,
			map[string]any{"m": id, "s": i, "t": piece}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		acked.WriteString(piece)
	}
	killed := time.Now()
	if err := writer.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	writer.wait(t)

	var got struct {
		Node struct {
			MessageStatus string
			StatusReason  string
			Text          string
		}
	}
	poll.For(t, "the message to end after its writer was killed (lease 2 s)", 30*time.Second, func() bool {
		other.MustDo(t, `query($id: ID!) { node(id: $id) { ... on MessageBase { messageStatus statusReason } ... on TextMessage { text } } }`,
			map[string]any{"id": id}, &got)
		return got.Node.MessageStatus != "STREAMING"
	})
	if got.Node.MessageStatus != "INTERRUPTED" || !strings.Contains(got.Node.StatusReason, "writer went away") {
		t.Fatalf("got %s (%q), want INTERRUPTED saying the writer went away", got.Node.MessageStatus, got.Node.StatusReason)
	}
	if got.Node.Text != acked.String() {
		t.Errorf("kept %q, want every acknowledged delta: %q", got.Node.Text, acked.String())
	}
	t.Logf("closed %v after the kill", time.Since(killed).Round(time.Millisecond))
}
