package db

import (
	"database/sql"

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
// With forLLM, the rows are of llmPageSQL, whose times are NULL: they are skipped.
func scanPage(rows *sql.Rows, err error, expect, budget int, forLLM bool) ([]messageRow, map[string]bool, error) {
	return scanRows(rows, err, expect, budget, nil, forLLM)
}

// scanHeadedPage is scanPage, and with head, for the rows of conversationPageSQL: the
// first is the conversation's, scanned into head (which is then found), and each later
// row is a message after conversationWidth NULL columns, and its parent (Parent).
func scanHeadedPage(rows *sql.Rows, err error, expect, budget int, head *conversationHead) ([]messageRow, map[string]bool, error) {
	return scanRows(rows, err, expect, budget, head, false)
}

// scanRows is scanPage and scanHeadedPage.
func scanRows(rows *sql.Rows, err error, expect, budget int, head *conversationHead, forLLM bool) ([]messageRow, map[string]bool, error) {
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	out := make([]messageRow, 0, expect)
	var cut map[string]bool
	held := map[string]int{}
	used := 0
	var r messageRow
	var skip [messageWidth + 1]sql.RawBytes // the columns of the other kind of row: NULL
	// The jsonb columns are scanned as the driver holds them, then copied into chunks
	// shared by the page's rows (keep) once a row is kept: database/sql would allocate
	// a copy of each, four a message.
	var calls, results, payload, provenance sql.RawBytes
	var chunk []byte
	keep := func(b sql.RawBytes) []byte {
		if b == nil {
			return nil // NULL stays nil
		}
		if cap(chunk)-len(chunk) < len(b) {
			chunk = make([]byte, 0, max(64<<10, len(b)))
		}
		n := len(chunk)
		chunk = append(chunk, b...)
		return chunk[n:len(chunk):len(chunk)]
	}
	var created, updated any = &r.CreatedAt, &r.UpdatedAt
	if forLLM {
		created, updated = &skip[0], &skip[1]
	}
	dest := make([]any, 0, conversationWidth+messageWidth+1)
	if head != nil {
		for i := range conversationWidth {
			dest = append(dest, &skip[i])
		}
	}
	dest = append(dest, &r.ID, &r.ConversationID, &r.Position, &r.SchemaVersion, &r.Kind, &r.Role, &r.Content,
		&calls, &results, &payload, &r.SourceID, created, updated,
		&r.Status, &r.StatusReason, &r.ClientID, &provenance, &r.StreamSeq, &r.Segment, &r.Depth, &r.Hidden, &r.DeletedAt, &r.Bytes)
	if head != nil {
		dest = append(dest, &r.Parent)
	}
	for rows.Next() {
		if head != nil && !head.found {
			c := &head.row
			headDest := []any{&c.ID, &c.Title, &c.CreatedAt, &c.UpdatedAt, &c.MessageCount, &c.LastPosition, &c.ForkedFrom, &head.segments}
			for i := range messageWidth + 1 {
				headDest = append(headDest, &skip[i])
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
		size := r.Bytes
		if !fitsPage(budget, used, size, held[r.ConversationID], cut[r.ConversationID]) {
			if cut == nil {
				cut = map[string]bool{}
			}
			cut[r.ConversationID] = true
			continue
		}
		used += size
		held[r.ConversationID]++
		r.ToolCalls, r.ToolResults, r.Payload, r.Provenance = keep(calls), keep(results), keep(payload), keep(provenance)
		out = append(out, r)
	}
	return out, cut, rows.Err()
}

// conversationHead is the conversation read by conversationPageSQL, found when it was.
type conversationHead struct {
	row      conversationRow
	segments int
	found    bool
}

// fitsPage is parley.FitsBudget for a page that may have been cut already: once a row of
// a page is left out, every later one is too, so that the page stays contiguous.
func fitsPage(budget, used, size, held int, cut bool) bool {
	return !cut && parley.FitsBudget(budget, used, size, held)
}
