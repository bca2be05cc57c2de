package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/bufpool"
)

// wsTransport serves GraphQL over websockets: graphql-transport-ws (the graphql-ws
// library, Apollo, GraphiQL) and the legacy graphql-ws protocol
// (subscriptions-transport-ws), on coder/websocket.
//
// It stands in for gqlgen's transport.Websocket, which holds five goroutines for a
// websocket with one subscription (the connection's reader, a keepalive ticker, a
// watcher of the connection's context, the operation's response loop, and the
// resolver's producer), each with its own stack: some 60 KB of server memory per idle
// subscription. Here a connection holds one goroutine, its reader, started fresh so
// that its stack stays small; timers drive the init timeout and keepalives; and a
// subscription holds no goroutine at all while idle. When its stream may have
// something new (parley.MessageStream's OnWake), a goroutine takes what is ready and
// writes it, then ends. Subscription resolvers find the operation in their context
// (PushTargetFrom) and attach their stream to it instead of starting a goroutine.
//
// It also does what gqlgen's transport does not: writes have a deadline, so a client
// that stops reading is cut off instead of holding the connection's writer for good,
// and a server shutdown closes every connection with 1001 "going away" and never
// reports a subscription complete, so that clients reconnect elsewhere.
type wsTransport struct {
	// First, with wsConn's fields a delivery touches: see wsConn.
	shutdown context.Context
	// shared lets subscribers of one event share its encoded result.
	shared *sharedResults
	// sends batches the sends of drains served within a parley.ReadyBatch (nil: each
	// drain sends its own).
	sends *sendRings

	origins      []string
	keepAlive    time.Duration
	initTimeout  time.Duration
	writeTimeout time.Duration
	log          *slog.Logger
	present      graphql.ErrorPresenterFunc
	readLimit    int64 // bytes a client message may have; more closes with 1009
	// auth checks connection_init's payload; nil accepts every connection as it is.
	auth WebsocketAuthFunc
	// check re-checks the credential before each operation (Config.WebsocketCheck).
	check func(ctx context.Context) error
}

var _ graphql.Transport = wsTransport{}

// The subprotocols.
const (
	protoTransportWS = "graphql-transport-ws"
	protoLegacyWS    = "graphql-ws"
)

// The close codes of websockets and of graphql-transport-ws.
const (
	closeNormal        = 1000
	closeGoingAway     = 1001
	closeTryAgainLater = 1013
	closeBadRequest    = 4400
	// CloseUnauthorized refuses a connection without a credential: graphql-ws clients
	// do not retry it, as retrying cannot help.
	CloseUnauthorized = 4401
	// CloseForbidden refuses a bad or expired credential: graphql-ws clients retry it,
	// and their connectionParams may fetch a fresh credential.
	CloseForbidden       = 4403
	closeInitTimeout     = 4408
	closeSubscriberTaken = 4409
	closeTooManyInits    = 4429
)

// WebsocketAuthFunc authenticates a websocket from its connection_init payload (a
// browser cannot set headers on a websocket) and returns the context its operations
// run in (carrying the owner) and when the credential expires (zero for never): the
// connection closes then, with CloseForbidden, and also when that context ends first
// (the credential revoked: its cause is the close reason). An error refuses the connection; a
// *WebsocketRefusal error says with which close code, any other CloseForbidden.
type WebsocketAuthFunc func(ctx context.Context, payload map[string]any) (context.Context, time.Time, error)

// WebsocketRefusal refuses a websocket connection with a close code and a reason the
// client sees.
type WebsocketRefusal struct {
	Code   int
	Reason string
}

func (e *WebsocketRefusal) Error() string { return e.Reason }

// Supports implements graphql.Transport.
func (wsTransport) Supports(r *http.Request) bool { return KindOf(r.Context()) == Websocket }

// Do implements graphql.Transport: it accepts the websocket and returns, leaving the
// connection to a goroutine of its own.
func (t wsTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	// The connection is allocated first, so that the network connection the upgrade
	// hands over (frameConn) is kept inside it: a delivery then finds the two together.
	c := &wsConn{t: t, exec: exec}
	fw := &framingWriter{ResponseWriter: w, conn: &c.fc}
	conn, err := websocket.Accept(fw, r, &websocket.AcceptOptions{
		Subprotocols:   []string{protoTransportWS, protoLegacyWS},
		OriginPatterns: t.origins,
	})
	if err != nil {
		return // Accept has answered the request
	}
	conn.SetReadLimit(t.readLimit)
	// The request's context ends when this handler returns; the connection keeps its
	// values (request id...) but not its cancellation.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	ctx = context.WithValue(ctx, openSubscriptionsKey{}, new(atomic.Int64))
	c.conn, c.legacy = conn, conn.Subprotocol() != protoTransportWS
	if c.fc.Conn != nil { // hijacked: wrapped
		c.frames = &c.fc
	}
	c.ctx, c.cancel, c.opCtx, c.ops = ctx, cancel, ctx, map[string]*wsOp{}
	c.mu.Lock()
	c.timer = time.AfterFunc(t.initTimeout, c.initTimedOut)
	c.stopShutdown = context.AfterFunc(t.shutdown, func() { c.close(closeGoingAway, "server shutting down") })
	c.mu.Unlock()
	go c.serve()
}

// wsConn is one websocket connection. The fields a delivery touches come first, with
// t's first two, so that they share a cache line or two: at a thousand subscribers,
// each delivery's first touch of each of its objects is a cache miss.
type wsConn struct {
	frames *frameConn // conn's network connection, written to directly: fc (nil if it could not be wrapped)
	// batched is the sendBatch holding frames for the connection, which holds its write
	// locks until it has sent them (nil: none).
	batched atomic.Pointer[sendBatch]
	// wmu serializes writes; closed is set, under it, once the connection is closing.
	wmu    sync.Mutex
	closed bool
	legacy bool
	fc     frameConn // its fields a delivery touches first
	t      wsTransport

	exec         graphql.GraphExecutor
	conn         *websocket.Conn
	ctx          context.Context // ends when the connection closes
	cancel       context.CancelFunc
	stopShutdown func() bool
	// writeTimer drops the connection when a write takes longer than writeTimeout; one
	// per connection rather than a context and timer per write, and not reset for each
	// write either (a timer's reset and stop were 4% of a delivery's CPU): armed by a
	// write when it is not, it looks at the write under way when it fires, and goes
	// again for the rest of that write's time, or disarms when none is under way.
	writeTimer *time.Timer
	tmu        sync.Mutex // guards timerArmed and the timer's resets
	timerArmed bool
	writing    atomic.Bool
	writeStart atomic.Int64 // when the write under way began (UnixNano)
	tooSlow    atomic.Bool

	mu          sync.Mutex
	initialized bool
	opCtx       context.Context // ctx, or what auth made of it
	ops         map[string]*wsOp
	timer       *time.Timer // the init timeout, then the keepalive
	unanswered  int         // graphql-transport-ws pings sent without a message since
}

// wsMessage is a message of either protocol.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// serve reads and handles the client's messages until the connection ends.
func (c *wsConn) serve() {
	defer c.close(closeNormal, "")
	handled := make(chan bool, 1)
	for {
		typ, data, err := c.conn.Read(context.Background())
		if err != nil {
			return
		}
		if typ == websocket.MessageText && bytes.Equal(data, plainPong) {
			// The answer to a keepalive ping, every interval from every client: nothing to
			// decode or to handle but the count of pings unanswered.
			c.mu.Lock()
			c.unanswered = 0
			c.mu.Unlock()
			continue
		}
		// Each message is handled on a goroutine of its own, in turn: handling goes deep
		// (JSON, authentication, the database), and a stack grown for it would stay
		// grown, idle, for the life of the connection.
		go func() { handled <- c.handleFrame(typ, data) }()
		if !<-handled {
			return
		}
	}
}

// plainPong is a pong as clients send it (graphql-ws's, without a payload).
var plainPong = []byte(`{"type":"pong"}`)

// handleFrame decodes and handles one message; false ends the connection.
func (c *wsConn) handleFrame(typ websocket.MessageType, data []byte) bool {
	c.mu.Lock()
	c.unanswered = 0 // any message shows the client is there
	c.mu.Unlock()
	var m wsMessage
	if typ != websocket.MessageText || json.Unmarshal(data, &m) != nil || m.Type == "" {
		c.protocolError("invalid message received")
		return false
	}
	return c.handle(m)
}

// handle handles one message; false ends the connection.
func (c *wsConn) handle(m wsMessage) bool {
	switch m.Type {
	case "connection_init":
		return c.init(m.Payload)
	case "ping":
		if !c.legacy {
			c.send(wsMessage{Type: "pong", Payload: m.Payload})
		}
	case "pong":
	case "subscribe", "start":
		if (m.Type == "subscribe") == c.legacy {
			c.protocolError("unexpected message " + m.Type)
			return false
		}
		return c.subscribe(m)
	case "complete", "stop":
		if (m.Type == "complete") == c.legacy {
			c.protocolError("unexpected message " + m.Type)
			return false
		}
		c.mu.Lock()
		op := c.ops[m.ID]
		c.mu.Unlock()
		if op != nil {
			op.end(c.legacy) // the legacy protocol confirms a stop
		}
	case "connection_terminate":
		c.close(closeNormal, "terminated")
		return false
	default:
		c.protocolError("unexpected message " + m.Type)
		return false
	}
	return true
}

// protocolError reports a broken message and closes the connection.
func (c *wsConn) protocolError(msg string) {
	if c.legacy {
		c.sendConnectionError(msg)
		c.close(closeNormal, msg)
		return
	}
	c.close(closeBadRequest, msg)
}

func (c *wsConn) sendConnectionError(msg string) {
	b, _ := json.Marshal(&gqlerror.Error{Message: msg})
	c.send(wsMessage{Type: "connection_error", Payload: b})
}

func (c *wsConn) initTimedOut() {
	c.mu.Lock()
	done := c.initialized
	c.mu.Unlock()
	if !done {
		c.close(closeInitTimeout, "connection initialisation timeout")
	}
}

// init handles connection_init.
func (c *wsConn) init(payload json.RawMessage) bool {
	c.mu.Lock()
	again := c.initialized
	c.mu.Unlock()
	if again {
		if c.legacy {
			return true
		}
		c.close(closeTooManyInits, "too many initialisation requests")
		return false
	}
	var p map[string]any
	if len(payload) > 0 && string(payload) != "null" {
		if err := json.Unmarshal(payload, &p); err != nil {
			c.protocolError("connection_init payload is not a JSON object")
			return false
		}
	}
	ctx := c.ctx
	if c.t.auth != nil {
		actx, expires, err := c.t.auth(ctx, p)
		if err != nil {
			refusal := &WebsocketRefusal{Code: CloseForbidden, Reason: "Forbidden"}
			if !errors.As(err, &refusal) {
				refusal.Reason = err.Error()
			}
			if c.legacy {
				c.sendConnectionError(refusal.Reason)
			}
			c.close(refusal.Code, refusal.Reason)
			return false
		}
		ctx = actx
		// The credential revoked: the context auth made ends, with the cause.
		context.AfterFunc(actx, func() {
			if c.ctx.Err() == nil {
				reason := "Forbidden: the credential is no longer valid"
				if cause := context.Cause(actx); cause != nil && cause != context.Canceled && cause != context.DeadlineExceeded {
					reason = "Forbidden: " + cause.Error()
				}
				c.close(CloseForbidden, reason)
			}
		})
		if !expires.IsZero() {
			// The credential's expiry ends the connection; graphql-ws clients retry
			// 4403, and may fetch a fresh credential for connection_init.
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, expires)
			context.AfterFunc(c.ctx, cancel) // released with the connection
			context.AfterFunc(ctx, func() {
				// A revocation ends this context too: then the close above says why.
				if c.ctx.Err() == nil && actx.Err() == nil {
					c.close(CloseForbidden, "Forbidden: the credential expired")
				}
			})
		}
	}
	c.mu.Lock()
	c.initialized, c.opCtx = true, ctx
	c.mu.Unlock()
	c.send(wsMessage{Type: "connection_ack"})
	if c.legacy {
		c.send(wsMessage{Type: "ka"})
	}
	c.mu.Lock()
	c.timer.Stop()
	c.timer = time.AfterFunc(c.t.keepAlive, c.keepAlive)
	c.mu.Unlock()
	return true
}

// keepAlive pings a graphql-transport-ws client, which must answer (any message does)
// within two intervals or be dropped as gone, and sends a legacy client "ka".
func (c *wsConn) keepAlive() {
	if c.ctx.Err() != nil {
		return
	}
	if c.legacy {
		c.send(wsMessage{Type: "ka"})
	} else {
		c.mu.Lock()
		gone := c.unanswered >= 2
		c.unanswered++
		c.mu.Unlock()
		if gone {
			c.close(closeNormal, "no answer to pings")
			return
		}
		c.send(wsMessage{Type: "ping"})
	}
	c.mu.Lock()
	c.timer.Reset(c.t.keepAlive)
	c.mu.Unlock()
}

// subscribe starts an operation (any kind: queries and mutations work too).
func (c *wsConn) subscribe(m wsMessage) bool {
	c.mu.Lock()
	ready, taken := c.initialized, c.ops[m.ID] != nil
	c.mu.Unlock()
	switch {
	case !ready:
		if c.legacy {
			c.sendConnectionError("send connection_init first")
		}
		c.close(CloseUnauthorized, "unauthorized")
		return false
	case taken && !c.legacy:
		c.close(closeSubscriberTaken, fmt.Sprintf("subscriber for %s already exists", m.ID))
		return false
	case m.ID == "":
		c.protocolError("a subscription needs an id")
		return false
	}
	if c.t.check != nil {
		c.mu.Lock()
		ctx := c.opCtx
		c.mu.Unlock()
		if err := c.t.check(ctx); err != nil {
			refusal := &WebsocketRefusal{Code: CloseForbidden, Reason: "Forbidden: the credential could not be checked"}
			errors.As(err, &refusal)
			if c.legacy {
				c.sendConnectionError(refusal.Reason)
			}
			c.close(refusal.Code, refusal.Reason)
			return false
		}
	}
	if taken { // legacy: a start with a running id replaces the operation
		c.mu.Lock()
		old := c.ops[m.ID]
		c.mu.Unlock()
		old.end(false)
	}
	// No Headers: nothing reads them, and keeping the upgrade request's would cost a
	// kilobyte and more for every connection.
	params := &graphql.RawParams{}
	start := graphql.Now()
	dec := json.NewDecoder(bytes.NewReader(m.Payload))
	dec.UseNumber()
	if err := dec.Decode(params); err != nil {
		c.sendErrors(m.ID, gqlerror.List{{Message: "invalid json"}})
		c.send(wsMessage{ID: m.ID, Type: "complete"})
		return true
	}
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	c.mu.Lock()
	idJSON, _ := json.Marshal(m.ID)
	op := &wsOp{c: c, id: m.ID}
	op.idJSON = append(op.idBuf[:0], idJSON...)
	op.ctx, op.cancel = context.WithCancel(c.opCtx)
	c.ops[m.ID] = op
	c.mu.Unlock()
	// Parsing, validating and starting the operation happen off the reader, which
	// stays shallow and free to read.
	go op.start(params)
	return true
}

// send writes a message, within the write timeout. It writes nothing once the
// connection is closing, or the server shutting down: the close frame has the last
// word, and no subscription is reported complete by a server going away.
func (c *wsConn) send(m wsMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return c.write(b)
}

var errConnClosed = errors.New("websocket closed")

// write writes messages, in order, within the write timeout (for them all). Several
// messages go out in one write to the network (see frameConn), without waiting when the
// network takes them at once (writeNow), as it does for most: the keepalive pings of a
// thousand connections went through net's write (the scheduler's system call state,
// which wakes sysmon, and the write timer's reset), 3% of the server's CPU while it
// delivered a message every 100 ms to each.
func (c *wsConn) write(msgs ...[]byte) error {
	if c.frames == nil {
		return c.writeEach(msgs)
	}
	b := bufpool.Get()
	for _, m := range msgs {
		b = appendTextFrame(b, m)
	}
	rest, err := c.writeNow(b, len(msgs))
	if rest != nil {
		err = rest()
	}
	bufpool.Put(b)
	return err
}

// writeEach writes messages through coder/websocket, one by one: for a connection the
// transport could not wrap (see frameConn).
func (c *wsConn) writeEach(msgs [][]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed || c.t.shutdown.Err() != nil {
		return errConnClosed
	}
	return c.timed(func() error {
		for _, b := range msgs {
			if err := c.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeFrames writes wire, n whole frames, within the write timeout.
func (c *wsConn) writeFrames(wire []byte, n int) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed || c.t.shutdown.Err() != nil {
		return errConnClosed
	}
	return c.timed(func() error {
		c.frames.mu.Lock()
		_, err := c.frames.Conn.Write(wire)
		c.frames.mu.Unlock()
		return err
	})
}

// writeNow writes wire, n whole frames, if the network takes them without waiting,
// which is the common case: no goroutine, no timer. Otherwise (the client's buffers
// full, another write under way, a connection without a file descriptor) it returns
// the function that writes the rest, within the write timeout, waiting as need be,
// for the caller to run in a goroutine of its own; until it has, nothing else is
// written to the connection, and wire must stay as it is. err is the write's failure
// (the connection is then closing).
func (c *wsConn) writeNow(wire []byte, n int) (rest func() error, err error) {
	if c.frames == nil || c.frames.fd < 0 || !c.wmu.TryLock() {
		return func() error { return c.writeFrames(wire, n) }, nil
	}
	if c.closed || c.t.shutdown.Err() != nil {
		c.wmu.Unlock()
		return nil, errConnClosed
	}
	if !c.frames.mu.TryLock() { // coder/websocket writing a control frame
		c.wmu.Unlock()
		return func() error { return c.writeFrames(wire, n) }, nil
	}
	written, err := c.frames.writeNow(wire)
	if err != nil || written == len(wire) {
		c.frames.mu.Unlock()
		err = c.done(err)
		c.wmu.Unlock()
		return nil, err
	}
	return func() error { // both locks held
		defer c.wmu.Unlock()
		return c.timed(func() error {
			_, err := c.frames.Conn.Write(wire[written:])
			c.frames.mu.Unlock()
			return err
		})
	}, nil
}

// timed runs write under the write timeout; the caller holds wmu.
func (c *wsConn) timed(write func() error) error {
	c.writeStart.Store(time.Now().UnixNano())
	c.writing.Store(true) // before looking at timerArmed: see writeTimedOut
	c.tmu.Lock()
	if !c.timerArmed {
		c.timerArmed = true
		if c.writeTimer == nil {
			c.writeTimer = time.AfterFunc(c.t.writeTimeout, c.writeTimedOut)
		} else {
			c.writeTimer.Reset(c.t.writeTimeout)
		}
	}
	c.tmu.Unlock()
	err := write()
	c.writing.Store(false)
	return c.done(err)
}

// done closes the connection after a write that failed; the caller holds wmu.
func (c *wsConn) done(err error) error {
	if err == nil {
		return nil
	}
	if c.tooSlow.Load() {
		c.t.log.Warn("websocket client too slow: disconnected", "writeTimeout", c.t.writeTimeout,
			"requestId", RequestID(c.ctx))
	}
	c.closed = true
	go c.close(closeTryAgainLater, "too slow")
	return err
}

// writeTimedOut drops a connection whose write has not finished within writeTimeout: a
// close frame could not get through its full buffers either. A write under way that
// began later has the rest of its time; with none under way the timer disarms, and the
// next write arms it again. (A write that starts while this runs finds timerArmed under
// tmu once this is done, so one of the two arms the timer.)
func (c *wsConn) writeTimedOut() {
	c.tmu.Lock()
	if !c.writing.Load() {
		c.timerArmed = false
		c.tmu.Unlock()
		return
	}
	if left := c.t.writeTimeout - time.Since(time.Unix(0, c.writeStart.Load())); left > 0 {
		c.writeTimer.Reset(left)
		c.tmu.Unlock()
		return
	}
	c.timerArmed = false
	c.tmu.Unlock()
	c.tooSlow.Store(true)
	c.conn.CloseNow()
}

// close ends the connection and its operations, once. The close handshake runs in
// the background: it waits for the client's answer.
func (c *wsConn) close(code int, reason string) {
	c.wmu.Lock()
	c.closed = true
	c.wmu.Unlock()
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return
	}
	c.cancel()
	ops := c.ops
	c.ops = map[string]*wsOp{}
	c.timer.Stop()
	stopShutdown := c.stopShutdown
	c.mu.Unlock()
	if stopShutdown != nil { // nil when the server was already shutting down
		stopShutdown()
	}
	for _, op := range ops {
		op.cancel()
	}
	go c.conn.Close(websocket.StatusCode(code), reason)
}

// sendErrors reports an operation's errors before or instead of any result.
func (c *wsConn) sendErrors(id string, errs gqlerror.List) {
	b, _ := json.Marshal(errs)
	c.send(wsMessage{ID: id, Type: "error", Payload: b})
}

// sendResponse writes one result of an operation. A plain result, the common case of
// a subscription event, is framed by hand: json.Marshal would re-validate and compact
// the data gqlgen has just written, for every subscriber.
func (c *wsConn) sendResponse(id string, resp *graphql.Response) error {
	idJSON, err := json.Marshal(id)
	if err != nil {
		return err
	}
	return c.sendResponseID(id, idJSON, resp)
}

// sendResponseID is sendResponse with the id already encoded.
func (c *wsConn) sendResponseID(id string, idJSON []byte, resp *graphql.Response) error {
	typ := "next"
	if c.legacy {
		typ = "data"
	}
	if !plainData(resp) {
		p, err := json.Marshal(resp)
		if err != nil {
			return err
		}
		return c.send(wsMessage{ID: id, Type: typ, Payload: p})
	}
	return c.sendData(idJSON, resp.Data)
}

// sendData frames a result that is data alone, by hand: json.Marshal would re-validate
// and compact the data gqlgen has just written, for every subscriber.
func (c *wsConn) sendData(idJSON, data []byte) error {
	b := c.appendDataFrame(bufpool.Get(), idJSON, data)
	err := c.writeFrames(b, 1)
	bufpool.Put(b)
	return err
}

// appendDataFrame appends to b the websocket frame of the message carrying data, the
// result of operation idJSON: the shared bytes are copied once, straight to where they
// are written from.
func (c *wsConn) appendDataFrame(b, idJSON, data []byte) []byte {
	mid := `,"type":"next","payload":{"data":`
	if c.legacy {
		mid = `,"type":"data","payload":{"data":`
	}
	const head, tail = `{"id":`, "}}"
	b = appendTextHeader(b, len(head)+len(idJSON)+len(mid)+len(data)+len(tail))
	b = append(b, head...)
	b = append(b, idJSON...)
	b = append(b, mid...)
	b = append(b, data...)
	return append(b, tail...)
}

// Bounds of the events one drain frames before writing them (in one write): a
// subscriber behind by more gets them in several writes, each waiting for the client
// to take the previous, so that what the server holds for a slow client stays this
// small (the rest waits in the database).
const (
	maxBatchMessages = 64
	maxBatchBytes    = 256 << 10
)

// wsOp is one operation of a connection. The fields a delivery touches come first (see
// wsConn).
type wsOp struct {
	mu      sync.Mutex
	running bool // a drain is under way
	again   bool // woken during the drain
	ended   bool
	// Set by start before the first wake-up.
	responses graphql.ResponseHandler
	src       PushSource // set by a subscription resolver: see Attach
	c         *wsConn
	// srcPrefetch is src, if it is a parley.Prefetcher.
	srcPrefetch parley.Prefetcher
	// The contexts of polls: rctx for a drain that may wait (parley.Waiting), and for an
	// inline one (parley.NoWaiting).
	wait, noWait context.Context
	shareKey     string // what its results depend on besides the event (see sharedResults)
	idJSON       []byte // id as a JSON string, for framing results: in idBuf when it fits
	idBuf        [16]byte

	id     string
	ctx    context.Context
	cancel context.CancelFunc
	rctx   context.Context
}

// start runs the operation. A subscription whose resolver attached a stream is then
// driven by wake-ups; anything else runs to its end here.
func (op *wsOp) start(params *graphql.RawParams) {
	c := op.c
	ctx := graphql.StartOperationTrace(op.ctx)
	rc, errs := c.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), errs)
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			c.sendErrors(op.id, resp.Errors)
		} else {
			c.sendResponse(op.id, &graphql.Response{Errors: errs})
		}
		op.end(true)
		return
	}
	ctx = graphql.WithOperationContext(ctx, rc)
	if rc.Operation != nil && rc.Operation.Operation == ast.Subscription {
		ctx = context.WithValue(ctx, pushTargetKey{}, op)
	}
	responses, rctx := c.exec.DispatchOperation(ctx, rc)
	op.mu.Lock()
	op.responses, op.rctx = responses, rctx
	op.wait, op.noWait = parley.Waiting(rctx), parley.NoWaiting(rctx)
	if op.src != nil && c.t.shared != nil {
		op.shareKey = shareKey(ctx, rc)
	}
	pushed := op.src != nil
	op.mu.Unlock()
	if pushed {
		op.wake() // the replay, and whatever came while starting
		return
	}
	for {
		resp := responses(rctx)
		if resp == nil {
			break
		}
		if c.sendResponse(op.id, resp) != nil {
			break
		}
	}
	op.end(true)
}

// pushTargetKey carries the *wsOp of a websocket subscription to its resolver.
type pushTargetKey struct{}

// PushTarget is what a subscription resolver attaches its stream to, to be driven by
// wake-ups instead of a goroutine of its own.
type PushTarget interface {
	// Attach gives the operation its source of events. It returns the function to call
	// whenever the source's Poll may have something new (wake), and what to tell
	// instead when Poll has what it reads at hand and will not wait under
	// parley.NoWaiting (ready, for parley.ReadyWaker: it may deliver in the caller's
	// goroutine, never waiting).
	Attach(src PushSource) (wake func(), ready parley.Readier)
}

// PushSource is a subscription's events, as a resolver attaches them to its operation
// (PushTarget). An interface rather than two functions: a delivery reaches the
// resolver's own object in one step, where a function's closure was one object more
// each delivery touched.
type PushSource interface {
	// Poll takes the next event and reports true, or reports false when there is none
	// yet (an error ends the subscription; ENOTFOUND completes it). It also returns the
	// event's identity, comparable, or nil: operations alike given events of the same
	// identity have the same result, which is then executed once and shared, and Push
	// is not called for those that share it.
	Poll(ctx context.Context) (event any, ok bool, err error)
	// Push puts the event Poll took into the channel the resolver returned (buffered,
	// so it does not block).
	Push()
}

// PushTargetFrom returns the websocket operation a subscription resolver runs for, or
// nil over other transports.
func PushTargetFrom(ctx context.Context) PushTarget {
	op, _ := ctx.Value(pushTargetKey{}).(*wsOp)
	if op == nil {
		return nil
	}
	return op
}

func (op *wsOp) Attach(src PushSource) (wake func(), ready parley.Readier) {
	op.mu.Lock()
	op.src = src
	op.srcPrefetch, _ = src.(parley.Prefetcher)
	op.mu.Unlock()
	return op.wake, op
}

// Prefetch implements parley.Prefetcher: it reads a word of each cache line of the
// operation and of its connection that a delivery (Ready) touches, and has its source
// do the same. It is called only once Attach has returned.
func (op *wsOp) Prefetch() {
	c := op.c
	touch(c.frames, c.t.shared, op.idJSON)
	if op.srcPrefetch != nil {
		op.srcPrefetch.Prefetch()
	}
}

// touch does nothing: a call to it reads its arguments from where they are kept (see
// wsOp.Prefetch), which the compiler would otherwise drop.
//
//go:noinline
func touch(*frameConn, *sharedResults, []byte) {}

// wake starts a drain unless one is running, in which case that one goes round again.
// It never blocks: the feed calls it while publishing.
func (op *wsOp) wake() {
	if op.claim() {
		go op.drain(false, nil)
	}
}

// Ready implements parley.Readier: the wake-up of a stream whose next poll has what it
// reads at hand (parley.ReadyWaker). The drain runs here, in the caller's goroutine, as far as it can
// without waiting, and goes on in a goroutine of its own only if it must wait (see
// drain). The realtime hub calls it for each of a conversation's subscribers in turn: a
// goroutine per delivery, its start, scheduling and exit, were a tenth of a delivery's
// CPU.
func (op *wsOp) Ready() {
	if op.claim() {
		op.drain(true, nil)
	}
}

// ReadyIn implements parley.BatchReadier: Ready, leaving the frames to write in b, to
// be sent with the other subscribers' (see sendBatch).
func (op *wsOp) ReadyIn(b *parley.ReadyBatch) {
	if op.claim() {
		op.drain(true, b)
	}
}

// claim reports whether the caller is to run a drain: none is running (else the one
// running goes round again).
func (op *wsOp) claim() bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.ended || op.responses == nil { // not started yet: start wakes it
		return false
	}
	if op.running {
		op.again = true
		return false
	}
	op.running = true
	return true
}

// drain writes every event that is ready, then ends. The events ready at once are
// framed first and written together, up to maxBatchMessages or maxBatchBytes at a time
// (one write to the network rather than one per event: see frameConn). Writing blocks
// while the client is slow to read, which is the back-pressure: the stream reads the
// database at the pace of these writes, and a client that stops reading is cut off by
// the write timeout.
//
// Inline (called by Ready) it never waits: it polls under parley.NoWaiting and writes
// only what the network takes at once (wsConn.writeNow); anything that would wait (the
// rest of a write, a read of the database, an error or a result to send otherwise, a
// wake-up during the drain) goes on in a goroutine of its own.
//
// Within a batch of wake-ups (b, not nil: inline), what is framed is left in the batch
// when it can be, to be sent with the others' (sendRings.leave).
func (op *wsOp) drain(inline bool, b *parley.ReadyBatch) {
	c := op.c
	wire, n := bufpool.Get(), 0 // framed, not yet written
	rctx := op.wait
	if inline {
		rctx = op.noWait
	}
	// flush writes what is framed; false ends this drain (the connection failed, or the
	// rest went on in a goroutine).
	flush := func() bool {
		if n == 0 {
			return true
		}
		if !inline {
			err := c.writeFrames(wire, n)
			wire, n = wire[:0], 0
			return err == nil
		}
		if b != nil && c.t.sends != nil {
			if left, err := c.t.sends.leave(b, c, wire); left {
				wire, n = wire[:0], 0
				return err == nil
			}
		}
		rest, err := c.writeNow(wire, n)
		if rest == nil {
			wire, n = wire[:0], 0
			return err == nil
		}
		w := wire
		wire = nil
		go func() {
			err := rest()
			bufpool.Put(w)
			if err == nil {
				op.drain(false, nil)
			}
		}()
		return false
	}
	defer func() {
		if wire != nil {
			bufpool.Put(wire)
		}
	}()
	for {
		if n >= maxBatchMessages || len(wire) >= maxBatchBytes {
			if !flush() {
				return
			}
		}
		event, ready, err := op.src.Poll(rctx)
		var data []byte
		var resp *graphql.Response
		if err == nil && ready {
			if data, resp = op.result(event); data != nil {
				wire, n = c.appendDataFrame(wire, op.idJSON, data), n+1
				continue
			}
		}
		if err == nil && !ready {
			if !flush() {
				return
			}
			op.mu.Lock()
			if op.again && !op.ended {
				op.again = false
				op.mu.Unlock()
				if inline { // woken by the feed: the next poll may read the database
					go op.drain(false, nil)
					return
				}
				continue
			}
			op.running = false
			op.mu.Unlock()
			return
		}
		// An error, the end, or a result that is not data alone: sent after what is
		// framed, waiting for the network as need be.
		w, k := wire, n
		wire = nil
		if inline {
			go func() {
				if op.conclude(w, k, err, resp) {
					op.drain(false, nil)
				}
			}()
			return
		}
		if !op.conclude(w, k, err, resp) {
			return
		}
		wire, n = bufpool.Get(), 0
	}
}

// result returns the result of the operation for event, which its poll has just
// taken: the data, shared with the operations alike (see sharedResults) when it is data
// alone, or else the response to send (nil: the operation is over).
func (op *wsOp) result(event any) ([]byte, *graphql.Response) {
	execute := func() *graphql.Response {
		op.src.Push()
		return op.responses(op.rctx)
	}
	var data []byte
	var resp *graphql.Response
	if event != nil && op.shareKey != "" {
		data, resp = op.c.t.shared.result(op.shareKey, event, execute)
	} else {
		resp = execute()
	}
	if data == nil && plainData(resp) {
		data = resp.Data
	}
	return data, resp
}

// conclude writes the n frames in wire (and gives wire back to the pool), then what a
// poll returned besides data alone: its error, which ends the operation, the
// operation's end (resp nil), or a response to send as it is. It reports whether the
// drain goes on.
func (op *wsOp) conclude(wire []byte, n int, err error, resp *graphql.Response) bool {
	c := op.c
	var werr error
	if n > 0 {
		werr = c.writeFrames(wire, n)
	}
	bufpool.Put(wire)
	switch {
	case werr != nil:
		return false
	case err != nil:
		if op.ctx.Err() == nil && parley.ErrorCode(err) != parley.ENOTFOUND {
			c.sendErrors(op.id, gqlerror.List{c.t.present(op.rctx, err)})
			op.end(false)
			return false
		}
		op.end(true) // the conversation is gone: the subscription is over
		return false
	case resp == nil:
		op.end(true)
		return false
	}
	return c.sendResponseID(op.id, op.idJSON, resp) == nil
}

// end finishes an operation once: it is forgotten, its context cancelled, and, if
// complete says so, the client told it is complete.
func (op *wsOp) end(complete bool) {
	op.mu.Lock()
	if op.ended {
		op.mu.Unlock()
		return
	}
	op.ended = true
	op.mu.Unlock()
	c := op.c
	c.mu.Lock()
	if c.ops[op.id] == op {
		delete(c.ops, op.id)
	}
	c.mu.Unlock()
	op.cancel()
	if complete {
		c.send(wsMessage{ID: op.id, Type: "complete"})
	}
}

// openSubscriptionsKey carries a websocket connection's count of open subscriptions.
type openSubscriptionsKey struct{}

// OpenSubscriptions returns the count of subscriptions open on the websocket connection
// an operation runs on, for a limit to keep (the count is the limit's to keep up to
// date); nil over other transports.
func OpenSubscriptions(ctx context.Context) *atomic.Int64 {
	n, _ := ctx.Value(openSubscriptionsKey{}).(*atomic.Int64)
	return n
}
