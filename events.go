package parley

import (
	"context"
	"time"
)

// MessageEventKind says what happened to a conversation's messages.
type MessageEventKind string

// The kinds of message events.
const (
	// MessageAdded: a message was stored as the conversation's next one.
	MessageAdded MessageEventKind = "added"
	// MessageUpdated: a stored message changed (a tool call decided, a file resolved, an
	// image recognized).
	MessageUpdated MessageEventKind = "updated"
	// MessageDelta: appends to the conversation's streaming messages were committed (a
	// group commit's event names only the conversation; one written alone also the
	// message, its position and its number in Seq). Only live subscribers wake for it.
	MessageDelta MessageEventKind = "delta"
	// ConversationDeleted: the conversation and all its messages are gone.
	ConversationDeleted MessageEventKind = "deleted"
	// ToolCallClaimed: a worker claimed (or renewed its claim on) a tool call of the
	// conversation. No message changed: it wakes the watchers of awaiting tool calls,
	// which learn when the claim will lapse.
	ToolCallClaimed MessageEventKind = "claimed"
)

// MessageEvent says that a conversation's messages changed. It names the change but
// does not carry the message: events travel between replicas as Postgres notifications,
// which are small and can be lost while a connection is down, so a receiver treats an
// event as a wake-up and reads what changed from the database, by position (added) or
// change sequence (updated).
type MessageEvent struct {
	Kind           MessageEventKind
	ConversationID string
	// MessageID and Position name the message; empty for ConversationDeleted.
	MessageID string
	Position  int
	// Seq is the conversation's change sequence number that an update took: updates of
	// one conversation are numbered 1, 2, 3... in commit order.
	Seq int64
	// Owner is the conversation's owner; empty when the writer did not say (a replica
	// of an older version), and then every owner's watchers wake.
	Owner string
}

// EventService streams a conversation's messages to subscribers as they are added or
// changed, whichever replica made the change.
type EventService interface {
	// SubscribeMessagesAdded registers for the messages of a conversation after
	// position after: first those already stored, then each one added later, every
	// position exactly once and in ascending order. A negative after means only
	// messages added from now on. The registration is released when ctx ends. Returns
	// ENOTFOUND for a missing conversation.
	SubscribeMessagesAdded(ctx context.Context, conversationID string, after int) (MessageStream, error)
	// SubscribeMessagesUpdated registers for the messages of a conversation that change
	// from now on, each delivered as it is after its change; a message changed twice in
	// quick succession may be delivered once, as it is after the second change. The
	// registration is released when ctx ends. Returns ENOTFOUND for a missing
	// conversation.
	SubscribeMessagesUpdated(ctx context.Context, conversationID string) (MessageStream, error)
}

// MessageStream is a registered subscription: the messages it delivers, in order. A
// caller either runs a goroutine that calls Next, or, to hold no goroutine while the
// stream is idle, sets OnWake and calls Poll until it returns nil after each wake-up.
type MessageStream interface {
	// Next waits for the next message and returns it. It reads from the database at the
	// caller's pace, so a caller that falls behind holds no backlog in memory. It
	// returns ctx's error when ctx ends, ENOTFOUND when the conversation is deleted (the
	// stream is then over), and EUNAVAILABLE when the database cannot be read for a
	// while; after an error the stream is over.
	Next(ctx context.Context) (Message, error)
	// Poll returns the next message if there is one, reading the database when the
	// stream has just started or been woken, and nil when it is caught up; it never
	// waits for a new message. Errors as Next.
	Poll(ctx context.Context) (Message, error)
	// OnWake sets a function to call whenever the stream may have more: Poll then. It is
	// called from the goroutine that publishes events, so it must not block. Set it
	// before the first Poll.
	OnWake(func())
}

// ReadyWaker is a MessageStream that can also be woken when what its next Poll reads is
// at hand (a read shared by the conversation's subscribers, done): OnReady sets the
// Readier called then, instead of OnWake's function. OnReady reports false when the
// stream cannot tell (a wrapper whose Poll reads the database itself): then every
// wake-up calls OnWake's function.
type ReadyWaker interface {
	OnReady(Readier) bool
}

// Readier is told that what a stream's next Poll reads is at hand (ReadyWaker). Ready is
// called from a goroutine that serves a conversation's subscribers one after another, so
// it may Poll under NoWaiting and do other work that never waits, but nothing that
// blocks. An interface rather than a function: the wake-up reaches the subscriber's own
// object in one step, where a method value's closure was one object more (a cache miss
// at a thousand subscribers) each delivery touched.
type Readier interface {
	Ready()
}

// BatchReadier may be implemented by a Readier: ReadyIn is its Ready, told of the batch
// of wake-ups it is part of, in which it may leave work to be finished with the others'
// (ReadyBatch.Leave). The goroutine that serves a conversation's subscribers one after
// another calls ReadyIn for each, then the batch's End: the websocket transport leaves
// its writes there, so that many subscribers' frames go out in one system call.
type BatchReadier interface {
	ReadyIn(b *ReadyBatch)
}

// BatchFinisher is work left in a ReadyBatch: FinishBatch does it, once.
type BatchFinisher interface {
	FinishBatch()
}

// ReadyBatch is a batch of wake-ups served one after another by one goroutine
// (BatchReadier), and the work they leave to be finished together when it ends. Its
// zero value is an empty batch; it is used by one goroutine at a time.
type ReadyBatch struct {
	left []leftWork
}

type leftWork struct {
	key any
	f   BatchFinisher
}

// Left returns the work left in the batch under key, or nil.
func (b *ReadyBatch) Left(key any) BatchFinisher {
	for _, w := range b.left {
		if w.key == key {
			return w.f
		}
	}
	return nil
}

// Leave leaves f in the batch under key (comparable, and not already in use), to be
// finished when the batch ends.
func (b *ReadyBatch) Leave(key any, f BatchFinisher) {
	b.left = append(b.left, leftWork{key, f})
}

// End finishes the work left in the batch, in the order it was left, and empties it.
func (b *ReadyBatch) End() {
	for i, w := range b.left {
		b.left[i] = leftWork{}
		w.f.FinishBatch()
	}
	b.left = b.left[:0]
}

// Prefetcher may be implemented by a Readier and by what it reaches: Prefetch reads a
// word of each object the Readier's Ready touches first, and does nothing else. The
// goroutine that serves a conversation's subscribers has a few of them prefetch before
// it wakes them, so that the cache misses on their objects (one each, at a thousand
// subscribers, on every object a delivery touches) overlap rather than come one after
// another.
type Prefetcher interface {
	Prefetch()
}

// DeliveryObserver is told of each message a stream delivers (ObservedStream).
type DeliveryObserver interface {
	// Delivered is called with each message the stream delivers, and when the
	// subscription began.
	Delivered(m Message, since time.Time)
}

// ObservedStream is a MessageStream that tells an observer of each message it delivers
// itself, so that the observer need not wrap it: a wrapper was one object more that
// each delivery touched (a cache miss at a thousand subscribers).
type ObservedStream interface {
	// Observe sets the stream's observer, and when its subscription began. Set it
	// before the first Poll or Next.
	Observe(o DeliveryObserver, since time.Time)
}

type noWaitingKey struct{}

// NoWaiting returns ctx for a MessageStream's Poll that must not wait for the database:
// where the stream would read it, Poll returns nothing and wakes the stream instead
// (OnWake's function), so that the read happens in a later Poll without NoWaiting.
func NoWaiting(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitingKey{}, true)
}

// Waiting returns ctx for a Poll that may wait: what ctx would say anyway, but said
// on top, so that MayWait does not walk the whole of a deep context to learn it.
func Waiting(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitingKey{}, false)
}

// MayWait reports whether a Poll under ctx may wait for the database (see NoWaiting).
func MayWait(ctx context.Context) bool {
	no, _ := ctx.Value(noWaitingKey{}).(bool)
	return !no
}

// EventWatcher wakes a caller whenever a conversation's messages may have changed, on
// whichever replica: for readers that look for something other than the next message
// (the tool work queue's subscriptions). A wake-up means "look again", never what
// changed: the caller reads the database. Register before the first read, so that a
// change committed in between is not missed.
type EventWatcher interface {
	// Watch registers for wake-ups about the conversation conversationID, or about
	// every conversation of ctx's owner when it is empty (another owner's changes do
	// not wake it), until ctx ends or release is called. wake
	// holds at most one pending wake-up; it also fires when events may have been lost.
	// Returns ENOTFOUND for an id that is not a conversation id.
	Watch(ctx context.Context, conversationID string) (wake <-chan struct{}, release func(), err error)
}
