// Package realtime owns the fan-out of the database's events in one process. Its Hub is
// the only place a commit's wake-up (Publish, Resync: fed by one db.Listener) reaches
// anyone: the subscribers of a conversation's messages (parley.EventService), which it
// turns into streams read from the database by position, so that a subscriber sees
// every message exactly once and in order, whatever notifications were lost and however
// slowly it reads; and watchers of a conversation or of every conversation
// (parley.EventWatcher), such as the tool work queue's subscribers, which read what they
// need themselves. Every registration has one shape: a one-slot wake-up signal in a
// topic keyed by conversation id.
package realtime

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-dev/parley"
)

// Store is what a Hub reads. db.DB implements it.
type Store interface {
	// ConversationHead returns the position of a conversation's newest message and the
	// number of its latest message change. Returns ENOTFOUND.
	ConversationHead(ctx context.Context, conversationID string) (lastPosition int, changeSeq int64, err error)
	// MessagesAfter returns up to limit messages with a position above after, in
	// ascending position, no more than fit maxBytes of stored bytes together (the first
	// always; 0: no bound), and whether there may be more. Returns ENOTFOUND when the
	// conversation is gone.
	MessagesAfter(ctx context.Context, conversationID string, after, limit, maxBytes int) ([]parley.Message, bool, error)
	// MessagesChangedAfter returns up to limit messages whose latest change is numbered
	// above after, in ascending number, no more than fit maxBytes (as MessagesAfter),
	// the number of the last one, and whether there may be more. Returns ENOTFOUND
	// when the conversation is gone.
	MessagesChangedAfter(ctx context.Context, conversationID string, after int64, limit, maxBytes int) ([]parley.Message, int64, bool, error)
}

// Config tunes a Hub.
type Config struct {
	// PageSize bounds one read (default 100). A subscriber that is far behind catches
	// up page by page at its own pace, holding one page at a time: the database is
	// its buffer.
	PageSize int
	// PageBytes bounds the stored bytes of the messages (and appends) one read holds
	// (default DefaultPageBytes; the first message of a read always fits): a
	// subscriber replaying a conversation of large messages holds a budget's worth at a
	// time, not a page of them.
	PageBytes int
	// ReadTimeout bounds one read of the database (default 10s).
	ReadTimeout time.Duration
	// RetryFor is how long a stream keeps retrying reads that fail before it ends with
	// EUNAVAILABLE (default 5s): long enough to ride out a failover, short enough that
	// the client reconnects, perhaps to a healthier replica.
	RetryFor time.Duration
	Logger   *slog.Logger
}

// DefaultPageBytes is Config.PageBytes's default.
const DefaultPageBytes = 16 << 20

// Hub implements parley.EventService and parley.EventWatcher for the subscribers of one
// process. Feed it the database's events with Publish and Resync (the db.Listener that
// wire.New starts does; nothing else should).
type Hub struct {
	store Store
	cfg   Config
	log   *slog.Logger

	mu     sync.RWMutex
	topics map[string]*topic // by conversation id

	storeReads, tailReads atomic.Int64 // Stats
}

var (
	_ parley.EventService = (*Hub)(nil)
	_ parley.EventWatcher = (*Hub)(nil)
	_ parley.ReadyWaker   = (*addedStream)(nil)
	_ parley.ReadyWaker   = (*updatedStream)(nil)

	_ parley.ObservedStream = (*addedStream)(nil)
	_ parley.ObservedStream = (*updatedStream)(nil)
)

// ownerTopic keys the topic of the watchers of every conversation of owner: no
// canonical conversation id starts with a NUL.
func ownerTopic(owner string) string { return "\x00" + owner }

// isOwnerTopic reports whether a topic's key is an ownerTopic.
func isOwnerTopic(key string) bool { return strings.HasPrefix(key, "\x00") }

// topic is the subscribers of one conversation (or of all of one owner's: ownerTopic).
type topic struct {
	// watchers are the topic's, in the order they registered (nil where one has gone:
	// see remove), which is mostly the order their objects (the watcher, the streams,
	// the connection...) were allocated in, each kind next to the previous subscriber's:
	// served in this order, the processor's prefetchers have most of them at hand. (A
	// map's order is random, and sorting it cost a publish a pass over them all.)
	watchers []*watcher
	live     int // the watchers not nil
	// epoch counts the wake-ups of the conversation's subscribers (see sharedRead).
	epoch atomic.Int64

	mu    sync.Mutex
	reads map[readKey]*sharedRead // the latest read of each kind, owner and start

	tail tail // the appends this process committed lately (live subscribers)
}

// add adds w to the topic's watchers. The caller holds the Hub's lock.
func (t *topic) add(w *watcher) {
	w.idx = len(t.watchers)
	t.watchers = append(t.watchers, w)
	t.live++
}

// remove takes w from the topic's watchers, leaving a hole that later removals close
// (keeping the order) once holes are half of the list. The caller holds the Hub's lock.
func (t *topic) remove(w *watcher) {
	if w.idx >= len(t.watchers) || t.watchers[w.idx] != w {
		return
	}
	t.watchers[w.idx] = nil
	t.live--
	if t.live > len(t.watchers)/2 {
		return
	}
	ws := t.watchers[:0]
	for _, w := range t.watchers {
		if w != nil {
			w.idx = len(ws)
			ws = append(ws, w)
		}
	}
	clear(t.watchers[len(ws):])
	t.watchers = ws
}

// maxSharedReads bounds the reads a topic keeps for sharing: subscribers at the tail
// share one; stragglers catching up add a few.
const maxSharedReads = 8

// readKey names what a read asks for: added ("a") or updated ("u") messages after a
// position or change number, for an owner.
type readKey struct {
	kind, owner string
	after       int64
}

// sharedRead is one read of the database that every subscriber of a conversation
// asking for the same thing may use: when a message is added, all of them wake and
// ask for what follows the same position, and one query serves them all, however
// many they are. It may be used by a subscriber that woke at an epoch no later than
// the read's, and only by those: a read that began before a subscriber's wake-up may
// not hold the commit it was woken for. (A read begun after that is fine whatever else
// it holds; what it lacks, a later wake-up will fetch.)
type sharedRead struct {
	key   readKey
	epoch int64         // the topic's epoch when the read began
	done  chan struct{} // closed when val and err are set
	val   any
	err   error
}

// watcher is one subscriber's wake-up signal. One slot is enough: a wake-up means
// "read again", so wake-ups that arrive while one is pending add nothing, and a
// subscriber's memory stays the same however many events it misses while busy.
type watcher struct {
	t *topic
	// woke holds the pending wake-up, in place of c, once onWake is set: a stream driven
	// by wake-ups (Poll) rather than by a goroutine waiting in Next. A flag in the
	// watcher, which its wake-up touches anyway, rather than a channel's lock and an
	// object of its own, twice a delivery.
	woke atomic.Bool
	// started is set once the subscription has read where it starts; Stats counts only
	// these, so that a test can tell when a subscription is live.
	started atomic.Bool
	// dirty says the database holds something this live subscriber has not read: set
	// (before the wake-up) by every event but the appends this process committed
	// itself, which a live subscriber may take from its topic's tail instead.
	dirty atomic.Bool
	// next, set by a caught-up stream, is where the read its next wake-up will make
	// starts, plus one (0: none): the topic starts that read (of aheadKind, by ahead)
	// when it publishes and wakes the watcher once it is done (see topic.publish).
	// Taken by the wake-up it serves. A number rather than a read's description, so
	// that a stream's poll allocates nothing.
	next atomic.Int64
	// got is the read publish made for the wake-up it gives (wakeReady), done: the
	// stream's poll takes its answer from here rather than look it up in the topic.
	got atomic.Pointer[sharedRead]
	// onWake, when set (MessageStream.OnWake), is called after every wake-up.
	onWake atomic.Pointer[func()]
	// onReady, when set (parley.ReadyWaker), is called instead of onWake after the
	// wake-ups that find the stream's read done (see topic.publish).
	onReady atomic.Pointer[readyTarget]
	// wakeFn and readyTo are where onWake and onReady point when first set: in the
	// watcher, whose cache line the wake-up has at hand, rather than a box of their own.
	wakeFn  func()
	readyTo readyTarget
	// ahead is the stream, for those that can read ahead (set when they start), and
	// aheadKind and aheadOwner the kind and owner of its reads' keys.
	ahead                 aheadReader
	aheadKind, aheadOwner string

	c chan struct{}
	// kind is the kind of event it wakes for; "" is any kind. A ConversationDeleted
	// event wakes them all: every stream must learn it is over.
	kind parley.MessageEventKind
	idx  int // its place in its topic's watchers, under the Hub's lock
}

// readyTarget is what a watcher's onReady calls, and its Prefetcher and BatchReadier,
// if it is one.
type readyTarget struct {
	r parley.Readier
	p parley.Prefetcher
	b parley.BatchReadier
}

// aheadReader is a stream that can say how it reads.
type aheadReader interface {
	// readFrom returns the stream's read of what follows after, as Hub.read runs it.
	readFrom(after int64) func(context.Context) (any, error)
}

func (w *watcher) wake() {
	if f := w.onWake.Load(); f != nil {
		w.woke.Store(true)
		(*f)()
		return
	}
	select {
	case w.c <- struct{}{}:
	default:
	}
	// onWake set meanwhile: setOnWake may have looked at c before the send above.
	if f := w.onWake.Load(); f != nil {
		w.woke.Store(true)
		(*f)()
	}
}

// wakeReady wakes a watcher whose next read is done: its stream's Poll will not wait.
// A Readier that can (parley.BatchReadier) is woken within b, the batch of wake-ups the
// caller serves.
func (w *watcher) wakeReady(b *parley.ReadyBatch) {
	if t := w.onReady.Load(); t != nil {
		w.woke.Store(true)
		if t.b != nil {
			t.b.ReadyIn(b)
		} else {
			t.r.Ready()
		}
		return
	}
	w.wake()
}

// setOnWake sets onWake: from now on wake-ups are left in woke, and one left in c
// before is moved there. A stream given OnWake is driven by Poll, not Next (which waits
// on c): parley.MessageStream's callers do one or the other.
func (w *watcher) setOnWake(f func()) {
	w.onWake.Store(box(&w.onWake, &w.wakeFn, f))
	select {
	case <-w.c:
		w.woke.Store(true)
	default:
	}
}

// setOnReady sets onReady.
func (w *watcher) setOnReady(r parley.Readier) {
	p, _ := r.(parley.Prefetcher)
	b, _ := r.(parley.BatchReadier)
	w.onReady.Store(box(&w.onReady, &w.readyTo, readyTarget{r, p, b}))
}

// box returns where to keep f for p: in, unless p is set already (a wake-up may be
// reading it: then in a box of its own).
func box[F any](p *atomic.Pointer[F], in *F, f F) *F {
	if p.Load() != nil {
		in = new(F)
	}
	*in = f
	return in
}

// woken reports, and clears, a pending wake-up.
func (w *watcher) woken() bool {
	if w.woke.Load() && w.woke.Swap(false) {
		return true
	}
	if w.onWake.Load() != nil {
		return false // c is no longer used
	}
	select {
	case <-w.c:
		return true
	default:
		return false
	}
}

// setNext says where the stream's next read starts (after), once it is caught up: see
// watcher.next.
func (w *watcher) setNext(after int64) { w.next.Store(after + 1) }

// clearNext forgets next: the stream moves on, and what it would read next may change.
func (w *watcher) clearNext() {
	if w.next.Load() != 0 {
		w.next.Store(0)
	}
}

// take returns the answer of the read of key that a subscriber waking now may use (see
// sharedRead), if one has succeeded: the one publish made for this wake-up (got), or
// one the topic holds.
func (w *watcher) take(key readKey) (any, bool) {
	if r := w.got.Load(); r != nil {
		w.got.Store(nil)
		if r.key == key && r.epoch >= w.t.epoch.Load() {
			select {
			case <-r.done:
				if r.err == nil {
					return r.val, true
				}
			default:
			}
		}
	}
	return w.t.done(key)
}

// NewHub returns a Hub reading from store.
func NewHub(store Store, cfg Config) *Hub {
	if cfg.PageSize <= 0 {
		cfg.PageSize = 100
	}
	if cfg.PageBytes <= 0 {
		cfg.PageBytes = DefaultPageBytes
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 10 * time.Second
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Hub{store: store, cfg: cfg, log: cfg.Logger, topics: map[string]*topic{}}
}

// Publish wakes the subscribers an event concerns. It never blocks.
func (f *Hub) Publish(ev parley.MessageEvent) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if t := f.topics[ev.ConversationID]; t != nil {
		t.publish(ev.Kind)
	}
	if ev.Kind == parley.MessageDelta {
		return // no watcher of an owner's conversations wakes for appends
	}
	if ev.Owner != "" {
		if t := f.topics[ownerTopic(ev.Owner)]; t != nil {
			t.publish(ev.Kind)
		}
		return
	}
	// An event that does not name its owner (from a replica of an older version) may
	// be anyone's.
	for key, t := range f.topics {
		if isOwnerTopic(key) {
			t.publish(ev.Kind)
		}
	}
}

// publish wakes the topic's watchers of kind. The caller holds the Hub's lock.
//
// A caught-up stream's watcher (one that says what it will read next: watcher.next) is
// woken only once that read is done: the topic starts one read for all those that
// will ask for the same thing, and their wake-ups find it answered. Woken at once, a
// thousand subscribers of a conversation each parked on the one read and were each
// woken again when it answered: two scheduler round trips a delivery, a tenth of its
// CPU. Those wake-ups go through wakeReady, from a few goroutines (one per CPU) that
// serve the watchers one after another: a subscription whose stream says it can be
// served so (parley.ReadyWaker) delivers from there without a goroutine of its own.
func (t *topic) publish(kind parley.MessageEventKind) {
	epoch := t.epoch.Add(1)
	var ahead map[readKey]*heldWakes
	var last *heldWakes // the last looked up: the watchers alike come in runs
	for _, w := range t.watchers {
		if w == nil {
			continue
		}
		if k := w.kind; k == liveKind && kind != parley.ToolCallClaimed {
			w.dirty.Store(true)
			w.wake()
		} else if k == kind || kind == parley.ConversationDeleted || (k == "" && kind != parley.MessageDelta) ||
			(k == listKind && kind != parley.MessageDelta && kind != parley.ToolCallClaimed) {
			if w.next.Load() == 0 {
				w.wake()
				continue
			}
			next := w.next.Swap(0)
			if next == 0 {
				w.wake()
				continue
			}
			key := readKey{w.aheadKind, w.aheadOwner, next - 1}
			h := last
			if h == nil || h.key != key {
				if ahead == nil {
					ahead = map[readKey]*heldWakes{}
				}
				if h = ahead[key]; h == nil {
					h = &heldWakes{key: key, fn: w.ahead.readFrom(key.after)}
					ahead[key] = h
				}
				last = h
			}
			h.watchers = append(h.watchers, w)
		}
	}
	for key, h := range ahead {
		r := t.shared(key, epoch, h.fn)
		// In the order they subscribed (see topic.watchers). Split among the CPUs, so that
		// a thousand deliveries do not wait for one.
		parts := min(runtime.GOMAXPROCS(0), (len(h.watchers)+minWakesPerGoroutine-1)/minWakesPerGoroutine)
		for i := range parts {
			ws := h.watchers[i*len(h.watchers)/parts : (i+1)*len(h.watchers)/parts]
			go func() {
				<-r.done // failed or not: the streams' own reads retry
				serveReady(ws, r)
			}()
		}
	}
}

// serveReady wakes the watchers ws, whose next read r is done (nil: they read what is
// at hand otherwise, as live streams do the topic's tail), one after another. It
// goes by batches of prefetchBatch: first each watcher of a batch is read and its
// onReady asked to prefetch (parley.Prefetcher), then each is woken. At a thousand
// subscribers each delivery's first touch of each of its objects (the watcher, the
// operation, its source, its connection) misses the cache; so their misses overlap,
// a batch's at a time, rather than come one after another as each delivery reaches them.
// The watchers are woken within one parley.ReadyBatch, ended once they all are: what
// their wake-ups leave there (the websocket transport's writes) is done together.
func serveReady(ws []*watcher, r *sharedRead) {
	var targets [prefetchBatch]*readyTarget
	var b parley.ReadyBatch
	defer b.End()
	for len(ws) > 0 {
		batch := ws[:min(len(ws), prefetchBatch)]
		ws = ws[len(batch):]
		for i, w := range batch {
			targets[i] = w.onReady.Load()
		}
		for _, t := range targets[:len(batch)] {
			if t != nil && t.p != nil {
				t.p.Prefetch()
			}
		}
		for _, w := range batch {
			if r != nil {
				w.got.Store(r)
			}
			w.wakeReady(&b)
		}
	}
}

// prefetchBatch is how many watchers serveReady prefetches at a time: enough for their
// misses to overlap, few enough that what they fetch stays in the cache until used.
const prefetchBatch = 16

// minWakesPerGoroutine is the fewest held wake-ups worth a goroutine of their own.
const minWakesPerGoroutine = 64

// heldWakes are the watchers woken once the read they will all make is done.
type heldWakes struct {
	key      readKey
	fn       func(context.Context) (any, error)
	watchers []*watcher
}

// Resync wakes every subscriber, to read whatever events were lost (the listening
// connection was down). It never blocks.
func (f *Hub) Resync() {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, t := range f.topics {
		t.epoch.Add(1)
		for _, w := range t.watchers {
			if w != nil {
				w.dirty.Store(true)
				w.wake()
			}
		}
	}
}

// Stats counts what a Hub serves.
type Stats struct {
	Conversations int // with at least one subscriber (or watcher)
	// Subscribers counts the subscriptions started: registered, and their starting
	// point read, so that any message committed from now on reaches them.
	Subscribers int
	// Watchers counts the registrations of Watch (tool work subscriptions, say).
	Watchers int
	// StreamStoreReads counts the reads of the database made for live subscribers
	// (messageStream) since the Hub started, each shared by those at one cursor;
	// StreamTailReads the reads they took from the appends this process committed
	// instead (see tail).
	StreamStoreReads, StreamTailReads int64
}

// Stats returns how many subscribers there are now.
func (f *Hub) Stats() Stats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s := Stats{Conversations: len(f.topics), StreamStoreReads: f.storeReads.Load(), StreamTailReads: f.tailReads.Load()}
	for key, t := range f.topics {
		if isOwnerTopic(key) {
			s.Conversations--
		}
		for _, w := range t.watchers {
			switch {
			case w == nil:
			case w.kind == "":
				s.Watchers++
			case w.started.Load():
				s.Subscribers++
			}
		}
	}
	return s
}

// watch registers a watcher of a conversation's events of kind ("" any kind; an
// ownerTopic: every conversation of its owner) until ctx ends or release is
// called. Registering before reading the database is what makes streams gap-free: any
// commit the read misses wakes the watcher.
func (f *Hub) watch(ctx context.Context, conversationID string, kind parley.MessageEventKind) (w *watcher, release func()) {
	w = new(watcher)
	return w, f.register(ctx, conversationID, kind, w)
}

// register is watch with the watcher w to register, a new one: allocated with its
// stream, so that a delivery finds the two together.
func (f *Hub) register(ctx context.Context, conversationID string, kind parley.MessageEventKind, w *watcher) (release func()) {
	f.mu.Lock()
	t := f.topics[conversationID]
	if t == nil {
		t = &topic{}
		f.topics[conversationID] = t
	}
	w.c, w.t, w.kind = make(chan struct{}, 1), t, kind
	t.add(w)
	f.mu.Unlock()
	unregister := func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		t.remove(w)
		if t.live == 0 && f.topics[conversationID] == t {
			delete(f.topics, conversationID)
		}
	}
	// An AfterFunc rather than a context of its own: each idle subscription pays for
	// every context it holds.
	stop := context.AfterFunc(ctx, unregister)
	return func() {
		if stop() {
			unregister()
		}
	}
}

// errNoOwner is what a subscription without an owner in its context gets: a wiring
// mistake.
var errNoOwner = errors.New("realtime: the context carries no owner (parley.WithOwner)")

// canonical returns the canonical form of a public conversation id, so that every
// spelling of one id finds the same subscribers.
func canonical(conversationID string) (string, error) {
	key, ok := parley.ParseConversationID(conversationID)
	if !ok {
		return "", parley.Errorf(parley.ENOTFOUND, "conversation %q not found", conversationID)
	}
	return parley.ConversationID(key), nil
}

// Watch implements parley.EventWatcher.
func (f *Hub) Watch(ctx context.Context, conversationID string) (<-chan struct{}, func(), error) {
	var id string
	if conversationID != "" {
		var err error
		if id, err = canonical(conversationID); err != nil {
			return nil, nil, err
		}
	} else {
		owner, ok := parley.OwnerFrom(ctx)
		if !ok {
			return nil, nil, errNoOwner
		}
		id = ownerTopic(owner)
	}
	w, release := f.watch(ctx, id, "")
	return w.c, release, nil
}

// SubscribeMessagesAdded implements parley.EventService.
func (f *Hub) SubscribeMessagesAdded(ctx context.Context, conversationID string, after int) (parley.MessageStream, error) {
	id, err := canonical(conversationID)
	if err != nil {
		return nil, err
	}
	owner, ok := parley.OwnerFrom(ctx)
	if !ok {
		return nil, errNoOwner
	}
	s := &addedStream{f: f, conv: id, owner: owner, stale: true}
	w := &s.watcher
	s.w, s.cancel = w, f.register(ctx, id, parley.MessageAdded, w)
	last, _, err := f.store.ConversationHead(ctx, id)
	if err != nil {
		s.cancel()
		return nil, err
	}
	if after >= 0 {
		last = after
	}
	s.last = last
	w.ahead, w.aheadKind, w.aheadOwner = s, "a", owner
	w.started.Store(true)
	return s, nil
}

// SubscribeMessagesUpdated implements parley.EventService.
func (f *Hub) SubscribeMessagesUpdated(ctx context.Context, conversationID string) (parley.MessageStream, error) {
	id, err := canonical(conversationID)
	if err != nil {
		return nil, err
	}
	owner, ok := parley.OwnerFrom(ctx)
	if !ok {
		return nil, errNoOwner
	}
	s := &updatedStream{f: f, conv: id, owner: owner, stale: true}
	w := &s.watcher
	s.w, s.cancel = w, f.register(ctx, id, parley.MessageUpdated, w)
	_, seq, err := f.store.ConversationHead(ctx, id)
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.last = seq
	w.ahead, w.aheadKind, w.aheadOwner = s, "u", owner
	w.started.Store(true)
	return s, nil
}

// addedStream delivers the messages after position last. (The fields a delivery
// touches first.)
type addedStream struct {
	w    *watcher
	last int // the position of the last message delivered (or the start)
	// pending is the rest of the last page read; shared with other subscribers that
	// read the same page, so never written to.
	pending []parley.Message
	// stale says the database may hold messages after last: at the start, after a full
	// page, and after every wake-up.
	stale bool
	owner string // the subscriber's: every read is scoped by it
	// observed is told of each message delivered (parley.ObservedStream): kept in the
	// stream rather than wrapping it, one object fewer a delivery touches.
	observed observed
	// watcher is w: allocated with the stream, which a delivery then finds beside it.
	watcher watcher
	f       *Hub
	conv    string
	cancel  func() // unregisters w
}

// observed is a stream's parley.DeliveryObserver, if any, and when its subscription
// began.
type observed struct {
	o     parley.DeliveryObserver
	since time.Time
}

// delivered tells the observer, if any, of m, delivered.
func (o *observed) delivered(m parley.Message) {
	if o.o != nil {
		o.o.Delivered(m, o.since)
	}
}

// Observe implements parley.ObservedStream.
func (s *addedStream) Observe(o parley.DeliveryObserver, since time.Time) {
	s.observed = observed{o, since}
}

// Observe implements parley.ObservedStream.
func (s *updatedStream) Observe(o parley.DeliveryObserver, since time.Time) {
	s.observed = observed{o, since}
}

// Next implements parley.MessageStream.
func (s *addedStream) Next(ctx context.Context) (parley.Message, error) {
	return next(ctx, s.w, s.cancel, &s.stale, s.Poll)
}

// Poll implements parley.MessageStream.
func (s *addedStream) Poll(ctx context.Context) (parley.Message, error) {
	s.w.clearNext()
	if s.w.woken() {
		s.stale = true
	}
	for {
		for len(s.pending) > 0 {
			m := s.pending[0]
			s.pending = s.pending[1:]
			if p := m.Meta().Seq; p > s.last {
				s.last = p
				s.observed.delivered(m)
				return m, nil
			}
		}
		if !s.stale {
			s.w.setNext(int64(s.last))
			return nil, nil
		}
		res, ok := s.w.take(readKey{"a", s.owner, int64(s.last)})
		if !ok {
			if !parley.MayWait(ctx) {
				s.w.wake() // the read waits for a Poll that may wait
				return nil, nil
			}
			var err error
			if res, err = s.f.read(ctx, s.w.t, "a", s.owner, s.conv, int64(s.last), s.readAfter(s.last)); err != nil {
				s.cancel()
				return nil, err
			}
		}
		a := res.(added)
		s.pending, s.stale = a.msgs, a.more
	}
}

// readAfter returns the read of the messages after position last.
func (s *addedStream) readAfter(last int) func(context.Context) (any, error) {
	conv, size, budget := s.conv, s.f.cfg.PageSize, s.f.cfg.PageBytes
	return func(ctx context.Context) (any, error) {
		msgs, more, err := s.f.store.MessagesAfter(ctx, conv, last, size, budget)
		return added{msgs, more}, err
	}
}

func (s *addedStream) readFrom(after int64) func(context.Context) (any, error) {
	return s.f.attempt(s.owner, s.readAfter(int(after)))
}

// OnWake implements parley.MessageStream.
func (s *addedStream) OnWake(f func()) { s.w.setOnWake(f) }

// OnReady implements parley.ReadyWaker.
func (s *addedStream) OnReady(r parley.Readier) bool {
	s.w.setOnReady(r)
	return true
}

// updatedStream delivers the messages changed after change number last.
type updatedStream struct {
	w        *watcher
	last     int64
	pending  []parley.Message
	stale    bool
	owner    string
	observed observed
	watcher  watcher // w, allocated with the stream (see addedStream)
	f        *Hub
	conv     string
	cancel   func()
}

// added is one read of added messages, and whether there may be more.
type added struct {
	msgs []parley.Message
	more bool
}

// changes is one read of changed messages: the messages, the number of the last, and
// whether there may be more.
type changes struct {
	msgs []parley.Message
	last int64
	more bool
}

// Next implements parley.MessageStream.
func (s *updatedStream) Next(ctx context.Context) (parley.Message, error) {
	return next(ctx, s.w, s.cancel, &s.stale, s.Poll)
}

// Poll implements parley.MessageStream.
func (s *updatedStream) Poll(ctx context.Context) (parley.Message, error) {
	s.w.clearNext()
	if s.w.woken() {
		s.stale = true
	}
	for {
		if len(s.pending) > 0 {
			m := s.pending[0]
			s.pending = s.pending[1:]
			s.observed.delivered(m)
			return m, nil
		}
		if !s.stale {
			s.w.setNext(s.last)
			return nil, nil
		}
		res, ok := s.w.take(readKey{"u", s.owner, s.last})
		if !ok {
			if !parley.MayWait(ctx) {
				s.w.wake() // see addedStream.Poll
				return nil, nil
			}
			var err error
			if res, err = s.f.read(ctx, s.w.t, "u", s.owner, s.conv, s.last, s.readChangedAfter(s.last)); err != nil {
				s.cancel()
				return nil, err
			}
		}
		c := res.(changes)
		s.pending, s.last, s.stale = c.msgs, c.last, c.more
	}
}

// readChangedAfter returns the read of the messages changed after change number after.
func (s *updatedStream) readChangedAfter(after int64) func(context.Context) (any, error) {
	conv, size, budget := s.conv, s.f.cfg.PageSize, s.f.cfg.PageBytes
	return func(ctx context.Context) (any, error) {
		msgs, last, more, err := s.f.store.MessagesChangedAfter(ctx, conv, after, size, budget)
		return changes{msgs, last, more}, err
	}
}

func (s *updatedStream) readFrom(after int64) func(context.Context) (any, error) {
	return s.f.attempt(s.owner, s.readChangedAfter(after))
}

// OnWake implements parley.MessageStream.
func (s *updatedStream) OnWake(f func()) { s.w.setOnWake(f) }

// OnReady implements parley.ReadyWaker.
func (s *updatedStream) OnReady(r parley.Readier) bool {
	s.w.setOnReady(r)
	return true
}

// next is a stream's Next: it polls, and when the stream is caught up waits for a
// wake-up of its watcher w (which makes it stale) or for ctx to end (which releases w).
func next(ctx context.Context, w *watcher, release func(), stale *bool, poll func(context.Context) (parley.Message, error)) (parley.Message, error) {
	for {
		if m, err := poll(ctx); m != nil || err != nil {
			return m, err
		}
		select {
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		case <-w.c:
			*stale = true
		}
	}
}

// read runs one read of the database, shared with the subscribers of the same
// conversation that ask for the same thing in the same epoch of the topic t (see
// topic.epoch), and retries failures for up to RetryFor. The read runs under its own timeout, not the caller's context, since
// other subscribers may be waiting on it, and on behalf of owner: the conversation's
// owner, checked when the subscription started (only subscribers of the same owner
// share a read).
func (f *Hub) read(ctx context.Context, t *topic, kind, owner, conv string, after int64, fn func(context.Context) (any, error)) (any, error) {
	deadline := time.Now().Add(f.cfg.RetryFor)
	backoff := 50 * time.Millisecond
	key := readKey{kind, owner, after}
	attempt := f.attempt(owner, fn)
	for {
		r := t.shared(key, t.epoch.Load(), attempt)
		select {
		case <-r.done: // the common case at a conversation's tail: another subscriber's read, done
		default:
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-r.done:
			}
		}
		if r.err == nil {
			return r.val, nil
		}
		if parley.ErrorCode(r.err) == parley.ENOTFOUND {
			return nil, r.err
		}
		if time.Now().Add(backoff).After(deadline) {
			f.log.Error("realtime: cannot read the database; ending a subscription", "conversation", conv, "err", r.err)
			return nil, &parley.Error{Code: parley.EUNAVAILABLE,
				Message: "The conversation cannot be read right now; subscribe again with the last cursor you received."}
		}
		f.log.Warn("realtime: read failed; retrying", "conversation", conv, "err", r.err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		backoff *= 2
	}
}

// attempt returns one attempt of read's: fn on behalf of owner, under the read timeout.
func (f *Hub) attempt(owner string, fn func(context.Context) (any, error)) func(context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		ctx, cancel := context.WithTimeout(parley.WithOwner(ctx, owner), f.cfg.ReadTimeout)
		defer cancel()
		return fn(ctx)
	}
}

// done returns the value of a read of key that a subscriber waking now may use (see
// sharedRead), if one has succeeded: the common case at a conversation's tail, since
// publish has made the read before the wake-up (and Hub.read, for this, would allocate
// a read the subscriber does not need).
func (t *topic) done(key readKey) (any, bool) {
	epoch := t.epoch.Load()
	t.mu.Lock()
	r := t.reads[key]
	t.mu.Unlock()
	if r == nil || r.epoch < epoch {
		return nil, false
	}
	select {
	case <-r.done:
		return r.val, r.err == nil
	default:
		return nil, false
	}
}

// shared returns a read of key usable by a subscriber that woke at epoch (see
// sharedRead): one in flight or done, or a new one that runs fn, in a goroutine of its
// own so that no subscriber's cancellation cuts it short for the others.
func (t *topic) shared(key readKey, epoch int64, fn func(context.Context) (any, error)) *sharedRead {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.reads[key]; r != nil && r.epoch >= epoch {
		return r
	}
	r := &sharedRead{key: key, epoch: t.epoch.Load(), done: make(chan struct{})}
	if t.reads == nil {
		t.reads = map[readKey]*sharedRead{}
	}
	if len(t.reads) >= maxSharedReads {
		var oldest readKey
		first := true
		for k, o := range t.reads {
			if first || o.epoch < t.reads[oldest].epoch {
				oldest, first = k, false
			}
		}
		delete(t.reads, oldest)
	}
	t.reads[key] = r
	go func() {
		r.val, r.err = fn(context.Background())
		if r.err != nil { // a failure is not shared with later attempts
			t.mu.Lock()
			if t.reads[key] == r {
				delete(t.reads, key)
			}
			t.mu.Unlock()
		}
		close(r.done)
	}()
	return r
}

// liveKind registers a live subscriber (messageStream): it wakes for every event of its
// conversation, deltas included.
const liveKind parley.MessageEventKind = "live"
