package db

import (
	"database/sql"
	"fmt"

	"github.com/parley-dev/parley"
)

// scanPage scans the rows of a page query (pageSQL) as scanMessages does, keeping only
// what fits the byte budget (parley.FitsBudget; 0: no bound), shared by the pages of all
// the conversations read: a page of 1,000 messages of 1 MiB each would otherwise be read
// whole into memory, and written whole into the response. Rows past the budget are
// read into one scratch row and dropped, so memory holds the budget and one message;
// cut names the conversations (by key) whose pages lost rows to it.
//
// Rows come conversation by conversation, each page in read order (backward pages
// newest first), so a cut page keeps the rows nearest its starting cursor, and the next
// page, from its end cursor, reads what it left.
// With llmConv, the rows are of llmPageSQL (llmConv llmRowsConversation) or
// llmOnePageSQL (llmConv the key of their conversation, whose column is NULL): their
// times are NULL and skipped.
// With branch, each conversation's rows are along a branch, their depths consecutive
// (pageSQL), and a page ends at a gap (scanRows); FindTreeMessages' rows, in the order of
// their positions across branches, are not.
// llmRowsConversation is scanPage's llmConv for rows of llmPageSQL, which say whose
// they are.
const llmRowsConversation = "-"

func (db *DB) scanPage(rows *sql.Rows, err error, expect, budget int, llmConv string, branch bool) ([]pageRow, map[string]bool, error) {
	return db.scanRows(rows, err, expect, budget, nil, llmConv, branch)
}

// scanHeadedPage is scanPage, and with head, for the rows of conversationPageSQL: the
// first is the conversation's (headRow), scanned into head (which is then found), and
// each later row is a message of that conversation (its conversation id column NULL)
// and its parent (Parent; sameAsPrevious: the row scanned before it; sameAsNext: the
// row scanned after it).
func (db *DB) scanHeadedPage(rows *sql.Rows, err error, expect, budget int, head *conversationHead) ([]pageRow, map[string]bool, error) {
	return db.scanRows(rows, err, expect, budget, head, "", true)
}

// pageRow is a message of a page as scanRows read it, decoded as it arrived, with what
// the page is assembled from.
type pageRow struct {
	msg parley.Message
	// err is why the row could not be decoded: the page fails if it keeps the row (the
	// row after a page, read only to tell that there are more, does not fail it).
	err            error
	id             string // the message's public id
	conversationID string // its conversation's key
	depth, bytes   int    // messageRow.Depth, messageRow.Bytes
	parentID       string // the parent's public id, when the row holds it (conversationPageSQL)
}

// message is the row's message, or why it could not be decoded.
func (r *pageRow) message() (parley.Message, error) { return r.msg, r.err }

// pageRows are the rows scanRows scans: *sql.Rows, or lib/pq's (rawRows).
type pageRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// scanRows is scanPage and scanHeadedPage. Each kept row is decoded as soon as it is
// scanned, its jsonb columns straight from the driver's buffer (sql.RawBytes), which
// the next row overwrites: nothing of a row is copied to be decoded later, and the
// page holds messages, never rows and their payloads beside them.
func (db *DB) scanRows(rows pageRows, err error, expect, budget int, head *conversationHead, llmConv string, branch bool) ([]pageRow, map[string]bool, error) {
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out := make([]pageRow, 0, expect)
	var cut map[string]bool
	held := map[string]int{}
	used := 0
	var r messageRow
	dec := rowDecoder{slab: 64, publicIDs: true}
	var skip [messageWidth + 1]sql.RawBytes // columns NULL in the row scanned
	var calls, results, payload, provenance sql.RawBytes
	previousID := "" // the public id of the message row scanned last
	// previousConv and previousDepth are the conversation and depth of the message row
	// scanned last.
	previousConv, previousDepth := "", 0
	waiting := -1 // the row of out whose parent is the next row scanned (sameAsNext)
	var created, updated any = timeColumn{t: &r.CreatedAt, zone: db.zone}, timeColumn{t: &r.UpdatedAt, zone: db.zone}
	if llmConv != "" {
		created, updated = &skip[0], &skip[1]
	}
	var conv any = &r.ConversationID
	if head != nil {
		conv = &skip[0] // NULL: the head's
	} else if llmConv != llmRowsConversation && llmConv != "" {
		conv = &skip[2] // NULL: llmConv (llmOnePageSQL)
	}
	dest := make([]any, 0, messageWidth+1)
	dest = append(dest, &r.ID, conv, intColumn{&r.Position}, intColumn{&r.SchemaVersion}, &r.Kind, knownWord{&r.Role}, &r.Content,
		&calls, &results, &payload, &r.SourceID, created, updated,
		knownWord{&r.Status}, &r.StatusReason, &r.ClientID, &provenance, intColumn{&r.StreamSeq}, intColumn{&r.Segment}, intColumn{&r.Depth},
		&r.Hidden, timeColumn{t: &r.DeletedAt.Time, valid: &r.DeletedAt.Valid, zone: db.zone}, intColumn{&r.Bytes})
	if head != nil {
		dest = append(dest, &r.Parent)
	}
	for rows.Next() {
		if head != nil && !head.found {
			// headRow: the conversation's columns where a message row has columns of their
			// types (headPlaces), the others NULL.
			headDest := make([]any, len(pageRowColumns))
			for i := range headDest {
				headDest[i] = &skip[i]
			}
			for _, p := range headPlaces {
				headDest[p.at] = p.dest(head, db.zone)
			}
			if err := rows.Scan(headDest...); err != nil {
				return nil, nil, err
			}
			head.found = true
			continue
		}
		r = messageRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, err
		}
		if head != nil {
			r.ConversationID = head.row.ID
		} else if llmConv != llmRowsConversation && llmConv != "" {
			r.ConversationID = llmConv
		}
		if waiting >= 0 {
			out[waiting].parentID, waiting = r.ID, -1
		}
		parentID, next := previousID, r.Parent.Valid && r.Parent.String == sameAsNext
		if r.Parent.String != sameAsPrevious || !r.Parent.Valid {
			parentID = r.Parent.String
		}
		if next {
			parentID = ""
		}
		previousID = r.ID
		// Depths are dense along a branch: a row of a branch that does not follow the
		// one scanned before it of its conversation comes after rows that the
		// statement's budget left out of an earlier range of the chain (pageRange sends
		// each range's first row, whatever the budget): the page ends where they were
		// left out.
		hole := branch && r.ConversationID == previousConv && r.Depth != previousDepth+1 && r.Depth != previousDepth-1
		previousConv, previousDepth = r.ConversationID, r.Depth
		size := r.Bytes
		if hole || !fitsPage(budget, used, size, held[r.ConversationID], cut[r.ConversationID]) {
			if cut == nil {
				cut = map[string]bool{}
			}
			cut[r.ConversationID] = true
			continue
		}
		used += size
		held[r.ConversationID]++
		r.ToolCalls, r.ToolResults, r.Payload, r.Provenance = calls, results, payload, provenance
		m, err := dec.decode(&r, db.log)
		out = append(out, pageRow{msg: m, err: err, id: r.ID, conversationID: r.ConversationID,
			depth: r.Depth, bytes: r.Bytes, parentID: parentID})
		if next {
			waiting = len(out) - 1
		}
	}
	return out, cut, rows.Err()
}

// intColumn scans an integer column into an int. database/sql scans the driver's int64
// into an int through reflect, formatting it as text and parsing that back: six
// columns a row: in a transcript's profile, Scan fell from 5.7% of the CPU to 2.5%.
type intColumn struct{ p *int }

func (c intColumn) Scan(src any) error {
	v, ok := src.(int64)
	if !ok {
		return fmt.Errorf("scan an integer column: got %T", src)
	}
	*c.p = int(v)
	return nil
}

// knownWord scans a column of a few known words (a role, a status: pageColumns) into
// the constant of its spelling, a new string only for a word it does not know.
type knownWord struct{ p *string }

// knownWords are the words knownWord knows.
var knownWords = func() []string {
	var words []string
	for _, r := range parley.Roles {
		words = append(words, string(r))
	}
	for _, s := range []parley.MessageStatus{parley.StatusStreaming, parley.StatusCompleted, parley.StatusAborted,
		parley.StatusFailed, parley.StatusInterrupted} {
		words = append(words, string(s))
	}
	return words
}()

func (c knownWord) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case []byte:
		b = v
	case string:
		*c.p = v
		return nil
	default:
		return fmt.Errorf("scan a word: got %T", src)
	}
	for _, w := range knownWords {
		if string(b) == w {
			*c.p = w
			return nil
		}
	}
	*c.p = string(b)
	return nil
}

// conversationHead is the conversation read by conversationPageSQL or linePageSQL,
// found when it was.
type conversationHead struct {
	row      conversationRow
	segments int
	line     bool // no branches and no shared history: linePageSQL reads its page
	// maxMessageBytes bounds the size of its messages (max_message_bytes): whether
	// fittingLinePageSQL read its page (pageFits).
	maxMessageBytes int
	found           bool
}

// fitsPage is parley.FitsBudget for a page that may have been cut already: once a row of
// a page is left out, every later one is too, so that the page stays contiguous.
func fitsPage(budget, used, size, held int, cut bool) bool {
	return !cut && parley.FitsBudget(budget, used, size, held)
}
