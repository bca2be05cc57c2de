package parley

import (
	"context"
	"database/sql/driver"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The rules here say how a message is written while it streams: started (it takes its
// position at once), grown by appends of deltas, each append numbered, then ended
// once, completed, aborted, failed or interrupted.

// MessageStatus says where a message stands: STREAMING while it is written, then how
// it ended. Its Go value is the lower-case word stored in the database; the API spells
// it in upper case. The zero value reads as COMPLETED: every message added whole is.
type MessageStatus string

// The statuses.
const (
	StatusStreaming   MessageStatus = "streaming"
	StatusCompleted   MessageStatus = "completed"
	StatusAborted     MessageStatus = "aborted"
	StatusFailed      MessageStatus = "failed"
	StatusInterrupted MessageStatus = "interrupted"
)

// Normal returns s, with the zero value as StatusCompleted.
func (s MessageStatus) Normal() MessageStatus {
	if s == "" {
		return StatusCompleted
	}
	return s
}

// String returns the API spelling.
func (s MessageStatus) String() string { return strings.ToUpper(string(s.Normal())) }

// Value stores the status as its lower-case word.
func (s MessageStatus) Value() (driver.Value, error) { return string(s.Normal()), nil }

// Live is what a message has while it streams and how it ended: part of every
// message's meta (MessageMeta.Live).
type Live struct {
	// Status is the zero value (COMPLETED) for a message added whole.
	Status MessageStatus
	// Reason says why a message ended other than COMPLETED: the abort's reason, the
	// failure's error, or that the writer went away.
	Reason string
	// ClientID is the client's id for the message: the same id again in the same
	// conversation is the same message ("" when none was given).
	ClientID string
	// Seq is the number of the last append acknowledged, while the message streams (0
	// before the first).
	Seq int
	// Provenance says who produced the message; nil when unknown.
	Provenance *Provenance
}

// MessageStatus returns the message's status (COMPLETED for a message added whole).
func (m *MessageMeta) MessageStatus() MessageStatus { return m.Live.Status.Normal() }

// StatusReason returns why the message ended as it did, nil when there is nothing to say.
func (m *MessageMeta) StatusReason() *string { return nonEmpty(&m.Live.Reason) }

// ClientMessageID returns the client's id for the message, nil when none was given.
func (m *MessageMeta) ClientMessageID() *string { return nonEmpty(&m.Live.ClientID) }

// nonEmpty returns s, the field itself, or nil when it is empty. The getters built on it
// hand GraphQL's writers a pointer to the message's own field, not to a copy: a copy
// escapes to the heap, several allocations per message of every page read. Callers
// read through the pointer and never write.
func nonEmpty(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

// Limits of streaming writes.
const (
	// MaxClientMessageIDBytes bounds a client message id.
	MaxClientMessageIDBytes = 200
	// MaxDeltasPerAppend bounds the deltas (or provider events) of one append.
	MaxDeltasPerAppend = 1000
	// MaxAppendBytes bounds the text of one append's deltas (or its events' JSON).
	MaxAppendBytes = 1 << 20
	// MaxReasonBytes bounds an abort's reason or a failure's error.
	MaxReasonBytes = 4000
	// DefaultLease is how long a streaming message waits for its writer's next append
	// or heartbeat before it is closed as INTERRUPTED, when the writer says nothing.
	DefaultLease = 30 * time.Second
	// MinLease and MaxLease bound the lease a writer may ask for.
	MinLease = time.Second
	MaxLease = 10 * time.Minute
)

// CheckClientMessageID checks a client message id: "" (none) or up to
// MaxClientMessageIDBytes of printable text.
func CheckClientMessageID(id string) error {
	switch {
	case id == "":
		return nil
	case len(id) > MaxClientMessageIDBytes:
		return Errorf(EINVALID, "clientMessageId: %d bytes, at most %d", len(id), MaxClientMessageIDBytes)
	case strings.TrimSpace(id) == "":
		return Errorf(EINVALID, "clientMessageId: blank; leave it out or give an id")
	case strings.ContainsRune(id, 0):
		return Errorf(EINVALID, "clientMessageId: contains a NUL character")
	}
	return nil
}

// StartMessage is how a streaming message starts.
type StartMessage struct {
	// Role is the message's role: ASSISTANT (the default) or USER.
	Role     Role
	ClientID string
	Provider string
	Model    string
	// Lease is how long the message waits for the writer's next append or heartbeat
	// (DefaultLease when zero).
	Lease time.Duration
	// Place is where the message goes in the conversation's tree: a regenerated reply
	// is a sibling of the one it replaces.
	Place Placement
}

// CleanStart checks a start and applies its defaults. Returns EINVALID naming the field.
func CleanStart(s StartMessage) (StartMessage, error) {
	if s.Role == "" {
		s.Role = RoleAssistant
	}
	if s.Role != RoleAssistant && s.Role != RoleUser {
		return s, Errorf(EINVALID, "input.role: %s; a streaming message is ASSISTANT or USER", s.Role)
	}
	if err := CheckClientMessageID(s.ClientID); err != nil {
		return s, err
	}
	if err := CheckPlacement(s.Place); err != nil {
		return s, err
	}
	if s.Lease == 0 {
		s.Lease = DefaultLease
	}
	if s.Lease < MinLease || s.Lease > MaxLease {
		return s, Errorf(EINVALID, "input.leaseSeconds: %v; between %v and %v", s.Lease.Seconds(), MinLease.Seconds(), MaxLease.Seconds())
	}
	for field, v := range map[string]string{"input.provider": s.Provider, "input.model": s.Model} {
		if len(v) > 200 {
			return s, Errorf(EINVALID, "%s: %d bytes, at most 200", field, len(v))
		}
	}
	return s, nil
}

// CheckAppend decides an append numbered seq to a message in status with last
// acknowledged append last. An append at or below last was acknowledged before: it is
// a retry (duplicate), acknowledged again without writing. The next number is written;
// one further on would leave a gap and is refused, as is any append to a message that
// has ended. messageID names the message in errors.
func CheckAppend(messageID string, status MessageStatus, last, seq int) (duplicate bool, err error) {
	switch {
	case seq < 1:
		return false, Errorf(EINVALID, "seq: %d; appends are numbered from 1", seq)
	case seq <= last:
		return true, nil
	case status.Normal() != StatusStreaming:
		return false, Errorf(ECONFLICT, "message %s is %s, no longer streaming: nothing can be appended", messageID, status)
	case seq > last+1:
		return false, Errorf(EINVALID, "seq: %d, but the last append of message %s is %d; send %d next (an append is missing)", seq, messageID, last, last+1)
	}
	return false, nil
}

// CheckDeltas checks the size of one append's deltas.
func CheckDeltas(deltas []Delta) error {
	if len(deltas) == 0 {
		return Errorf(EINVALID, "deltas: empty; an append brings at least one delta")
	}
	if len(deltas) > MaxDeltasPerAppend {
		return Errorf(EINVALID, "deltas: %d, at most %d per append", len(deltas), MaxDeltasPerAppend)
	}
	n := 0
	for i, d := range deltas {
		n += len(d.Text) + len(d.ToolCallID) + len(d.ToolName) + len(d.ItemID)
		if n > MaxAppendBytes {
			return Errorf(EINVALID, "deltas[%d]: the append's text exceeds %d bytes", i, MaxAppendBytes)
		}
		if strings.ContainsRune(d.Text, 0) || strings.ContainsRune(d.ToolName, 0) || strings.ContainsRune(d.ToolCallID, 0) ||
			strings.ContainsRune(d.ItemID, 0) {
			return Errorf(EINVALID, "deltas[%d]: contains a NUL character", i)
		}
	}
	return nil
}

// Shape returns the draft with its text dropped: what Apply needs to check further
// deltas (the parts' kinds and item ids, the calls' ids, item ids and places), at a size that does not grow with the
// message.
func (dr *Draft) Shape() Draft {
	out := Draft{Body: Body{Parts: make([]Part, len(dr.Parts))}, ToolCalls: make([]ToolCall, len(dr.ToolCalls))}
	for i, p := range dr.Parts {
		out.Parts[i] = Part{Kind: p.Kind, ItemID: p.ItemID}
	}
	for i, c := range dr.ToolCalls {
		out.ToolCalls[i] = ToolCall{ID: c.ID, ItemID: c.ItemID, PartIndex: c.PartIndex}
	}
	out.textBytes, out.argBytes = dr.textBytes, append([]int(nil), dr.argBytes...)
	return out
}

// ApplyAll applies deltas in order, naming the delta at fault; on an error the draft
// may hold the deltas before it (apply to a copy to keep nothing).
func (dr *Draft) ApplyAll(deltas []Delta) error {
	for i, d := range deltas {
		if err := dr.Apply(d); err != nil {
			if e, ok := err.(*Error); ok {
				return Errorf(e.Code, "deltas[%d]: %s", i, e.Message)
			}
			return err
		}
	}
	return nil
}

// End is how a streaming message ends.
type End struct {
	Status MessageStatus
	// Reason is the abort's reason, the failure's error or why it was interrupted.
	Reason string
	// Provenance, when set, says what the writer knows at the end: its non-zero fields
	// replace those the message has.
	Provenance *Provenance
}

// CheckEnd checks an end given by a writer.
func CheckEnd(e End) error {
	switch e.Status {
	case StatusCompleted, StatusAborted, StatusFailed, StatusInterrupted:
	default:
		return Errorf(EINVALID, "status: %s is not how a message ends", e.Status)
	}
	if e.Status == StatusFailed && strings.TrimSpace(e.Reason) == "" {
		return Errorf(EINVALID, "error: empty; say why the message failed")
	}
	if len(e.Reason) > MaxReasonBytes {
		return Errorf(EINVALID, "reason: %d bytes, at most %d", len(e.Reason), MaxReasonBytes)
	}
	return nil
}

// CheckEnding decides whether a message in status may end as e: only a STREAMING
// message ends; ending it again the same way is a retry that changes nothing
// (again), any other end of an ended message is a CONFLICT.
func CheckEnding(messageID string, status MessageStatus, e End) (again bool, err error) {
	switch status.Normal() {
	case StatusStreaming:
		return false, nil
	case e.Status:
		return true, nil
	}
	return false, Errorf(ECONFLICT, "message %s is already %s; it cannot become %s", messageID, status, e.Status)
}

// Merge returns p with the non-zero fields of q over it.
func (p Provenance) Merge(q *Provenance) Provenance {
	if q == nil {
		return p
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&p.Provider, q.Provider)
	set(&p.Model, q.Model)
	set(&p.ResponseID, q.ResponseID)
	set(&p.FinishReason, q.FinishReason)
	if q.Usage != (Usage{}) {
		p.Usage = q.Usage
	}
	if q.TimeToFirstTokenMs != 0 {
		p.TimeToFirstTokenMs = q.TimeToFirstTokenMs
	}
	if q.DurationMs != 0 {
		p.DurationMs = q.DurationMs
	}
	return p
}

// IsZero reports whether p says nothing.
func (p Provenance) IsZero() bool { return p == Provenance{} }

// CheckProvenance checks the sizes of a provenance given by a client.
func CheckProvenance(p *Provenance) error {
	if p == nil {
		return nil
	}
	for field, v := range map[string]string{"provider": p.Provider, "model": p.Model, "responseId": p.ResponseID, "finishReason": p.FinishReason} {
		if len(v) > 200 {
			return Errorf(EINVALID, "provenance.%s: %d bytes, at most 200", field, len(v))
		}
	}
	u := p.Usage
	for field, v := range map[string]int64{"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens,
		"cachedInputTokens": u.CachedInputTokens, "cacheCreationInputTokens": u.CacheCreationInputTokens,
		"reasoningTokens": u.ReasoningTokens, "timeToFirstTokenMs": p.TimeToFirstTokenMs, "durationMs": p.DurationMs} {
		if v < 0 {
			return Errorf(EINVALID, "provenance.%s: %d; counts are not negative", field, v)
		}
	}
	return nil
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens, u.CachedInputTokens + v.CachedInputTokens,
		u.CacheCreationInputTokens + v.CacheCreationInputTokens, u.ReasoningTokens + v.ReasoningTokens}
}

// StreamFormat names a provider's stream format that a StreamAssembler reads.
type StreamFormat string

// The provider stream formats.
const (
	FormatOpenAIChat        StreamFormat = "OPENAI_CHAT"
	FormatAnthropicMessages StreamFormat = "ANTHROPIC_MESSAGES"
	FormatOpenAIResponses   StreamFormat = "OPENAI_RESPONSES"
)

// StreamAssembler assembles a provider's stream events into a message with the
// provider SDK's own accumulator, reporting the deltas each event brings
// (interop/openai.ChatStream, interop/anthropic.MessageStream).
type StreamAssembler interface {
	// AddJSON adds one event as the provider sent it. A refused event (EINVALID) changes
	// nothing.
	AddJSON(raw []byte) ([]Delta, error)
	// Provenance says what the events so far say of who produced the reply.
	Provenance() Provenance
}

// DeltaBatch is one acknowledged append of a streaming message: its number and deltas.
type DeltaBatch struct {
	MessageID string
	// Position is the message's store number (its Seq), which stream cursors count;
	// Depth its position along its branch, as the API shows it.
	Position int
	Depth    int
	Seq      int
	Deltas   []Delta
}

// Ack acknowledges an append (or a heartbeat): the number of the last append acknowledged
// and when the message's lease now runs out.
type Ack struct {
	Seq        int
	LeaseUntil time.Time
}

// LiveMessageService writes messages while they stream.
type LiveMessageService interface {
	// StartMessage stores an empty STREAMING message as the conversation's next one.
	// With a client id already used in the conversation it returns the stored message
	// and writes nothing (ECONFLICT when that message was not started the same way).
	// Returns ENOTFOUND, EINVALID.
	StartMessage(ctx context.Context, conversationID string, s StartMessage) (Message, error)
	// AppendDeltas appends one numbered batch of deltas (CheckAppend) and returns the
	// number of the last acknowledged append: durable when returned. Returns
	// ENOTFOUND, EINVALID (a gap, a delta that does not fit), ECONFLICT (ended).
	AppendDeltas(ctx context.Context, messageID string, seq int, deltas []Delta) (Ack, error)
	// AppendProviderEvents is AppendDeltas for a batch of the provider's own stream
	// events, assembled with its SDK's accumulator.
	AppendProviderEvents(ctx context.Context, messageID string, format StreamFormat, seq int, events []JSON) (Ack, error)
	// Heartbeat extends a streaming message's lease and returns when it now ends.
	// Returns ENOTFOUND, ECONFLICT (ended).
	Heartbeat(ctx context.Context, messageID string) (Ack, error)
	// EndMessage ends a streaming message, keeping what its acknowledged appends
	// brought. Returns ENOTFOUND, EINVALID (CheckEnd, or content a COMPLETED message
	// may not have), ECONFLICT (ended otherwise already).
	EndMessage(ctx context.Context, messageID string, e End) (Message, error)
	// ConversationUsage sums the usage of a conversation's messages.
	ConversationUsage(ctx context.Context, conversationID string) (Usage, error)
}

// StreamCursor is where a subscriber of a conversation's messages and deltas stands:
// every message up to Position delivered, and of those still streaming when delivered
// (Open, in ascending position), the appends up to Seq.
type StreamCursor struct {
	Position int
	Open     []OpenMessage
}

// OpenMessage is a streaming message a subscriber has, with the appends up to Seq.
type OpenMessage struct {
	Position int
	Seq      int
}

// String encodes the cursor for a client.
func (c StreamCursor) String() string {
	var sb strings.Builder
	sb.WriteString("s:")
	sb.WriteString(strconv.Itoa(c.Position))
	for _, o := range c.Open {
		sb.WriteString(":" + strconv.Itoa(o.Position) + "." + strconv.Itoa(o.Seq))
	}
	return cursorEncoding.EncodeToString([]byte(sb.String()))
}

// maxOpenInCursor bounds the streaming messages a cursor may hold.
const maxOpenInCursor = 100

// ParseStreamCursor reads a cursor made by StreamCursor.String, or a message cursor
// (MessageCursor: every message up to it, none open). Returns EINVALID naming field.
func ParseStreamCursor(field, cursor string) (StreamCursor, error) {
	if p, err := ParseMessageCursor(field, cursor); err == nil {
		return StreamCursor{Position: p}, nil
	}
	bad := Errorf(EINVALID, "%s: %q is not a message stream cursor", field, truncateForError(cursor))
	raw, err := cursorEncoding.DecodeString(cursor)
	if err != nil {
		return StreamCursor{}, bad
	}
	rest, ok := strings.CutPrefix(string(raw), "s:")
	if !ok {
		return StreamCursor{}, bad
	}
	fields := strings.Split(rest, ":")
	var c StreamCursor
	if c.Position, err = strconv.Atoi(fields[0]); err != nil || c.Position < 0 || len(fields) > maxOpenInCursor+1 {
		return StreamCursor{}, bad
	}
	last := 0
	for _, f := range fields[1:] {
		pos, seq, ok := strings.Cut(f, ".")
		if !ok {
			return StreamCursor{}, bad
		}
		var o OpenMessage
		if o.Position, err = strconv.Atoi(pos); err != nil || o.Position <= last || o.Position > c.Position {
			return StreamCursor{}, bad
		}
		if o.Seq, err = strconv.Atoi(seq); err != nil || o.Seq < 0 {
			return StreamCursor{}, bad
		}
		last = o.Position
		c.Open = append(c.Open, o)
	}
	return c, nil
}

// StreamRead is one read of a conversation for a subscriber at a StreamCursor: its
// open messages as they are now (Open, ascending position), the appends of those still
// streaming after the cursor's numbers (Batches, by message then number), and the
// messages after its position (New, ascending; a streaming one folded so far, its
// Live.Seq the last append folded).
type StreamRead struct {
	Open    []Message
	Batches []DeltaBatch
	New     []Message
}

// StreamEvent is what a subscriber receives: a whole message (added, caught up with,
// or ended) or one append of a streaming message, and the cursor just after it.
type StreamEvent struct {
	Cursor  StreamCursor
	Message Message
	Delta   *DeltaBatch
}

// Advance returns the events a subscriber at c gets from r, in order, each exactly
// once: the appends of its open messages it has not had, an open message again whole
// when it has ended (and it is no longer open), then the new messages whole (a
// streaming one opening at its number). r is not changed.
func (c StreamCursor) Advance(r StreamRead) []StreamEvent {
	var out []StreamEvent
	cur := StreamCursor{Position: c.Position, Open: slices.Clone(c.Open)}
	emit := func(m Message, d *DeltaBatch) {
		out = append(out, StreamEvent{Cursor: StreamCursor{Position: cur.Position, Open: slices.Clone(cur.Open)}, Message: m, Delta: d})
	}
	find := func(pos int) int {
		return slices.IndexFunc(cur.Open, func(o OpenMessage) bool { return o.Position == pos })
	}
	for _, m := range r.Open {
		pos := m.Meta().Seq
		i := find(pos)
		if i < 0 {
			continue
		}
		if m.Meta().Live.Status.Normal() != StatusStreaming {
			cur.Open = slices.Delete(cur.Open, i, i+1)
			emit(m, nil)
			continue
		}
		for k := range r.Batches {
			b := &r.Batches[k]
			if b.Position == pos && b.Seq > cur.Open[i].Seq {
				cur.Open[i].Seq = b.Seq
				emit(nil, b)
			}
		}
	}
	for _, m := range r.New {
		meta := m.Meta()
		if meta.Seq <= cur.Position {
			continue
		}
		cur.Position = meta.Seq
		if meta.Live.Status.Normal() == StatusStreaming {
			cur.Open = append(cur.Open, OpenMessage{Position: meta.Seq, Seq: meta.Live.Seq})
		}
		emit(m, nil)
	}
	return out
}

// AdvanceAppends returns the events a subscriber at c gets from bs, appends of its open
// messages known to follow its numbers without a gap (each message's in ascending
// number, messages in c's order): those after its numbers, each exactly once, as
// Advance gives them. Appends of messages c does not have open are skipped.
func (c StreamCursor) AdvanceAppends(bs []DeltaBatch) []StreamEvent {
	var out []StreamEvent
	cur := StreamCursor{Position: c.Position, Open: slices.Clone(c.Open)}
	for k := range bs {
		b := &bs[k]
		i := slices.IndexFunc(cur.Open, func(o OpenMessage) bool { return o.Position == b.Position })
		if i < 0 || b.Seq != cur.Open[i].Seq+1 {
			continue
		}
		cur.Open[i].Seq = b.Seq
		out = append(out, StreamEvent{Cursor: StreamCursor{Position: cur.Position, Open: slices.Clone(cur.Open)}, Delta: b})
	}
	return out
}

// LiveEventService streams a conversation's messages and the appends of those that
// stream, from one cursor.
type LiveEventService interface {
	// SubscribeStream registers for the conversation's messages after the cursor after
	// and the appends of its streaming messages, exactly once and in order, whichever
	// replica wrote them. Without a cursor it starts at the oldest message still
	// streaming (so that one is delivered whole, so far), else after the newest.
	// Returns ENOTFOUND for a missing conversation.
	SubscribeStream(ctx context.Context, conversationID string, after *StreamCursor) (StreamSubscription, error)
}

// StreamSubscription is a registered SubscribeStream.
type StreamSubscription interface {
	// Next waits for the next event. Errors as MessageStream.Next.
	Next(ctx context.Context) (StreamEvent, error)
	// Poll returns the next event if there is one (ok), reading the database when the
	// subscription has just started or been woken; it never waits. It also returns the
	// event's identity, comparable: subscriptions of one conversation given events of
	// the same identity were given equal events (they were at the same cursor and
	// shared the read), so one encoding of it serves them all. Errors as Next.
	Poll(ctx context.Context) (ev StreamEvent, id any, ok bool, err error)
	// OnWake sets a function to call whenever the subscription may have more: Poll
	// then. It is called from the goroutine that publishes events, so it must not
	// block. Set it before the first Poll.
	OnWake(func())
}
