package parley

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The rules of importing into a conversation that may hold an earlier import of the same
// source: what is checked before anything is read, which incoming messages are copies
// of stored ones, and when a stored reply grows. The store reads the facts (the source
// ids present, the stored user turns and results, the stored reply) in its transaction
// and applies these.

// PrepareImport validates and sanitizes every message of imp (Prepare) and checks that
// no two carry the same source id, before the database is touched: most bad imports
// fail here. It returns the source ids, in order. Errors name the message's origin.
func PrepareImport(imp *Import, lim Limits) ([]string, error) {
	c := NewImportChecker(lim)
	ids := make([]string, 0, len(imp.Messages))
	for _, im := range imp.Messages {
		if err := c.Check(im); err != nil {
			return nil, err
		}
		if id := im.Message.Meta().SourceID; id != "" {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// ImportChecker applies PrepareImport's rules one message at a time, for an import read
// as a stream.
type ImportChecker struct {
	lim  Limits
	seen map[string]string // source id -> origin
}

// NewImportChecker returns a checker for one import.
func NewImportChecker(lim Limits) *ImportChecker {
	return &ImportChecker{lim: lim, seen: make(map[string]string)}
}

// Check validates and sanitizes im's message (Prepare) and checks that no earlier
// message of the import carries its source id. Errors name the message's origin.
func (c *ImportChecker) Check(im ImportedMessage) error {
	if err := Prepare(im.Message, c.lim); err != nil {
		return WithOrigin(im.Origin, err)
	}
	if id := im.Message.Meta().SourceID; id != "" {
		if prev, dup := c.seen[id]; dup {
			return Errorf(EINVALID, "%s: source id %q is also the id of %s", im.Origin, id, prev)
		}
		c.seen[id] = im.Origin
	}
	return nil
}

// WithOrigin puts where a message came from (an ImportedMessage's Origin) in front of a
// user-facing error about it; internal errors are returned as they are.
func WithOrigin(origin string, err error) error {
	var perr *Error
	if origin == "" || !errors.As(err, &perr) || perr.Code == EINTERNAL {
		return err
	}
	return &Error{Code: perr.Code, Message: origin + ": " + perr.Message}
}

// ImportTitle is the title of the conversation an import creates: the one asked for,
// checked as any title is, or the source's, made to fit ("" when the import goes into an
// existing conversation, or the source's title is unusable).
func ImportTitle(target ImportTarget, imp *Import) (string, error) {
	if target.ConversationID != "" {
		return "", nil
	}
	if target.Title != "" {
		return CleanTitle(target.Title)
	}
	t, err := CleanText("title", imp.Title)
	if err != nil {
		return "", nil // a source's unusable title is no reason to refuse its history
	}
	t = strings.Join(strings.Fields(t), " ")
	if utf8.RuneCountInString(t) > MaxTitleLength {
		t = string([]rune(t)[:MaxTitleLength-1]) + "…"
	}
	return t, nil
}

// StoredCopies are the messages a conversation has that an import may bring again under
// other source ids: a resumed Claude Code session re-writes earlier turns with new record
// ids but the same times and text. A user's (or supervisor's) text or image with the same
// time and content as a stored one, and a result for a call that already has a result
// with the same text, are such copies. (A result with other text for an answered call
// is still refused, when it is stored.)
type StoredCopies struct {
	userTurns map[string]bool   // created_at and content of stored user-side text and images
	results   map[string]string // call id -> content of its stored result
}

// NewStoredCopies returns an empty set: what a new conversation has.
func NewStoredCopies() *StoredCopies {
	return &StoredCopies{userTurns: make(map[string]bool), results: make(map[string]string)}
}

// CopyFacts says what the store must read for Has to tell copies among msgs: the stored
// user turns (user and supervisor text, compactions and images, with UserTurnContent) when any
// incoming one has a time, and the stored results of callIDs.
func CopyFacts(msgs []ImportedMessage) (userTurns bool, callIDs []string) {
	for _, im := range msgs {
		switch m := im.Message.(type) {
		case *ToolResultMessage:
			callIDs = append(callIDs, m.ToolCallID)
		case *TextMessage, *ImageMessage, *CompactionMessage:
			meta := m.Meta()
			userTurns = userTurns || (meta.Role != RoleAssistant && !meta.CreatedAt.IsZero())
		}
	}
	return userTurns, callIDs
}

// ImageTurnContent is what an image stands for among user turns: a digest of its data
// and URL, "image:" and the hex MD5 of the two joined. (The store computes the same in
// SQL for the images it has.)
func ImageTurnContent(src ImageSource) string {
	sum := md5.Sum([]byte(src.Data + src.URL))
	return "image:" + hex.EncodeToString(sum[:])
}

func userTurnKey(at time.Time, content string) string {
	return fmt.Sprintf("%d\x00%s", at.UnixMicro(), content)
}

// AddUserTurn records a stored user or supervisor text (its content) or image (its
// ImageTurnContent) created at at.
func (c *StoredCopies) AddUserTurn(at time.Time, content string) {
	c.userTurns[userTurnKey(at, content)] = true
}

// AddResult records the content of the stored result of a call.
func (c *StoredCopies) AddResult(callID, content string) { c.results[callID] = content }

// Has reports whether m is a copy of a stored message.
func (c *StoredCopies) Has(m Message) bool {
	if len(c.userTurns) == 0 && len(c.results) == 0 {
		return false // a new conversation's: no key to make for each message
	}
	switch m := m.(type) {
	case *TextMessage:
		return m.Role != RoleAssistant && !m.CreatedAt.IsZero() && c.userTurns[userTurnKey(m.CreatedAt, m.Content())]
	case *ImageMessage:
		return m.Role == RoleUser && !m.CreatedAt.IsZero() && c.userTurns[userTurnKey(m.CreatedAt, ImageTurnContent(m.Source))]
	case *CompactionMessage:
		return !m.CreatedAt.IsZero() && c.userTurns[userTurnKey(m.CreatedAt, m.Content())]
	case *ToolResultMessage:
		stored, ok := c.results[m.ToolCallID]
		return ok && stored == m.Content()
	}
	return false
}

// GrowReply brings up to date an assistant reply imported before the source had all of
// it (a session file read while the reply was being written). incoming is the import's
// copy of the stored message (same source id): when it has more parts or more tool calls
// than stored, and keeps every stored call, GrowReply returns the stored message with the
// new content, keeping its meta (id, position, time) and the decisions on its calls, and
// the calls it adds; ok is false when stored is to be left as it is.
func GrowReply(stored, incoming Message) (updated Message, added []ToolCall, ok bool) {
	newCalls, body, ok := replyOf(incoming)
	if !ok {
		return nil, nil, false
	}
	oldCalls, oldBody, ok := replyOf(stored)
	if !ok {
		return nil, nil, false
	}
	if len(newCalls) <= len(oldCalls) && len(body.Parts) <= len(oldBody.Parts) {
		return nil, nil, false
	}
	byID := make(map[string]ToolCall, len(oldCalls))
	for _, c := range oldCalls {
		byID[c.ID] = c
	}
	calls := make([]ToolCall, 0, len(newCalls))
	for _, c := range newCalls {
		if old, ok := byID[c.ID]; ok {
			calls = append(calls, old) // keeps its approval
			delete(byID, c.ID)
			continue
		}
		calls = append(calls, c)
		added = append(added, c)
	}
	if len(byID) > 0 {
		return nil, nil, false // not a longer copy of the same reply: leave it
	}
	meta := *stored.Meta()
	if len(calls) == 0 {
		return &TextMessage{MessageMeta: meta, Body: body}, nil, true
	}
	meta.Role = RoleInvocation
	return &ToolRequestMessage{MessageMeta: meta, Body: body, ToolCalls: calls}, added, true
}

// replyOf returns the calls and body of an assistant's reply (a tool request, or an
// assistant's text); ok is false for any other message.
func replyOf(m Message) ([]ToolCall, Body, bool) {
	switch m := m.(type) {
	case *ToolRequestMessage:
		return m.ToolCalls, m.Body, true
	case *TextMessage:
		return nil, m.Body, m.Role == RoleAssistant
	}
	return nil, Body{}, false
}

// ImportDecidedBy is the decidedBy of the decision recorded for a call imported with its
// result.
const ImportDecidedBy = "import"

// MarkImported marks the calls of an imported message (a tool request) as imported:
// history, not requests. Whatever decision they carry was made where they come from,
// and stays theirs, flagged so: refusing a decision "by policy" would make Parley's own
// lossless export of a conversation its policies decided impossible to import again.
func MarkImported(m Message) {
	if req, ok := m.(*ToolRequestMessage); ok {
		for i := range req.ToolCalls {
			req.ToolCalls[i].Imported = true
		}
	}
}

// ApproveAnsweredImport records that an imported call still PENDING was answered by an
// imported result (at at, the result's time): it ran where it came from, so it is not
// left PENDING but APPROVED by ImportDecidedBy. It reports whether it changed c; calls
// decided already, and calls not imported (answered by an import, but requested here),
// are left as they are.
func ApproveAnsweredImport(c *ToolCall, at time.Time) bool {
	if !c.Imported || c.ApprovalStatus != ApprovalPending {
		return false
	}
	c.ApprovalStatus = ApprovalApproved
	c.Decision = &ApprovalDecision{Status: ApprovalApproved, DecidedBy: ImportDecidedBy,
		Reason: "imported with its result: it ran where it was imported from", DecidedAt: at}
	return true
}
