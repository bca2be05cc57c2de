package interop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/parley-dev/parley"
)

// recentWindow is how far back a reference keeps context "recent" when a history is
// fitted into a budget: a document or MCP resource that none of the newest
// recentWindow messages is or mentions goes first.
const recentWindow = 10

// Reasons a message is left out, as reported.
const (
	reasonUnknown     = "a message of a type this Parley does not know: nothing an LLM API takes"
	reasonHidden      = "hidden from LLMs"
	reasonDeleted     = "deleted: a tombstone"
	reasonUnreadFile  = "a file reference that has not been read (or could not be): nothing to send"
	reasonNoImage     = "an image the provider cannot be given (a file path, or the assistant's) with no recognized text"
	reasonStaleDoc    = "context not referenced by the newest messages, dropped first to fit maxTokens"
	reasonOldest      = "among the oldest messages, dropped to fit maxTokens"
	reasonRecentDoc   = "context dropped last to fit maxTokens, after every older turn"
	reasonUserFirst   = "dropped with the older turns so that the history starts with a user turn"
	noResultText      = "No result was recorded for this tool call."
	maxListedProblems = 5
)

// unit is what a budget drops as a whole: one message, or a tool request with the
// results of its calls (never separated).
type unit struct {
	msgs     []parley.Message
	tokens   int
	system   bool // SUPERVISOR text: system instructions, never dropped
	context  bool // a document or MCP resource
	userSide bool // the user's side speaks first in it
	dropped  bool
}

// plan chooses what an LLM sees of a history and in what order: no system control or
// unknown message, nothing without content, every tool request followed by the results
// of its calls, and, with a budget, the oldest context left out. What it leaves out or
// repairs goes in rep.
func plan(msgs []parley.Message, opts parley.TranscriptOptions, rep *parley.TranscriptReport) ([]parley.Message, error) {
	var visible []parley.Message
	controls := 0
	for _, m := range msgs {
		if meta := m.Meta(); meta.DeletedAt != nil || meta.Hidden {
			reason := reasonHidden
			if meta.DeletedAt != nil {
				reason = reasonDeleted
			}
			dropMessage(rep, m, reason)
			continue
		}
		switch m := m.(type) {
		case *parley.SystemControlMessage:
			controls++ // seed 003: never sent to an LLM
			continue
		case *parley.UnknownMessage:
			dropMessage(rep, m, reasonUnknown)
			continue
		case *parley.FileReferenceMessage:
			if _, ok := parley.ContextText(m); !ok {
				dropMessage(rep, m, reasonUnreadFile)
				continue
			}
		case *parley.ImageMessage:
			if asImage, text := m.LLMContent(); !asImage && text == "" {
				dropMessage(rep, m, reasonNoImage)
				continue
			}
		}
		visible = append(visible, m)
	}
	if controls > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("system control events are never sent to an LLM (%d)", controls))
	}
	units, err := pairTools(visible, opts.Repair, rep)
	if err != nil {
		return nil, err
	}
	total := systemTokens(opts.System)
	for _, u := range units {
		total += u.tokens
	}
	if opts.MaxTokens != nil && total > *opts.MaxTokens {
		if total, err = fit(units, total, *opts.MaxTokens, rep); err != nil {
			return nil, err
		}
	}
	rep.EstimatedTokens = total
	var kept []parley.Message
	for _, u := range units {
		if !u.dropped {
			kept = append(kept, u.msgs...)
		}
	}
	return kept, nil
}

func systemTokens(system string) int {
	if strings.TrimSpace(system) == "" {
		return 0
	}
	return messageOverhead + EstimateText(system)
}

func dropMessage(rep *parley.TranscriptReport, m parley.Message, reason string) {
	meta := m.Meta()
	if meta.ID == "" {
		return // made up by a repair: nothing stored to report
	}
	rep.Dropped = append(rep.Dropped, parley.TranscriptDrop{MessageID: meta.ID, Position: meta.Position, Label: m.Label(), Reason: reason})
}

// pairTools groups each tool request with the results of its calls, in call order,
// wherever the results were stored after it. A call without a result, or a result
// without an earlier call, is an error unless repair: then a call the history ends with
// is dropped (the model can make it again), any other is closed with an error result,
// and a result without a call is dropped; each repair is reported. A denied call
// without a result is always closed with a result saying it was denied: that is what
// happened, not a repair.
func pairTools(msgs []parley.Message, repair bool, rep *parley.TranscriptReport) ([]*unit, error) {
	type callRef struct {
		req  *parley.ToolRequestMessage
		call parley.ToolCall
	}
	calls := make(map[string]callRef)
	results := make(map[string]*parley.ToolResultMessage)
	orphans := make(map[*parley.ToolResultMessage]bool)
	var problems []string
	for _, m := range msgs {
		switch m := m.(type) {
		case *parley.ToolRequestMessage:
			for _, c := range m.ToolCalls {
				calls[c.ID] = callRef{req: m, call: c}
			}
		case *parley.ToolResultMessage:
			if _, ok := calls[m.ToolCallID]; ok && results[m.ToolCallID] == nil {
				results[m.ToolCallID] = m
				continue
			}
			orphans[m] = true
			problems = append(problems, fmt.Sprintf("the tool result at position %d answers no earlier tool call %q", m.Position, m.ToolCallID))
		}
	}
	for _, m := range msgs {
		if r, ok := m.(*parley.ToolRequestMessage); ok {
			for _, c := range r.ToolCalls {
				if results[c.ID] == nil && c.ApprovalStatus != parley.ApprovalDenied {
					problems = append(problems, fmt.Sprintf("tool call %q (%s) at position %d has no result", c.ID, c.Name, r.Position))
				}
			}
		}
	}
	if len(problems) > 0 && !repair {
		listed := problems
		if len(listed) > maxListedProblems {
			listed = append(listed[:maxListedProblems:maxListedProblems], fmt.Sprintf("and %d more", len(problems)-maxListedProblems))
		}
		return nil, parley.Errorf(parley.EINVALID,
			"the history cannot be sent to an LLM as it is: %s. Export with repair: true to close unanswered calls with an error result (or drop one the history ends with) and drop results without a call",
			strings.Join(listed, "; "))
	}
	var units []*unit
	for i, m := range msgs {
		switch m := m.(type) {
		case *parley.ToolResultMessage:
			if orphans[m] {
				rep.Repairs = append(rep.Repairs, fmt.Sprintf("dropped the tool result at position %d: it answers no earlier tool call %q", m.Position, m.ToolCallID))
				dropMessage(rep, m, "a tool result without its call (repair)")
			}
			continue // placed with its request
		case *parley.ToolRequestMessage:
			if u := requestUnit(m, results, trailing(msgs, i), rep); u != nil {
				units = append(units, u)
			}
			continue
		}
		units = append(units, newUnit(m))
	}
	return units, nil
}

// trailing reports whether nothing but tool results follows msgs[i]: the history ends
// with that request.
func trailing(msgs []parley.Message, i int) bool {
	for _, m := range msgs[i+1:] {
		if _, ok := m.(*parley.ToolResultMessage); !ok {
			return false
		}
	}
	return true
}

func requestUnit(req *parley.ToolRequestMessage, results map[string]*parley.ToolResultMessage, last bool, rep *parley.TranscriptReport) *unit {
	var answered []parley.ToolCall
	var tail []parley.Message
	for _, c := range req.ToolCalls {
		res := results[c.ID]
		switch {
		case res != nil:
		case c.ApprovalStatus == parley.ApprovalDenied:
			res = madeUpResult(req, c, parley.DenialText(c.Decision))
			rep.Notes = append(rep.Notes, fmt.Sprintf("the denied tool call %q (%s) at position %d is sent with a result saying it was denied", c.ID, c.Name, req.Position))
		case last:
			rep.Repairs = append(rep.Repairs, fmt.Sprintf("dropped the unanswered tool call %q (%s) at position %d, which the history ends with: the model can make it again", c.ID, c.Name, req.Position))
			continue
		default:
			res = madeUpResult(req, c, noResultText)
			rep.Repairs = append(rep.Repairs, fmt.Sprintf("closed the unanswered tool call %q (%s) at position %d with an error result saying no result was recorded", c.ID, c.Name, req.Position))
		}
		answered = append(answered, c)
		tail = append(tail, res)
	}
	var head parley.Message = req
	switch {
	case len(answered) == len(req.ToolCalls):
	case len(answered) > 0:
		c := *req
		c.ToolCalls = answered
		head = &c
	case strings.TrimSpace(req.Text()) != "":
		// Without its calls the request is what the assistant said.
		head = &parley.TextMessage{MessageMeta: req.MessageMeta, Body: req.Body}
		head.Meta().Role = parley.RoleAssistant
	default:
		dropMessage(rep, req, "a tool request whose only calls were unanswered (repair)")
		return nil
	}
	u := newUnit(head)
	for _, r := range tail {
		u.msgs = append(u.msgs, r)
		u.tokens += EstimateTokens(r)
	}
	return u
}

// madeUpResult is an error result for a call that has none, made for the export only.
func madeUpResult(req *parley.ToolRequestMessage, c parley.ToolCall, text string) *parley.ToolResultMessage {
	return &parley.ToolResultMessage{
		MessageMeta: parley.MessageMeta{Role: parley.RoleResult, ConversationID: req.ConversationID, Position: req.Position},
		Body:        parley.TextBody(text), ToolCallID: c.ID, ToolName: c.Name, Status: parley.ToolError,
		Error: &parley.ToolErrorDetail{Message: text},
	}
}

func newUnit(m parley.Message) *unit {
	u := &unit{msgs: []parley.Message{m}, tokens: EstimateTokens(m)}
	switch m := m.(type) {
	case *parley.TextMessage:
		u.system = m.Role == parley.RoleSupervisor
		u.userSide = m.Role == parley.RoleUser
	case *parley.ImageMessage:
		u.userSide = m.Role == parley.RoleUser
	case *parley.FileReferenceMessage, *parley.MCPResourceMessage:
		u.context, u.userSide = true, true
	}
	return u
}

// fit drops units until the history fits budget: first context that the newest
// messages neither are nor mention, least recently used first; then conversation
// turns, oldest first; then, if it must, the remaining context, least recently used
// first. SUPERVISOR instructions and the newest turn (the last user prompt and what
// follows it) are never dropped; when they alone do not fit, the budget is refused.
// Returns the new total.
func fit(units []*unit, total, budget int, rep *parley.TranscriptReport) (int, error) {
	// The newest turn is the last user prompt and what follows it; without a prompt,
	// the last message. It is never dropped.
	newest := -1
	for i, u := range units {
		if u.userSide && !u.context {
			newest = i
		}
	}
	for i := len(units) - 1; newest < 0 && i >= 0; i-- {
		if !units[i].system {
			newest = i
		}
	}
	drop := func(u *unit, reason string) {
		u.dropped = true
		total -= u.tokens
		for _, m := range u.msgs {
			dropMessage(rep, m, reason)
		}
	}
	// Positions of the messages in order, to find what is recent and what mentions what.
	var flat []parley.Message
	for _, u := range units {
		flat = append(flat, u.msgs...)
	}
	recentFrom := 0
	if n := len(flat); n > recentWindow {
		recentFrom = flat[n-recentWindow].Meta().Position
	}
	type candidate struct {
		u       *unit
		lastUse int
	}
	var stale, recent []candidate
	for i, u := range units {
		if !u.context || i >= newest {
			continue
		}
		last := u.msgs[0].Meta().Position
		if key := contextKey(u.msgs[0]); key != "" {
			for _, m := range flat {
				if p := m.Meta().Position; p > last && strings.Contains(mentionText(m), key) {
					last = p
				}
			}
		}
		if last < recentFrom {
			stale = append(stale, candidate{u, last})
		} else {
			recent = append(recent, candidate{u, last})
		}
	}
	byUse := func(a, b candidate) int { return a.lastUse - b.lastUse }
	slices.SortStableFunc(stale, byUse)
	slices.SortStableFunc(recent, byUse)
	for _, c := range stale {
		if total <= budget {
			return total, nil
		}
		drop(c.u, reasonStaleDoc)
	}
	droppedTurns := false
	for i, u := range units {
		if total <= budget {
			break
		}
		if u.system || u.context || u.dropped || i >= newest {
			continue
		}
		drop(u, reasonOldest)
		droppedTurns = true
	}
	for _, c := range recent {
		if total <= budget {
			break
		}
		drop(c.u, reasonRecentDoc)
	}
	if total > budget {
		return 0, parley.Errorf(parley.EINVALID,
			"maxTokens: %d is too small: the system prompt, SUPERVISOR instructions and the newest turn alone take about %d tokens", budget, total)
	}
	if droppedTurns {
		// A history cut in the middle of an exchange reads as the assistant speaking
		// first; cut at the next user turn instead, when there is one.
		for i, u := range units {
			if u.system || u.dropped || u.context {
				continue
			}
			if u.userSide || !slices.ContainsFunc(units[i+1:], func(v *unit) bool { return !v.dropped && v.userSide && !v.context }) {
				break
			}
			drop(u, reasonUserFirst)
		}
	}
	return total, nil
}

// contextKey is what a later message mentions to reference a context message.
func contextKey(m parley.Message) string {
	switch m := m.(type) {
	case *parley.MCPResourceMessage:
		return m.ResourceURI
	case *parley.FileReferenceMessage:
		return m.Path
	}
	return ""
}

// mentionText is the text of a message in which a reference to context can appear.
func mentionText(m parley.Message) string {
	switch m := m.(type) {
	case *parley.ToolRequestMessage:
		var b strings.Builder
		b.WriteString(m.Text())
		for _, c := range m.ToolCalls {
			b.Write(c.Arguments)
		}
		return b.String()
	case *parley.ToolResultMessage:
		return m.ResultText()
	case parley.TextBearing:
		return m.Text()
	}
	return ""
}
