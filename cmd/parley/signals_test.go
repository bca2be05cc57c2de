package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/poll"
)

// actAsParley, set to 1 in a child's environment, makes this test binary run parley's
// main instead of the tests (see TestMain), so that tests can send a real parley
// process real signals without building it first.
const actAsParley = "PARLEY_TEST_ACT_AS_PARLEY"

// process is `parley serve` running as a child process.
type process struct {
	cmd    *exec.Cmd
	url    string
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{} // closed when it has exited; then err is its exit error
	err    error
}

// startProcess runs `parley serve` on a free loopback port with args in a child process
// and returns once it serves. It is killed, if still running, when t ends.
func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	return startProcessEnv(t, nil, args...)
}

// startProcessEnv is startProcess with env added to the child's environment.
func startProcessEnv(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return startProcessExe(t, exe, env, args...)
}

// startProcessExe is startProcessEnv running the parley executable exe (this test
// binary acts as parley).
func startProcessExe(t *testing.T, exe string, env []string, args ...string) *process {
	t.Helper()
	p := &process{stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	stdout := p.stdout
	p.cmd = exec.Command(exe, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	p.cmd.Env = append(append(os.Environ(), actAsParley+"=1", "DATABASE_URL=", "PARLEY_DATA_DIR="), env...)
	p.cmd.Stdout, p.cmd.Stderr = stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	deadline := time.After(2 * time.Minute)
	for {
		if m := servingLine.FindStringSubmatch(stdout.String()); m != nil {
			p.url = m[1]
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("parley serve exited before serving: %v\n%s", p.err, p.stderr)
		case <-deadline:
			t.Fatalf("parley serve did not serve within 2 minutes:\n%s", p.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// wait waits for the process to exit and returns its exit error.
func (p *process) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(time.Minute):
		t.Fatalf("parley serve still running a minute later:\n%s", p.stderr)
		return nil
	}
}

// dataDir returns a new directory for an embedded cluster, removed when t ends.
func dataDir(t *testing.T) string {
	t.Helper()
	parent := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		parent = "/dev/shm" // durable settings cost little on tmpfs
	}
	dir, err := os.MkdirTemp(parent, "parley-signals-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The postgres user runs the cluster when the tests run as root.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gql posts a GraphQL request and returns its data, or an error for a transport
// failure or a GraphQL error; it does not need the test's goroutine.
func gql(url, query string, vars map[string]any) (map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	resp, err := http.Post(url+"/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Data   map[string]any
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("status %d: %w", resp.StatusCode, err)
	}
	if len(out.Errors) > 0 {
		return nil, fmt.Errorf("%s", out.Errors[0].Message)
	}
	return out.Data, nil
}

const addMessage = `mutation($c: ID!, $t: String!) { addMessage(conversationId: $c, input: {text: {role: USER, content: $t}}) {
	node { ... on MessageBase { position } } } }`

func createConversation(t *testing.T, url string) string {
	t.Helper()
	data, err := gql(url, `mutation { createConversation(title: "signals") { id } }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	return data["createConversation"].(map[string]any)["id"].(string)
}

// TestSIGTERM sends a real parley serve, running its embedded Postgres, SIGTERM while a
// request is in flight (its body half sent, so it is still being served) and an SSE
// subscription is open. The request finishes and its write is kept; the stream ends
// without "complete", so the client subscribes again elsewhere; the process exits 0
// after stopping Postgres cleanly (no postmaster.pid left).
func TestSIGTERM(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs parley with its own Postgres")
	}
	dir := dataDir(t)
	p := startProcess(t, "--data-dir", dir)
	conv := createConversation(t, p.url)

	// A live SSE subscription.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"query": `subscription($c: ID!) { messageAdded(conversationId: $c) { cursor } }`,
		"variables": map[string]any{"c": conv}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 100)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- e
			}
		}
	}()
	for live := false; !live; {
		if _, err := gql(p.url, addMessage, map[string]any{"c": conv, "t": "before"}); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-events:
			live = e == "next"
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("the subscription got nothing")
		}
	}

	// A request in flight: headers and half the body sent.
	addr := strings.TrimPrefix(p.url, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	inflight, _ := json.Marshal(map[string]any{"query": addMessage, "variables": map[string]any{"c": conv, "t": "in flight during SIGTERM"}})
	half := len(inflight) / 2
	fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(inflight), inflight[:half])
	// Shutdown waits for a connection the server has accepted; one still in the
	// listener's backlog is reset when the listener closes. The server accepts
	// connections in the order they came, so a request on a connection dialed after this
	// one tells when it has been accepted: a new connection, not one kept alive from the
	// requests above (that answered whether or not this one had been accepted, and the
	// fresh-clone CI run once got no response here).
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	pr, err := probe.Post(p.url+"/graphql", "application/json", strings.NewReader(`{"query":"{ __typename }"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, pr.Body)
	pr.Body.Close()
	if pr.StatusCode != http.StatusOK {
		t.Fatalf("the probe on a new connection: %s", pr.Status)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Shutdown has begun once the listener is closed.
	poll.For(t, "the listener to close after SIGTERM", time.Minute, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	if _, err := conn.Write(inflight[half:]); err != nil {
		t.Fatalf("finish the in-flight request: %v", err)
	}
	r, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request: no response: %v\n%s", err, p.stderr)
	}
	got, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || !strings.Contains(string(got), `"position":`) || strings.Contains(string(got), `"errors"`) {
		t.Errorf("in-flight request: got %d %s, want 200 with the added message", r.StatusCode, got)
	}

	var sse []string
	for e := range events {
		sse = append(sse, e)
	}
	for _, e := range sse {
		if e == "complete" {
			t.Errorf("SSE stream got %v: a complete tells the client not to subscribe again", sse)
		}
	}
	if err := p.wait(t); err != nil {
		t.Errorf("parley serve exited with %v after SIGTERM, want 0\n%s", err, p.stderr)
	}
	if _, err := os.Stat(dir + "/pgdata/postmaster.pid"); !os.IsNotExist(err) {
		t.Errorf("postmaster.pid left behind (%v): Postgres was not stopped cleanly", err)
	}
	if !strings.Contains(p.stderr.String(), "embedded Postgres stopped") {
		t.Errorf("the log does not say Postgres stopped:\n%s", p.stderr)
	}

	// The in-flight write was kept.
	p = startProcess(t, "--data-dir", dir)
	data, err := gql(p.url, `query($c: ID!) { conversation(id: $c) { messages(last: 1) { edges { node { ... on TextMessage { text } } } } } }`,
		map[string]any{"c": conv})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(data), "in flight during SIGTERM") {
		t.Errorf("after a restart the last message is %v, want the one in flight during SIGTERM", data)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t); err != nil {
		t.Errorf("second run exited with %v\n%s", err, p.stderr)
	}
}

// TestKill9 kills parley serve (SIGKILL, no chance to clean up) while writers add
// messages, then starts it again on the same data directory: it starts, although the
// Postgres it had started may still be running or shutting down, and every message
// whose addMessage was answered is there, with its text, at its position.
func TestKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs parley with its own Postgres")
	}
	dir := dataDir(t)
	p := startProcess(t, "--data-dir", dir)
	conv := createConversation(t, p.url)

	var mu sync.Mutex
	acked := map[int]string{} // position → text
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				text := fmt.Sprintf("writer %d message %d", i, j)
				data, err := gql(p.url, addMessage, map[string]any{"c": conv, "t": text})
				if err != nil {
					continue // the server is gone; what was answered before counts
				}
				pos := int(data["addMessage"].(map[string]any)["node"].(map[string]any)["position"].(float64))
				mu.Lock()
				acked[pos] = text
				mu.Unlock()
			}
		})
	}
	poll.Until(t, "100 messages written", time.Minute, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked) < 100 {
			return fmt.Errorf("%d written", len(acked))
		}
		return nil
	})
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	close(stop)
	wg.Wait()

	p = startProcess(t, "--data-dir", dir)
	data, err := gql(p.url, `query($c: ID!) { conversation(id: $c) { messageCount
		messages(first: 1000) { edges { node { ... on MessageBase { position } ... on TextMessage { text } } } } } }`,
		map[string]any{"c": conv})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int]string{}
	for _, e := range data["conversation"].(map[string]any)["messages"].(map[string]any)["edges"].([]any) {
		n := e.(map[string]any)["node"].(map[string]any)
		stored[int(n["position"].(float64))] = n["text"].(string)
	}
	for pos, text := range acked {
		if stored[pos] != text {
			t.Errorf("position %d: stored %q, want the acknowledged %q", pos, stored[pos], text)
		}
	}
	t.Logf("%d messages acknowledged before the kill, %d stored after the restart", len(acked), len(stored))
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t); err != nil {
		t.Errorf("second run exited with %v\n%s", err, p.stderr)
	}
}
