// Command worker is an example tool worker for Parley's approval flow. Parley never runs
// tools: the client that owns them does. This worker subscribes to approved tool calls
// without a result (toolCallAwaitingResult, over graphql-transport-ws), claims each one
// so other workers leave it alone, runs it on a few harmless built-in tools, several at
// once, and posts the result with its duration, or the error with its details.
//
//	go run ./examples/worker -url http://127.0.0.1:8080/graphql
//
// Built-in tools: echo {text}, add {a, b}, word_count {text}, now {}.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/graphql", "Parley's GraphQL endpoint")
	name := flag.String("name", defaultName(), "this worker's name, recorded on the calls it claims")
	conv := flag.String("conversation", "", "work on one conversation only (its id)")
	concurrency := flag.Int("concurrency", 4, "how many calls run at once")
	lease := flag.Duration("lease", time.Minute, "how long a claim keeps other workers off a call")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := &Worker{URL: *url, Name: *name, ConversationID: *conv, Concurrency: *concurrency, Lease: *lease,
		Tools: BuiltinTools(), Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func defaultName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("worker-%s-%d", host, os.Getpid())
}

// Tool runs one call. An error is reported as the call's result; a ToolError says
// whether the model can recover (by calling again with other arguments).
type Tool func(ctx context.Context, args json.RawMessage) (any, error)

// ToolError is a tool failure with its details.
type ToolError struct {
	Message     string
	Recoverable bool
}

func (e *ToolError) Error() string { return e.Message }

// BuiltinTools are harmless tools for trying the approval flow.
func BuiltinTools() map[string]Tool {
	return map[string]Tool{
		"echo": func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a struct{ Text *string }
			if err := json.Unmarshal(raw, &a); err != nil || a.Text == nil {
				return nil, &ToolError{Message: `echo needs {"text": string}`, Recoverable: true}
			}
			return map[string]any{"text": *a.Text}, nil
		},
		"add": func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a struct{ A, B *float64 }
			if err := json.Unmarshal(raw, &a); err != nil || a.A == nil || a.B == nil {
				return nil, &ToolError{Message: `add needs {"a": number, "b": number}`, Recoverable: true}
			}
			return map[string]any{"sum": *a.A + *a.B}, nil
		},
		"word_count": func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a struct{ Text *string }
			if err := json.Unmarshal(raw, &a); err != nil || a.Text == nil {
				return nil, &ToolError{Message: `word_count needs {"text": string}`, Recoverable: true}
			}
			return map[string]any{"words": len(strings.Fields(*a.Text)), "characters": len([]rune(*a.Text))}, nil
		},
		"now": func(ctx context.Context, raw json.RawMessage) (any, error) {
			return map[string]any{"time": time.Now().UTC().Format(time.RFC3339)}, nil
		},
	}
}

// Worker runs approved calls of its tools.
type Worker struct {
	URL            string
	Name           string
	ConversationID string
	Concurrency    int
	Lease          time.Duration
	Tools          map[string]Tool
	Log            *slog.Logger
	HTTP           *http.Client
}

// Call is an approved call awaiting its result.
type Call struct {
	ConversationID string `json:"conversationId"`
	Message        struct {
		ID string `json:"id"`
	} `json:"message"`
	ToolCall struct {
		ID        string          `json:"callId"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"toolCall"`
}

const awaitingSubscription = `subscription($c: ID, $n: [String!]) { toolCallAwaitingResult(conversationId: $c, names: $n) {
	conversationId message { id } toolCall { callId name arguments } } }`

// Run works until ctx ends, subscribing again (with a growing pause) whenever the
// connection drops; the subscription replays calls still awaiting, so none is lost.
func (w *Worker) Run(ctx context.Context) error {
	if w.Concurrency <= 0 {
		w.Concurrency = 1
	}
	if w.HTTP == nil {
		w.HTTP = &http.Client{Timeout: 30 * time.Second}
	}
	if w.Log == nil {
		w.Log = slog.Default()
	}
	sem := make(chan struct{}, w.Concurrency)
	var running sync.WaitGroup
	defer running.Wait()
	pause := 100 * time.Millisecond
	for {
		err := w.subscribe(ctx, func(c Call) {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { <-sem }()
				w.handle(ctx, c)
			}()
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.Log.Warn("subscription ended; subscribing again", "err", err, "in", pause)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(pause*2, 10*time.Second)
	}
}

// subscribe speaks graphql-transport-ws: init, subscribe, then one call per "next".
func (w *Worker) subscribe(ctx context.Context, each func(Call)) error {
	wsURL := "ws" + strings.TrimPrefix(w.URL, "http")
	conn, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return fmt.Errorf("dial %s: %w", wsURL, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(16 << 20)
	if err := wsjson.Write(ctx, conn, map[string]any{"type": "connection_init"}); err != nil {
		return err
	}
	names := make([]string, 0, len(w.Tools))
	for n := range w.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	vars := map[string]any{"n": names}
	if w.ConversationID != "" {
		vars["c"] = w.ConversationID
	}
	for {
		var msg struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := wsjson.Read(ctx, conn, &msg); err != nil {
			return err
		}
		switch msg.Type {
		case "connection_ack":
			sub := map[string]any{"id": "calls", "type": "subscribe", "payload": map[string]any{"query": awaitingSubscription, "variables": vars}}
			if err := wsjson.Write(ctx, conn, sub); err != nil {
				return err
			}
		case "ping":
			if err := wsjson.Write(ctx, conn, map[string]any{"type": "pong"}); err != nil {
				return err
			}
		case "next":
			var p struct {
				Data struct {
					ToolCallAwaitingResult Call `json:"toolCallAwaitingResult"`
				} `json:"data"`
			}
			if err := json.Unmarshal(msg.Payload, &p); err != nil {
				return fmt.Errorf("decode call: %w", err)
			}
			each(p.Data.ToolCallAwaitingResult)
		case "error", "complete":
			return fmt.Errorf("subscription %s: %s", msg.Type, msg.Payload)
		}
	}
}

// handle claims a call, runs it and posts its result. A call another worker claimed
// first is left to it.
func (w *Worker) handle(ctx context.Context, c Call) {
	log := w.Log.With("call", c.ToolCall.ID, "tool", c.ToolCall.Name)
	var claimed json.RawMessage
	err := w.do(ctx, `mutation($m: ID!, $id: String!, $w: String!, $l: Int) {
		claimToolCall(messageId: $m, toolCallId: $id, worker: $w, leaseSeconds: $l) { toolCall { id } } }`,
		map[string]any{"m": c.Message.ID, "id": c.ToolCall.ID, "w": w.Name, "l": int(w.Lease.Seconds())}, &claimed)
	if err != nil {
		log.Info("not claimed; leaving it", "err", err)
		return
	}
	start := time.Now()
	output, runErr := w.run(ctx, c)
	duration := time.Since(start)
	result := map[string]any{
		"toolCallId": c.ToolCall.ID,
		"durationMs": duration.Milliseconds(),
		"executedAt": start.UTC().Format(time.RFC3339Nano),
		"worker":     w.Name, // while its claim lasts, only the claimant's result is taken
	}
	if runErr != nil {
		te := &ToolError{Message: runErr.Error()}
		errors.As(runErr, &te)
		result["status"] = "ERROR"
		result["content"] = te.Message
		result["error"] = map[string]any{"message": te.Message, "recoverable": te.Recoverable, "stackTrace": stackOf(runErr)}
	} else {
		result["status"] = "SUCCESS"
		result["output"] = output
	}
	// Posting is retried while Parley says a retry can help (a concurrent change, a
	// database failover); a CONFLICT means another worker's result got there first.
	for attempt, pause := 1, 100*time.Millisecond; ; attempt, pause = attempt+1, pause*2 {
		err = w.do(ctx, `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { cursor } }`,
			map[string]any{"c": c.ConversationID, "i": map[string]any{"toolResult": result}}, nil)
		var gqlErr *graphQLError
		if err == nil || attempt == 5 || !errors.As(err, &gqlErr) || !gqlErr.Retryable {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
	if err != nil {
		log.Warn("posting the result failed", "err", err)
		return
	}
	log.Info("ran", "status", result["status"], "duration", duration)
}

// panicError is a tool that panicked, with where.
type panicError struct {
	value any
	stack string
}

func (e *panicError) Error() string { return fmt.Sprintf("the tool panicked: %v", e.value) }

func stackOf(err error) string {
	var pe *panicError
	if errors.As(err, &pe) {
		return pe.stack
	}
	return ""
}

// run runs a call's tool, turning a panic into an error with its stack.
func (w *Worker) run(ctx context.Context, c Call) (out any, err error) {
	tool, ok := w.Tools[c.ToolCall.Name]
	if !ok {
		return nil, &ToolError{Message: fmt.Sprintf("this worker has no tool %q", c.ToolCall.Name)}
	}
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: string(debug.Stack())}
		}
	}()
	return tool(ctx, c.ToolCall.Arguments)
}

// do posts a GraphQL request and decodes its data into out; GraphQL errors are errors.
func (w *Worker) do(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code      string `json:"code"`
				Retryable bool   `json:"retryable"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	if len(r.Errors) > 0 {
		e := r.Errors[0]
		return &graphQLError{Message: e.Message, Code: e.Extensions.Code, Retryable: e.Extensions.Retryable}
	}
	if out != nil {
		return json.Unmarshal(r.Data, out)
	}
	return nil
}

// graphQLError is an error Parley answered with.
type graphQLError struct {
	Message, Code string
	Retryable     bool
}

func (e *graphQLError) Error() string { return fmt.Sprintf("%s (%s)", e.Message, e.Code) }
