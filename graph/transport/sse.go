package transport

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	gqltransport "github.com/99designs/gqlgen/graphql/handler/transport"
)

// sseTransport serves the requests of Kind EventStream (graphql-sse's distinct
// connections mode) with gqlgen's SSE transport, adding what it lacks:
//
//   - A write timeout. gqlgen writes SSE events with no deadline, so a client that
//     stops reading would hold its goroutines and buffers for as long as TCP lets it.
//     Here a write that cannot finish within writeTimeout ends the stream; the client
//     reconnects with its last cursor and catches up from the database.
//   - A proper end on shutdown. When the server shuts down (Config.Shutdown is done) a
//     stream is cut without the "event: complete" gqlgen would otherwise send as the
//     subscription's context ends: complete tells a client that its subscription is
//     finished, and it would not subscribe again elsewhere.
//   - The end of the credential: its stream is cut, without complete, when it expires.
type sseTransport struct {
	sse          gqltransport.SSE
	shutdown     context.Context
	writeTimeout time.Duration
}

var _ graphql.Transport = sseTransport{}

// Supports implements graphql.Transport.
func (sseTransport) Supports(r *http.Request) bool { return KindOf(r.Context()) == EventStream }

// Do implements graphql.Transport.
func (t sseTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	w.Header().Add("Vary", "Accept")
	st := &sseState{}
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), sseStateKey{}, st))
	defer cancel()
	if exp := credentialExpiry(ctx); !exp.IsZero() {
		// The credential expired: cut the stream, as for a failure the client should
		// recover from by subscribing again (with a fresh credential).
		timer := time.AfterFunc(time.Until(exp), func() {
			st.abandoned.Store(true)
			cancel()
		})
		defer timer.Stop()
	}
	if valid := credentialContext(ctx); valid != nil {
		// The credential revoked: cut the stream, as at its expiry.
		stop := context.AfterFunc(valid, func() {
			st.abandoned.Store(true)
			cancel()
		})
		defer stop()
	}
	sw := &sseWriter{
		ResponseWriter: w, rc: http.NewResponseController(w), timeout: t.writeTimeout,
		shutdown: t.shutdown, st: st, cancel: cancel,
	}
	t.sse.Do(sw, r.WithContext(ctx), exec)
}

// sseState is shared by an SSE request's writer and its subscription.
type sseState struct {
	// abandoned is set when the subscription ended in a way the client should recover
	// from by subscribing again (the database unavailable): the stream is then cut
	// without "complete", which graphql-sse clients take as a network error to retry.
	abandoned atomic.Bool
}

type sseStateKey struct{}

// AbandonStream cuts an SSE request's stream without completing it, so that its client
// subscribes again, and reports whether ctx was one.
func AbandonStream(ctx context.Context) bool {
	st, _ := ctx.Value(sseStateKey{}).(*sseState)
	if st == nil {
		return false
	}
	st.abandoned.Store(true)
	return true
}

// sseWriter writes an SSE response under a deadline per write, and writes nothing more
// once the stream is abandoned or the server shuts down. gqlgen's SSE transport calls
// it under its own lock.
type sseWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	timeout  time.Duration
	shutdown context.Context
	st       *sseState
	cancel   context.CancelFunc // ends the subscription when a write fails
}

func (w *sseWriter) cut() bool {
	return w.shutdown.Err() != nil || w.st.abandoned.Load()
}

func (w *sseWriter) Write(p []byte) (int, error) {
	if w.cut() {
		return 0, net.ErrClosed
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	n, err := w.ResponseWriter.Write(p)
	if err != nil {
		w.cancel()
	}
	return n, err
}

func (w *sseWriter) Flush() {
	if w.cut() {
		return
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	if err := w.rc.Flush(); err != nil {
		w.cancel()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *sseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
