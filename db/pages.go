package db

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// FindMessagePages implements parley.MessageService: the same page of several
// conversations in one query (a LATERAL join runs the page's index range scan per
// conversation), so a list of conversations with their messages costs one round trip.
// Positions are dense (1..LastPosition), so a page is a range of positions.
func (db *DB) FindMessagePages(ctx context.Context, convs []*parley.Conversation, page parley.PageRequest) ([]*parley.MessagePage, error) {
	page, err := parley.CheckPage(page)
	if err != nil {
		return nil, err
	}
	after, before := 0, 0 // before 0: no upper bound
	if page.After != nil {
		if after, err = parley.ParseMessageCursor("after", *page.After); err != nil {
			return nil, err
		}
	}
	if page.Before != nil {
		if before, err = parley.ParseMessageCursor("before", *page.Before); err != nil {
			return nil, err
		}
	}
	keys := make([]string, len(convs))
	index := make(map[string]int, len(convs))
	for i, c := range convs {
		key, ok := parley.ParseConversationID(c.ID)
		if !ok {
			return nil, conversationNotFound(c.ID)
		}
		keys[i], index[key] = key, i
	}
	// Forward pages read up from after; backward pages read down from before and are
	// reversed. One row more than asked tells whether there are more.
	backward := page.First == nil
	limit := 0
	if backward {
		limit = *page.Last
	} else {
		limit = *page.First
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	args := []any{pq.Array(keys), after, before, limit + 1, owner}
	var result *sql.Rows
	if s := db.stmt(pageSQL[backward]); s != nil {
		result, err = s.QueryContext(ctx, args...)
	} else {
		result, err = db.db.QueryContext(ctx, pageSQL[backward], args...)
	}
	rows, cut, err := scanPage(result, err, min(len(keys)*(limit+1), 1024), page.MaxBytes)
	if err != nil {
		return nil, classify(fmt.Errorf("find messages: %w", err))
	}
	grouped := make([][]messageRow, len(convs))
	if len(convs) == 1 {
		grouped[0] = rows // the commonest case: no copies
	} else {
		for _, r := range rows {
			i := index[r.ConversationID]
			grouped[i] = append(grouped[i], r)
		}
	}
	pages := make([]*parley.MessagePage, len(convs))
	for i, conv := range convs {
		if pages[i], err = db.assemblePage(conv, grouped[i], page, limit, after, before, cut[keys[i]]); err != nil {
			return nil, err
		}
		if err := db.foldLive(ctx, db.db, pages[i].Messages); err != nil {
			return nil, err
		}
	}
	return pages, nil
}

// pageSQL reads the same page of several conversations, forward (pageSQL[false]: up
// from $2) or backward (pageSQL[true]: down from $3, or from the end when $3 is 0), one
// row more than the page ($4) to tell whether there are more. Only the owner's ($5)
// conversations are read: another's come back as empty pages, as they would if they had
// been deleted since they were read. Both run prepared (DB.prepare).
//
// Positions are dense (1..last_position), so a page is a known range of positions, and
// both bounds of that range are index conditions on (conversation_id, position): the
// plan is an index range scan of at most $4 entries per conversation whatever the
// statistics say and whether Postgres plans the statement for its arguments or once for
// all (its plan cache switches a prepared statement to a generic plan after five runs).
// An optional bound written as "($3 = 0 OR position < $3)" is not an index condition in
// a generic plan: there the backward page filtered every row of the conversation. The
// backward page's end comes from the conversation's own row, already joined for the owner.
var pageSQL = map[bool]string{false: pageQuery(false), true: pageQuery(true)}

// noBound stands for "no upper bound" in the forward page's range: larger than any
// position (an integer column).
const noBound = "2147483647"

func pageQuery(backward bool) string {
	rng, order := `position > $2 AND position <= $2 + $4 AND position < COALESCE(NULLIF($3, 0), `+noBound+`)`, "ASC"
	if backward {
		// The end: before ($3), or just past the conversation's last position.
		end := `COALESCE(NULLIF($3, 0), own.last_position + 1)`
		rng, order = `position < `+end+` AND position >= `+end+` - $4 AND position > $2`, "DESC"
	}
	return fmt.Sprintf(`SELECT m.* FROM unnest($1::uuid[]) AS c(id)
		JOIN conversations own ON own.id = c.id AND own.owner = $5
		CROSS JOIN LATERAL (
		SELECT %s FROM messages WHERE conversation_id = own.id AND %s
		ORDER BY position %s LIMIT $4) m`, pageColumns, rng, order)
}

// pageColumns are messageColumns with the ids as text: lib/pq reads a uuid in binary
// and formats it into a new buffer that database/sql then copies into a string, two
// allocations per id where text is one.
var pageColumns = strings.Replace(strings.Replace(messageColumns,
	"id, conversation_id,", "id::text AS id, conversation_id::text AS conversation_id,", 1), "\n", " ", -1)

// assemblePage turns the rows read for one conversation (limit+1 at most, in read order)
// into its page.
func (db *DB) assemblePage(conv *parley.Conversation, rows []messageRow, page parley.PageRequest, limit, after, before int, cut bool) (*parley.MessagePage, error) {
	backward := page.First == nil
	more := len(rows) > limit || cut // cut: the byte budget left rows out (scanPage)
	if len(rows) > limit {
		rows = rows[:limit]
	}
	if backward {
		slices.Reverse(rows)
	} else if page.Last != nil && len(rows) > *page.Last {
		rows = rows[len(rows)-*page.Last:]
	}
	out := &parley.MessagePage{Messages: make([]parley.Message, 0, len(rows)), TotalCount: conv.MessageCount}
	for i := range rows {
		m, err := decodeMessage(&rows[i], db.log)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, m)
		out.Bytes += rowBytes(&rows[i])
	}
	// Positions are dense, so what lies beyond the page follows from its bounds; "more"
	// covers messages added since conv was read.
	if n := len(rows); n > 0 {
		out.HasPreviousPage = rows[0].Position > 1
		out.HasNextPage = (!backward && more) || rows[n-1].Position < conv.LastPosition
	} else {
		out.HasPreviousPage = (backward && more) || (after > 0 && conv.LastPosition > 0)
		out.HasNextPage = (!backward && more) || (before > 0 && before <= conv.LastPosition)
	}
	return out, nil
}
