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
// conversations in one query (a LATERAL join runs the page's index range scans per
// conversation), so a list of conversations with their messages costs one round trip.
// Positions are dense along a branch (1..its leaf's), so a page is a range of positions.
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
	branch := spot{Segment: -1}
	if page.Branch != "" {
		if len(convs) != 1 {
			return nil, parley.Errorf(parley.EINVALID, "branch: a branch names one conversation's messages")
		}
		if branch, err = db.branchEnd(ctx, keys[0], page.Branch); err != nil {
			return nil, err
		}
	}
	args := []any{pq.Array(keys), after, before, limit + 1, owner, branch.Segment, branch.Depth, max(page.MaxBytes, 0)}
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
		last := conv.LastPosition
		if branch.Segment >= 0 {
			last = branch.Depth
		}
		if pages[i], err = db.assemblePage(grouped[i], page, limit, after, before, last, cut[keys[i]]); err != nil {
			return nil, err
		}
		if page.Tree {
			if err := db.fillTree(ctx, db.db, pages[i].Messages); err != nil {
				return nil, err
			}
		}
		if err := db.foldLive(ctx, db.db, pages[i].Messages); err != nil {
			return nil, err
		}
	}
	return pages, nil
}

// pageSQL reads the same page of several conversations along a branch each, forward
// (pageSQL[false]: up from $2) or backward (pageSQL[true]: down from $3, or from the
// branch's end when $3 is 0), one row more than the page ($4) to tell whether there are
// more. The branch is the active one, or with $6 >= 0 the one ending at depth $7 of
// segment $6 (one conversation only). Only the owner's ($5) conversations are read:
// another's come back as empty pages, as they would if they had been deleted since they
// were read. Both run prepared (DB.prepare).
//
// Positions are depths, dense along a branch (1..its leaf's), so a page is a known
// range of depths. The branch is a chain of segments, one per fork on its path, which
// the leaf segment's row holds (message_segments.chain and chain_from, migration 000020:
// one probe of its primary key, none for segment 0, whatever the number of forks);
// only the segments whose part of the branch meets the page's range are read (one to
// three for a page of 100 of the benchmark's tree), each a range of depths both of
// whose bounds are index conditions on
// (conversation_id, segment, depth): an index range scan of at most $4 entries in all,
// whatever the tree's size, the statistics, and whether Postgres plans the statement
// for its arguments or once for all (its plan cache switches a prepared statement to a
// generic plan after five runs). An optional bound written as "($3 = 0 OR depth < $3)"
// is not an index condition in a generic plan: there the backward page filtered every
// row of the conversation. The segments are visited in the page's order (the chain is
// sorted, never the messages): root first forward, leaf first backward.
//
// A conversation without segments is one line (leafDepth); its forward pages are not
// bounded by its last position, as before the tree.
//
// The byte budget ($8, 0 for none) is applied in the statement: a running sum of
// body_bytes (what each row takes as read, kept by Postgres: migration 000017) over each
// segment's range, in the index's order (no sort), says where the range passes the
// budget, and the rows after it are neither detoasted nor sent; the first row of each
// range always comes (parley.FitsBudget). scanPage then applies the budget exactly,
// shared by all the pages read. Postgres sends at most the budget plus one row per
// segment of a page (a page of a conversation without forks is one segment). A running
// sum over the whole page would need its rows sorted by (page, depth), which cost more
// Postgres time than the page's index scan itself.
var pageSQL = map[bool]string{false: pageQuery(false), true: pageQuery(true)}

// noBound stands for "no upper bound" in the forward page's range: larger than any
// position (an integer column).
const noBound = "2147483647"

func pageQuery(backward bool) string {
	// rng is the page's range of depths in a segment of the chain; touches keeps the
	// segments of the chain whose part of the branch, (ch.lo, ch.hi], meets the page.
	rng := `depth > $2 AND depth <= LEAST(ch.hi, $2 + $4) AND depth < COALESCE(NULLIF($3, 0), ` + noBound + `)`
	touches := `x.lo < $2::int + $4::int AND x.hi > $2::int AND x.lo + 1 < COALESCE(NULLIF($3::int, 0), ` + noBound + `)`
	order, chainOrder := "ASC", "ASC"
	if backward {
		// The end: before ($3), or just past the branch's leaf.
		end := `COALESCE(NULLIF($3, 0), ch.leaf + 1)`
		rng = `depth < ` + end + ` AND depth >= ` + end + ` - $4 AND depth > $2 AND depth <= ch.hi`
		end = `COALESCE(NULLIF($3::int, 0), x.leaf + 1)`
		touches = `x.lo + 1 < ` + end + ` AND x.hi >= ` + end + ` - $4::int AND x.hi > $2::int`
		order, chainOrder = "DESC", "DESC"
	}
	return fmt.Sprintf(`WITH chain AS (
			SELECT x.* FROM (
				SELECT c.ord, own.id AS conv, l.seg, l.lo, l.i, l.leaf,
					COALESCE(l.next, CASE WHEN own.segments = 0 THEN %s ELSE b.leaf END) AS hi
				FROM unnest($1::uuid[]) WITH ORDINALITY AS c(id, ord)
				JOIN conversations own ON own.id = c.id AND own.owner = $5
				CROSS JOIN LATERAL (SELECT CASE WHEN $6::int >= 0 THEN $6::int ELSE own.active_segment END AS seg,
					CASE WHEN $6::int >= 0 THEN $7::int ELSE %s END AS leaf) b
				CROSS JOIN LATERAL (SELECT CASE WHEN b.seg = 0 THEN '{0}' ELSE s.chain END AS chain,
						CASE WHEN b.seg = 0 THEN '{0}' ELSE s.chain_from END AS chain_from
					FROM (SELECT 1) one LEFT JOIN message_segments s ON s.conversation_id = own.id AND s.segment = b.seg AND b.seg > 0) sc
				CROSS JOIN LATERAL (SELECT u.seg, u.lo, u.i, b.leaf, sc.chain_from[u.i + 1] AS next
					FROM unnest(sc.chain, sc.chain_from) WITH ORDINALITY AS u(seg, lo, i)) l
			) x WHERE %s
			ORDER BY x.ord, x.i %s)
		SELECT m.* FROM chain ch
		CROSS JOIN LATERAL (
		SELECT %s FROM (
			SELECT %s, body_bytes, sum(body_bytes) OVER w AS page_bytes
			FROM messages WHERE conversation_id = ch.conv AND segment = ch.seg AND %s
			WINDOW w AS (ORDER BY depth %s ROWS UNBOUNDED PRECEDING)
			ORDER BY depth %s LIMIT $4) s
		WHERE $8 = 0 OR s.page_bytes <= $8 OR s.page_bytes = s.body_bytes) m`,
		noBound, leafDepth, touches, chainOrder, strings.ReplaceAll(messageColumns, "\n", " "), pageColumns, rng, order, order)
}

// pageColumns are messageColumns with the ids as text: lib/pq reads a uuid in binary
// and formats it into a new buffer that database/sql then copies into a string, two
// allocations per id where text is one.
var pageColumns = strings.Replace(strings.Replace(messageColumns,
	"id, conversation_id,", "id::text AS id, conversation_id::text AS conversation_id,", 1), "\n", " ", -1)

// assemblePage turns the rows read for one conversation (limit+1 at most, in read order)
// into its page of a branch ending at position last.
func (db *DB) assemblePage(rows []messageRow, page parley.PageRequest, limit, after, before, last int, cut bool) (*parley.MessagePage, error) {
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
	out := &parley.MessagePage{Messages: make([]parley.Message, 0, len(rows)), TotalCount: last}
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
		out.HasPreviousPage = rows[0].Depth > 1
		out.HasNextPage = (!backward && more) || rows[n-1].Depth < last
	} else {
		out.HasPreviousPage = (backward && more) || (after > 0 && last > 0)
		out.HasNextPage = (!backward && more) || (before > 0 && before <= last)
	}
	return out, nil
}
