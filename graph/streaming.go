package graph

import (
	"context"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/model"
	"github.com/parley-dev/parley/graph/transport"
)

var errNoLive = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Streaming messages are not available on this server."}

func startFromInput(in *model.StartMessageInput) parley.StartMessage {
	var s parley.StartMessage
	if in == nil {
		return s
	}
	if in.Role != nil {
		s.Role = *in.Role
	}
	s.ClientID, s.Provider, s.Model = deref(in.ClientMessageID), deref(in.Provider), deref(in.Model)
	s.Place = parley.Placement{ParentID: deref(in.ParentID), SiblingOf: deref(in.SiblingOf)}
	if in.LeaseSeconds != nil {
		// Out of range (0 included) is refused by parley.CleanStart, named.
		s.Lease = time.Duration(*in.LeaseSeconds) * time.Second
		if *in.LeaseSeconds == 0 {
			s.Lease = -1
		}
	}
	return s
}

func deltasFromInput(in []*model.MessageDeltaInput) []parley.Delta {
	out := make([]parley.Delta, len(in))
	for i, d := range in {
		out[i] = parley.Delta{Kind: d.Kind, Index: d.Index, Text: d.Text,
			ToolCallID: deref(d.ToolCallID), ToolName: deref(d.ToolName), PartIndex: d.PartIndex, ItemID: deref(d.ItemID)}
	}
	return out
}

func deltasToModel(in []parley.Delta) []*model.MessageDelta {
	out := make([]*model.MessageDelta, len(in))
	for i, d := range in {
		out[i] = &model.MessageDelta{Kind: d.Kind, Index: d.Index, Text: d.Text,
			ToolCallID: optional(d.ToolCallID), ToolName: optional(d.ToolName), PartIndex: d.PartIndex, ItemID: optional(d.ItemID)}
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func usageFromInput(in *model.UsageInput) parley.Usage {
	if in == nil {
		return parley.Usage{}
	}
	n := func(p *int) int64 {
		if p == nil {
			return 0
		}
		return int64(*p)
	}
	return parley.Usage{InputTokens: n(in.InputTokens), OutputTokens: n(in.OutputTokens), CachedInputTokens: n(in.CachedInputTokens),
		CacheCreationInputTokens: n(in.CacheCreationInputTokens), ReasoningTokens: n(in.ReasoningTokens)}
}

// provenanceFromInput converts addMessage's provenance; nil when none was given.
func provenanceFromInput(in *model.ProvenanceInput) *parley.Provenance {
	if in == nil {
		return nil
	}
	p := &parley.Provenance{Provider: deref(in.Provider), Model: deref(in.Model), ResponseID: deref(in.ResponseID),
		FinishReason: deref(in.FinishReason), Usage: usageFromInput(in.Usage)}
	if in.TimeToFirstTokenMs != nil {
		p.TimeToFirstTokenMs = int64(*in.TimeToFirstTokenMs)
	}
	if in.DurationMs != nil {
		p.DurationMs = int64(*in.DurationMs)
	}
	return p
}

func ackModel(messageID string, a parley.Ack) *model.AppendAck {
	return &model.AppendAck{MessageID: messageID, Seq: a.Seq, LeaseUntil: a.LeaseUntil}
}

// forwardStream runs a messageStream subscription, as forward does the others: over a
// websocket the operation drives it, polling the subscription into a one-slot channel
// on every wake-up, and the events' identities let the transport encode an event once
// for all the subscribers of the conversation at the same cursor (at a stream's tail,
// all of them) instead of running gqlgen's execution once per subscriber per append.
// Elsewhere (SSE) one goroutine owns the channel gqlgen reads, takes each event from the
// subscription at the client's pace and sends it, never blocking past ctx.
func (r *Resolver) forwardStream(ctx context.Context, s parley.StreamSubscription) <-chan *model.MessageStreamEvent {
	if target := transport.PushTargetFrom(ctx); target != nil {
		p := &streamPush{s: s, ch: make(chan *model.MessageStreamEvent, 1)}
		wake, ready := target.Attach(p)
		s.OnWake(wake)
		if r, ok := s.(parley.ReadyWaker); ok {
			r.OnReady(ready)
		}
		return p.ch
	}
	return pump(r, ctx, s.Next, streamEventModel)
}

// streamPush is a messageStream subscription's events, attached to its websocket
// operation (transport.PushSource).
type streamPush struct {
	s    parley.StreamSubscription
	ch   chan *model.MessageStreamEvent
	next parley.StreamEvent // polled, not yet pushed; only the operation's drain touches it
}

func (p *streamPush) Poll(ctx context.Context) (any, bool, error) {
	ev, id, ok, err := p.s.Poll(ctx)
	if !ok || err != nil {
		return nil, false, err
	}
	p.next = ev
	return id, true, nil
}

func (p *streamPush) Push() {
	p.ch <- streamEventModel(p.next) // the operation takes it before it polls again
	p.next = parley.StreamEvent{}
}

func streamEventModel(ev parley.StreamEvent) *model.MessageStreamEvent {
	out := &model.MessageStreamEvent{Cursor: ev.Cursor.String(), Message: ev.Message}
	if d := ev.Delta; d != nil {
		out.Delta = &model.MessageDeltaEvent{MessageID: d.MessageID, Position: d.Depth, Seq: d.Seq, Deltas: deltasToModel(d.Deltas)}
	}
	return out
}
