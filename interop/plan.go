package interop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/parley-dev/parley"
)

// Reasons a message is left out, as reported.
const (
	reasonUnknown     = "a message of a type this Parley does not know: nothing an LLM API takes"
	reasonHidden      = "hidden from LLMs"
	reasonDeleted     = "deleted: a tombstone"
	reasonUnreadFile  = "a file reference that has not been read (or could not be): nothing to send"
	reasonNoImage     = "an image the provider cannot be given (a file path, or the assistant's) with no recognized text"
	reasonStaleDoc    = "context before the cut that no later message mentions, dropped with the oldest turns to fit maxTokens"
	reasonOldest      = "before the cut: among the oldest messages, dropped to fit maxTokens"
	reasonRecentDoc   = "context mentioned after the cut, dropped last to fit maxTokens"
	noResultText      = "No result was recorded for this tool call."
	maxListedProblems = 5
)

// unit is what a budget drops as a whole: one message, or a tool request with the
// results of its calls (never separated).
type unit struct {
	msgs     []parley.Message
	first    [1]parley.Message // msgs' first backing: most units are one message
	tokens   int
	system   bool // SUPERVISOR text or the compaction the transcript starts at: never dropped
	context  bool // a document or MCP resource
	userSide bool // the user's side speaks first in it
	dropped  bool
}

// plan chooses what an LLM sees of a history and in what order: from the newest
// compaction the format takes, no system control or unknown message, nothing without content, images as opts.Images says, every tool
// request followed by the results of its calls, and, with a budget, the oldest context
// left out at a stable cut; with opts.After, only the part of that transcript from the
// first message stored after it. What it leaves out or repairs goes in rep. seesImages
// looks a model up in the table of vision models (ImagesForModel).
func plan(msgs []parley.Message, format parley.TranscriptFormat, opts parley.TranscriptOptions, seesImages VisionLookup,
	rep *parley.TranscriptReport) ([]parley.Message, error) {
	asText, err := imagesAsText(opts, seesImages)
	if err != nil {
		return nil, err
	}
	msgs = startAtCompaction(msgs, format, rep)
	visible := make([]parley.Message, 0, len(msgs))
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
			if text := m.LLMText(); asText && text != "" {
				visible = append(visible, textOnly(m))
				continue
			}
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
		var cut int
		if total, cut, err = fit(units, total, *opts.MaxTokens, rep); err != nil {
			return nil, err
		}
		if cut > 0 || rep.CutPosition == 0 {
			rep.CutPosition = units[cut].msgs[0].Meta().Position
		}
	}
	rep.EstimatedTokens = total
	var kept []parley.Message
	if len(units) > 0 {
		kept = make([]parley.Message, 0, len(visible))
	}
	for _, u := range units {
		if !u.dropped {
			kept = append(kept, u.msgs...)
		}
	}
	for _, m := range kept {
		rep.EndPosition = max(rep.EndPosition, m.Meta().Position)
	}
	if opts.After != nil {
		from := slices.IndexFunc(kept, func(m parley.Message) bool { return m.Meta().Position > *opts.After })
		if from < 0 {
			from = len(kept)
		}
		kept = kept[from:]
		// The report is of this increment: the earlier export, which it continues,
		// reported the rest (and sent the system prompt). So it needs nothing read from
		// before the cursor (see Service.increment).
		rep.EstimatedTokens = estimateAll(kept)
		rep.Dropped = slices.DeleteFunc(rep.Dropped, func(d parley.TranscriptDrop) bool { return d.Position <= *opts.After })
	}
	return kept, nil
}

// startAtCompaction returns msgs from the newest compaction format takes: the compaction
// first, then every message it does not cover, in order. The messages it covers and the
// other compactions are left out (and said to be, in rep); the history stays as it is.
func startAtCompaction(msgs []parley.Message, format parley.TranscriptFormat, rep *parley.TranscriptReport) []parley.Message {
	var chosen *parley.CompactionMessage
	for i := len(msgs) - 1; i >= 0 && chosen == nil; i-- {
		if c, ok := msgs[i].(*parley.CompactionMessage); ok && c.ValidFor(format) {
			chosen = c
		}
	}
	out := make([]parley.Message, 0, len(msgs))
	if chosen != nil {
		out = append(out, chosen)
		rep.CutPosition = chosen.Position
	}
	covered := 0
	for _, m := range msgs {
		c, isCompaction := m.(*parley.CompactionMessage)
		switch {
		case c != nil && c == chosen:
		case chosen != nil && m.Meta().Position <= chosen.Covers():
			covered++
		case isCompaction:
			dropMessage(rep, m, fmt.Sprintf("a compaction %s does not take (its provider's output goes only to its own API)", format))
		default:
			out = append(out, m)
		}
	}
	if chosen != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the transcript starts at the compaction at position %d, which stands in for the %d messages it covers (positions 1-%d; they stay in the history)",
			chosen.Position, covered, chosen.Covers()))
	}
	return out
}

// VisionLookup says whether a model sees images, and whether the model is known at all.
type VisionLookup func(model string) (sees, known bool)

// imagesAsText says whether recognized images go to the LLM as their text.
func imagesAsText(opts parley.TranscriptOptions, seesImages VisionLookup) (bool, error) {
	switch opts.Images {
	case "", parley.ImagesAsSent:
		return false, nil
	case parley.ImagesAsText:
		return true, nil
	case parley.ImagesForModel:
		if strings.TrimSpace(opts.Model) == "" {
			return false, parley.Errorf(parley.EINVALID, "model: images: FOR_MODEL needs the model the transcript is for")
		}
		if seesImages == nil {
			return false, parley.Errorf(parley.EINVALID, "images: FOR_MODEL is not available: this server has no table of vision models")
		}
		sees, known := seesImages(opts.Model)
		if !known {
			return false, parley.Errorf(parley.EINVALID,
				"model: %q is not in the table of vision models; add it to vision.models, or give images: AS_SENT or AS_TEXT", opts.Model)
		}
		return !sees, nil
	}
	return false, parley.Errorf(parley.EINVALID, "images: %q is not one of %s", opts.Images, "AS_SENT, AS_TEXT, FOR_MODEL")
}

// textOnly is a copy of an image, for one export, that goes as its recognized text: the
// copy has no bytes or URL to send (LLMContent then gives its text).
func textOnly(m *parley.ImageMessage) *parley.ImageMessage {
	c := *m
	c.Source = parley.ImageSource{Kind: m.Source.Kind, FilePath: m.Source.FilePath}
	return &c
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
	// Sized for a history of calls and results: a map grown as it fills copies its
	// entries at every doubling.
	calls := make(map[string]bool, len(msgs)/2)
	results := make(map[string]*parley.ToolResultMessage, len(msgs)/2)
	orphans := make(map[*parley.ToolResultMessage]bool)
	var problems []string
	for _, m := range msgs {
		switch m := m.(type) {
		case *parley.ToolRequestMessage:
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
		case *parley.ToolResultMessage:
			if calls[m.ToolCallID] && results[m.ToolCallID] == nil {
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
	units := make([]*unit, 0, len(msgs))
	slab := make([]unit, len(msgs)) // the units, one allocation for all: at most one a message
	for i, m := range msgs {
		switch m := m.(type) {
		case *parley.ToolResultMessage:
			if orphans[m] {
				rep.Repairs = append(rep.Repairs, fmt.Sprintf("dropped the tool result at position %d: it answers no earlier tool call %q", m.Position, m.ToolCallID))
				dropMessage(rep, m, "a tool result without its call (repair)")
			}
			continue // placed with its request
		case *parley.ToolRequestMessage:
			if u := requestUnit(&slab[len(units)], m, results, trailing(msgs, i), rep); u != nil {
				units = append(units, u)
			}
			continue
		}
		units = append(units, slab[len(units)].init(m))
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

// requestUnit makes req's unit in u, the request and its results, nil when the request
// is dropped.
func requestUnit(u *unit, req *parley.ToolRequestMessage, results map[string]*parley.ToolResultMessage, last bool, rep *parley.TranscriptReport) *unit {
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
	u.init(head)
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

// init makes u the unit of m alone, and returns it.
func (u *unit) init(m parley.Message) *unit {
	*u = unit{first: [1]parley.Message{m}, tokens: EstimateTokens(m)}
	u.msgs = u.first[:]
	switch m := m.(type) {
	case *parley.TextMessage:
		u.system = m.Role == parley.RoleSupervisor
		u.userSide = m.Role == parley.RoleUser
	case *parley.ImageMessage:
		u.userSide = m.Role == parley.RoleUser
	case *parley.FileReferenceMessage, *parley.MCPResourceMessage:
		u.context, u.userSide = true, true
	case *parley.CompactionMessage:
		u.system = true // it stands for the start of the history: a budget never drops it
	}
	return u
}

// cutSteps is how finely a budget's cut moves: the places a history may be cut are the
// user turns where the tokens before them pass a multiple of budget / cutSteps. They
// depend only on what comes before them, so appending turns never moves one, and the cut
// jumps from one to the next only after about budget / cutSteps tokens were appended:
// the exported prefix, which providers cache, changes that rarely. The price is that a
// cut history fills between (cutSteps-1)/cutSteps of the budget and all of it.
const cutSteps = 4

// fit cuts the history so that it fits budget: it drops every unit before the first cut
// point (see cutSteps) after which the rest fits, except SUPERVISOR instructions, which
// are never dropped, and documents and MCP resources that a message after the cut
// mentions. When even the newest turn (the last user prompt and what follows it) does
// not fit with them, those documents go too, least recently mentioned first; when the
// instructions and the newest turn alone do not fit, the budget is refused. Returns the
// new total and the index of the unit the history now starts at.
func fit(units []*unit, total, budget int, rep *parley.TranscriptReport) (int, int, error) {
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
	if newest < 0 {
		return 0, 0, parley.Errorf(parley.EINVALID,
			"maxTokens: %d is too small: the system prompt and SUPERVISOR instructions alone take about %d tokens", budget, total)
	}
	step := max(budget/cutSteps, 1)
	var cuts []int
	before, level := 0, -1
	for i, u := range units[:newest+1] {
		if u.userSide && !u.context || i == newest {
			if lv := before / step; lv > level || i == newest {
				cuts = append(cuts, i)
				level = lv
			}
		}
		if !u.system {
			before += u.tokens
		}
	}
	// lastUse is the position of the last message at or after units[from] that is or
	// mentions a context unit, 0 when none does.
	lastUse := func(c *unit, from int) int {
		key := contextKey(c.msgs[0])
		if key == "" {
			return 0
		}
		last := 0
		for _, u := range units[from:] {
			for _, m := range u.msgs {
				if p := m.Meta().Position; p > last && strings.Contains(mentionText(m), key) {
					last = p
				}
			}
		}
		return last
	}
	type kept struct {
		u       *unit
		lastUse int
	}
	var (
		cut     int
		mention []kept
		size    int
	)
	for _, c := range cuts {
		cut, mention, size = c, nil, total
		for _, u := range units[:c] {
			switch {
			case u.system:
			case u.context && lastUse(u, c) > 0:
				mention = append(mention, kept{u, lastUse(u, c)})
			default:
				size -= u.tokens
			}
		}
		if size <= budget {
			break
		}
	}
	drop := func(u *unit, reason string) {
		u.dropped = true
		total -= u.tokens
		for _, m := range u.msgs {
			dropMessage(rep, m, reason)
		}
	}
	for _, u := range units[:cut] {
		switch {
		case u.system || slices.ContainsFunc(mention, func(k kept) bool { return k.u == u }):
		case u.context:
			drop(u, reasonStaleDoc)
		default:
			drop(u, reasonOldest)
		}
	}
	slices.SortStableFunc(mention, func(a, b kept) int { return a.lastUse - b.lastUse })
	for _, k := range mention {
		if total <= budget {
			break
		}
		drop(k.u, reasonRecentDoc)
	}
	if total > budget {
		return 0, 0, parley.Errorf(parley.EINVALID,
			"maxTokens: %d is too small: the system prompt, SUPERVISOR instructions and the newest turn alone take about %d tokens", budget, total)
	}
	return total, cut, nil
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
