package db

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// FindMessagePages implements parley.MessageService: the same page of several
// conversations in one query (a LATERAL join runs the page's index range scans per
// conversation), so a list of conversations with their messages costs one round trip.
// Positions are dense along a branch (1..its leaf's), so a page is a range of positions.
func (db *DB) FindMessagePages(ctx context.Context, convs []*parley.Conversation, page parley.PageRequest) ([]*parley.MessagePage, error) {
	b, err := boundsOf(page)
	if err != nil {
		return nil, err
	}
	page, after, before, limit, backward := b.page, b.after, b.before, b.limit, b.backward
	keys := make([]string, len(convs))
	index := make(map[string]int, len(convs))
	for i, c := range convs {
		key, ok := parley.ParseConversationID(c.ID)
		if !ok {
			return nil, conversationNotFound(c.ID)
		}
		keys[i], index[key] = key, i
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
	query, llmConv, fitting := pageSQL[backward], "", false
	switch {
	case page.ForLLM && len(keys) == 1:
		// An export's read: the rows need not say whose they are; without the budget's
		// window unless the conversation's messages are known to be too large for it.
		query, llmConv = llmOnePageSQL[backward], keys[0]
		budget := max(page.MaxBytes, 0)
		if bound, large := db.largeMessages.Get(keys[0]); !large || pageFits(budget, limit+1, int(bound)) {
			query, fitting = fittingLLMOnePageSQL[backward], true
		}
	case page.ForLLM:
		query, llmConv = llmPageSQL[backward], llmRowsConversation
	}
	result, err := db.query(ctx, query, args...)
	rows, cut, err := db.scanPage(result, err, min(len(keys)*(limit+1), 1024), page.MaxBytes, llmConv, true)
	if err == nil && fitting && len(rows) == 0 {
		// No row: an empty page, or one the conversation's bound says may not fit
		// (fittingLLMOnePageSQL reads none then). Read it again with the window; when
		// rows come, the bound did not fit: remember the least bound that does not fit
		// this page (the bound only grows), so that the next such page is read with the
		// window straight away.
		result, err = db.query(ctx, llmOnePageSQL[backward], args...)
		rows, cut, err = db.scanPage(result, err, min(limit+1, 1024), page.MaxBytes, llmConv, true)
		if budget := max(page.MaxBytes, 0); err == nil && len(rows) > 0 && budget > 0 {
			db.largeMessages.Add(keys[0], int64(budget/(limit+1)+1))
		}
	}
	if err != nil {
		return nil, classify(fmt.Errorf("find messages: %w", err))
	}
	grouped := make([][]pageRow, len(convs))
	if len(convs) == 1 {
		grouped[0] = rows // the commonest case: no copies
	} else {
		for _, r := range rows {
			i := index[r.conversationID]
			grouped[i] = append(grouped[i], r)
		}
	}
	pages := make([]*parley.MessagePage, len(convs))
	for i, conv := range convs {
		last := conv.LastPosition
		if branch.Segment >= 0 {
			last = branch.Depth
		}
		if pages[i], err = db.finishPage(ctx, grouped[i], b, last, cut[keys[i]]); err != nil {
			return nil, err
		}
	}
	return pages, nil
}

// pageBounds is a checked PageRequest and what its cursors and sizes say.
type pageBounds struct {
	page          parley.PageRequest // with the default size applied
	after, before int                // positions; before 0: no upper bound
	limit         int                // the page's size
	// backward pages read down from before and are reversed; forward pages read up
	// from after.
	backward bool
	// lineTree: the rows are of a conversation without forks and hold their parents
	// (conversationPageSQL), from which assemblePage fills in the tree fields.
	lineTree bool
}

// boundsOf checks page (EINVALID for a bad size or cursor) and returns its bounds.
func boundsOf(page parley.PageRequest) (pageBounds, error) {
	page, err := parley.CheckPage(page)
	if err != nil {
		return pageBounds{}, err
	}
	b := pageBounds{page: page, backward: page.First == nil}
	if page.After != nil {
		if b.after, err = parley.ParseMessageCursor("after", *page.After); err != nil {
			return pageBounds{}, err
		}
	}
	if page.Before != nil {
		if b.before, err = parley.ParseMessageCursor("before", *page.Before); err != nil {
			return pageBounds{}, err
		}
	}
	if b.backward {
		b.limit = *page.Last
	} else {
		b.limit = *page.First
	}
	return b, nil
}

// finishPage assembles one conversation's page from its rows (assemblePage) and fills in
// what the rows do not hold: the tree fields when asked for, streaming messages' content.
func (db *DB) finishPage(ctx context.Context, rows []pageRow, b pageBounds, last int, cut bool) (*parley.MessagePage, error) {
	p, err := db.assemblePage(rows, b.page, b.limit, b.after, b.before, last, cut, b.lineTree)
	if err != nil {
		return nil, err
	}
	if b.page.Tree {
		if err := db.fillTree(ctx, db.db, p.Messages); err != nil {
			return nil, err
		}
	}
	if err := db.foldLive(ctx, db.db, p.Messages); err != nil {
		return nil, err
	}
	return p, nil
}

// FindConversationPage implements parley.MessageService: the conversation and a page of
// its active branch in one statement (linePageSQL, or conversationPageSQL for a
// conversation that is not one line), where FindConversationByID and then FindMessages
// take two. A conversation linePageSQL found not to be one line is read again with
// conversationPageSQL, and remembered (DB.notLines) so that its next reads take that
// one statement. A page of another branch takes those two and the branch's lookup.
// A page that fits its byte budget is read by fittingLinePageSQL or
// fittingConversationPageSQL, without the budget's window; one whose conversation's
// row says it may not is read again with the window (linePageSQL or
// conversationPageSQL), and the conversation remembered (DB.largeMessages) so that its
// next pages too large for that are read with the window straight away.
func (db *DB) FindConversationPage(ctx context.Context, id string, page parley.PageRequest) (*parley.Conversation, *parley.MessagePage, error) {
	key, ok := parley.ParseConversationID(id)
	if !ok {
		return nil, nil, conversationNotFound(id)
	}
	b, err := boundsOf(page)
	if err != nil {
		return nil, nil, err
	}
	if page.Branch != "" {
		conv, err := db.FindConversationByID(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		p, err := db.FindMessages(ctx, conv, page)
		return conv, p, err
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	budget := max(page.MaxBytes, 0)
	args := []any{key, b.after, b.before, b.limit + 1, owner, budget, page.Tree}
	// line: read with a statement for one line; fitting: with one for a page that fits.
	line, fitting := !db.notLines.Contains(key), true
	if bound, large := db.largeMessages.Get(key); large && !pageFits(budget, b.limit+1, int(bound)) {
		fitting = false
	}
	var head conversationHead
	var rows []pageRow
	var cut map[string]bool
	// Each statement's first row says when the page is another's to read. At most three
	// reads: line only ever turns false, and fitting turns true again only then, from
	// the bound the row sent (which only grows).
	for {
		head = conversationHead{}
		rows, cut, err = db.readHeadedPage(ctx, headedPageSQL(line, fitting, b.backward, page.Tree), args, b.limit+1, page.MaxBytes, &head)
		if err != nil || !head.found {
			break
		}
		if line && !head.line {
			// Branches, or a shared history: the page follows the chain, now and next
			// time; without the window if it fits.
			db.notLines.Add(key, struct{}{})
			line, fitting = false, pageFits(budget, b.limit+1, head.maxMessageBytes)
			continue
		}
		if !line && head.line {
			db.notLines.Remove(key) // one line again: a fork made real
		}
		if fitting && !pageFits(budget, b.limit+1, head.maxMessageBytes) {
			// Messages too large for the page to be read without the budget's window:
			// read with it, now and next time.
			db.largeMessages.Add(key, int64(head.maxMessageBytes))
			fitting = false
			continue
		}
		break
	}
	if err != nil {
		return nil, nil, classify(fmt.Errorf("find conversation %s and its messages: %w", id, err))
	}
	if !head.found {
		return nil, nil, conversationNotFound(id)
	}
	c := head.row.conversation()
	if page.Tree && head.segments == 0 {
		// One line: the rows hold the tree fields.
		b.page.Tree, b.lineTree = false, true
	}
	p, err := db.finishPage(ctx, rows, b, c.LastPosition, cut[key])
	if err != nil {
		return nil, nil, err
	}
	return c, p, nil
}

// headedPageSQL is the statement FindConversationPage reads a page with: for a
// conversation that is one line (line) or any (conversationPageSQL), a page that fits
// its byte budget (fits) or any, forward or backward, with the tree fields (tree) or
// not (a conversation's statement without them: treelessConversationPageSQL).
func headedPageSQL(line, fits, backward, tree bool) string {
	switch {
	case line && fits:
		return fittingLinePageSQL[backward]
	case line:
		return linePageSQL[backward]
	case fits && tree:
		return fittingConversationPageSQL[backward]
	case fits:
		return treelessFittingConversationPageSQL[backward]
	case tree:
		return conversationPageSQL[backward]
	}
	return treelessConversationPageSQL[backward]
}

// readHeadedPage runs q, conversationPageSQL or linePageSQL (or either's fitting
// statement), with args, and scans its rows (scanHeadedPage): from lib/pq's rows
// (queryRaw) when the pool's connections are its own.
func (db *DB) readHeadedPage(ctx context.Context, q string, args []any, expect, budget int, head *conversationHead) ([]pageRow, map[string]bool, error) {
	if db.copyRaw {
		var rows []pageRow
		var cut map[string]bool
		err := db.queryRaw(ctx, q, args, func(result *rawRows) (err error) {
			rows, cut, err = db.scanRows(result, nil, expect, budget, head, "", true)
			return err
		})
		return rows, cut, err
	}
	result, err := db.query(ctx, q, args...)
	return db.scanHeadedPage(result, err, expect, budget, head)
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
var pageSQL = map[bool]string{false: pageQuery(false, pageColumns), true: pageQuery(true, pageColumns)}

// llmPageSQL is pageSQL reading llmPageColumns, for PageRequest.ForLLM.
var llmPageSQL = map[bool]string{false: pageQuery(false, llmPageColumns), true: pageQuery(true, llmPageColumns)}

// llmOnePageSQL is llmPageSQL for one conversation, whose rows do not send their
// conversation's id (NULL): the caller knows it, and lib/pq made a string of it for
// every row (a tenth of the read's allocations, 36 bytes a row sent).
var llmOnePageSQL = map[bool]string{false: pageQuery(false, llmOnePageColumns), true: pageQuery(true, llmOnePageColumns)}

// fittingLLMOnePageSQL is llmOnePageSQL for a page that fits its byte budget: the same
// arguments, and the same rows when the conversation's row says that the page fits
// (pageFits: $4 times max_message_bytes, migration 000026, is within the budget $8, or
// there is none), each of the chain's ranges read without the budget's window
// (pageRangeOf with fits); when it does not, the chain is empty and no row comes, and
// FindMessagePages reads the page again with llmOnePageSQL. An export's pages are of
// 1,000 messages: the window (a running sum over every row, kept in a tuplestore before
// the filter) was about a fifth of Postgres's CPU for each (docs/performance.md).
var fittingLLMOnePageSQL = map[bool]string{false: pageQueryOf(false, llmOnePageColumns, true), true: pageQueryOf(true, llmOnePageColumns, true)}

// noBound stands for "no upper bound" in the forward page's range: larger than any
// position (an integer column).
const noBound = "2147483647"

func pageQuery(backward bool, columns string) string {
	return pageQueryOf(backward, columns, false)
}

// pageQueryOf is pageQuery, and with fits, for the conversations whose page fits the
// byte budget $8 (pageFits), read without the window: a conversation whose page may not
// fit reads no chain, and so no row.
func pageQueryOf(backward bool, columns string, fits bool) string {
	check := ""
	if fits {
		check = `
					WHERE $8 = 0 OR $4::bigint * own.max_message_bytes <= $8` // pageFits
	}
	return fmt.Sprintf(`WITH chain AS (%s)
		SELECT m.* FROM chain ch
		CROSS JOIN LATERAL (%s) m`,
		chainQuery(backward, "c.ord", `unnest($1::uuid[]) WITH ORDINALITY AS c(id, ord)
				JOIN conversations own ON own.id = c.id AND own.owner = $5
				CROSS JOIN LATERAL (SELECT CASE WHEN $6::int >= 0 THEN $6::int ELSE own.active_segment END AS seg,
					CASE WHEN $6::int >= 0 THEN $7::int ELSE `+leafDepth+` END AS leaf`+check+`) b`),
		pageRangeOf(backward, columns, "ch.fconv::text", "$8", "", fits))
}

// chainQuery reads the segments of a branch's chain that the page ($2, $3, $4) touches,
// in the order the page visits them, from the leaf segment's row (chain and chain_from):
// for each conversation own of from, whose branch ends at depth b.leaf of segment b.seg
// (ord numbering the conversations), the rows (ord, conv, seg, lo, i, leaf, hi), each a
// segment and its part of the branch, (lo, hi]. Shared by pageSQL and
// conversationPageSQL, so that both find the page's segments the same way.
func chainQuery(backward bool, ord, from string) string {
	// touches keeps the segments of the chain whose part of the branch, (x.lo, x.hi],
	// meets the page.
	touches := `x.lo < $2::int + $4::int AND x.hi > $2::int AND x.lo + 1 < COALESCE(NULLIF($3::int, 0), ` + noBound + `)`
	chainOrder := "ASC" // root first forward, leaf first backward
	if backward {
		end := `COALESCE(NULLIF($3::int, 0), x.leaf + 1)`
		touches = `x.lo + 1 < ` + end + ` AND x.hi >= ` + end + ` - $4::int AND x.hi > $2::int`
		chainOrder = "DESC"
	}
	return fmt.Sprintf(`SELECT x.* FROM (
				SELECT %s AS ord, v.conv, v.seg, v.lo, l.i, v.j, l.leaf, v.hi, own.id AS fconv, v.shared,
					own.fork_no AS fno, own.base_depth AS bdepth
				FROM %s
				CROSS JOIN LATERAL (SELECT CASE WHEN b.seg = 0 THEN '{0}' ELSE s.chain END AS chain,
						CASE WHEN b.seg = 0 THEN '{0}' ELSE s.chain_from END AS chain_from
					FROM (SELECT 1) one LEFT JOIN message_segments s ON s.conversation_id = own.id AND s.segment = b.seg AND b.seg > 0) sc
				CROSS JOIN LATERAL (SELECT u.seg, u.lo, u.i, b.leaf,
						COALESCE(sc.chain_from[u.i + 1], CASE WHEN own.segments = 0 THEN %s ELSE b.leaf END) AS hi
					FROM unnest(sc.chain, sc.chain_from) WITH ORDINALITY AS u(seg, lo, i)) l
				CROSS JOIN LATERAL (%s) v
			) x WHERE %s
			ORDER BY x.ord, x.i %s, x.j %s`, ord, from, noBound, linkExpansion, touches, chainOrder, chainOrder)
}

// linkExpansion is a chain entry l of a conversation own as the ranges a page reads
// (conv, seg, lo, hi, j, shared): the entry itself, but for the segment 0 of a linked
// fork (migration 000025, db/fork.go), the rows it shares, one range per entry of its
// link, then its own rows of segment 0 after them. A conversation without a link reads
// none of the link's arms (each is a one-time filter).
const linkExpansion = `SELECT own.id AS conv, l.seg, l.lo, l.hi, 0::bigint AS j, false AS shared
						WHERE l.seg <> 0 OR own.base_depth = 0
					UNION ALL
					SELECT e.conv, e.seg, e.lo, LEAST(e.hi, l.hi), e.j, true
					FROM fork_link_entries(own.id, own.base_depth) e
					WHERE l.seg = 0 AND own.base_depth > 0
					UNION ALL
					SELECT own.id, 0, own.base_depth, l.hi, 2147483647, false WHERE l.seg = 0 AND own.base_depth > 0`

// pageRange reads the page's rows of the chain's segment ch: a range of depths both of
// whose bounds are index conditions, at most $4 rows, cut at the byte budget (budget,
// 0 for none). conv is the conversation id each row carries (an SQL text expression).
// With parent (an SQL boolean), each row ends with its parent's public id when parent is true
// (else NULL): in a conversation without forks, the message before it, which for every
// row but the range's first is the range's row before it, and for the first one probe
// of the index. Read down (backward), that row is the next one read (lead), and its id
// is sent. Read up, it is the row read just before, which the page keeps whenever it
// keeps this one (the budget cuts a range's tail): the parent is then empty (sameAsPrevious),
// and the reader takes the id it has just read, where Postgres would format a uuid and
// lib/pq allocate a string for it a second time.
func pageRange(backward bool, columns, conv, budget, parent string) string {
	return pageRangeOf(backward, columns, conv, budget, parent, false)
}

// pageRangeOf is pageRange, and with fits, the range of a page known to fit its byte
// budget (pageFits) and to be read by fittingLinePageSQL or fittingConversationPageSQL:
// the same rows without the window (the budget's running sum, and the parents' lag
// and lead), a quarter of Postgres's time for a page of 100. The parents come without it
// too: along a branch the depths are dense (no message row is ever deleted but with
// its conversation), so which row of the page is read first (forward) or last
// (backward) follows from the page's bounds, whichever of the chain's ranges holds it.
// Read up, the first is the one at depth $2 + 1, and every later row's parent is the
// row read just before it (sameAsPrevious); read down, the last is the one at the
// page's lower bound, and every earlier row's parent is the row read just after it
// (sameAsNext), whose id the reader takes when it reads that row. The first (forward)
// or last (backward) row's parent is one probe of the index, as with the window.
func pageRangeOf(backward bool, columns, conv, budget, parent string, fits bool) string {
	rng, order := `depth > $2 AND depth <= LEAST(ch.hi, $2 + $4) AND depth < COALESCE(NULLIF($3, 0), `+noBound+`)`, "ASC"
	previous, next := `WHEN lag(depth) OVER w IS NOT NULL THEN '`+sameAsPrevious+`'`, ""
	if fits {
		previous = `WHEN depth > $2 + 1 THEN '` + sameAsPrevious + `'`
	}
	if backward {
		// The end: before ($3), or just past the branch's leaf.
		end := `COALESCE(NULLIF($3, 0), ch.leaf + 1)`
		rng, order = `depth < `+end+` AND depth >= `+end+` - $4 AND depth > $2 AND depth <= ch.hi`, "DESC"
		previous, next = "", "lead(id::text) OVER w, "
		if fits {
			previous, next = `WHEN depth > GREATEST(`+end+` - $4, $2 + 1) THEN '`+sameAsNext+`'`, ""
		}
	}
	cols, parentCol := strings.ReplaceAll(messageColumns, "\n", " ")+", body_bytes", ""
	if parent != "" {
		cols += ", parent"
		parentCol = fmt.Sprintf(`, CASE WHEN NOT (%s) THEN NULL
				%s
				ELSE %s END AS parent`, parent, previous, publicMessageID(fmt.Sprintf(`CASE
				WHEN ch.shared THEN fork_message_id(ch.fno, NULLIF(depth - 1, 0))::text
				ELSE COALESCE(%s(SELECT x.id::text FROM messages x
					WHERE x.conversation_id = ch.conv AND x.segment = ch.seg AND x.depth = messages.depth - 1),
					CASE WHEN depth - 1 = ch.bdepth AND ch.bdepth > 0 AND ch.seg = 0 THEN fork_message_id(ch.fno, ch.bdepth)::text END) END`, next)))
	}
	columns = sharedColumns(conv).Replace(columns)
	if fits {
		return fmt.Sprintf(`SELECT %s%s
			FROM messages WHERE conversation_id = ch.conv AND segment = ch.seg AND %s
			ORDER BY depth %s LIMIT $4`, columns, parentCol, rng, order)
	}
	return fmt.Sprintf(`SELECT %s FROM (
			SELECT %s, sum(body_bytes) OVER w AS page_bytes%s
			FROM messages WHERE conversation_id = ch.conv AND segment = ch.seg AND %s
			WINDOW w AS (ORDER BY depth %s ROWS UNBOUNDED PRECEDING)
			ORDER BY depth %s LIMIT $4) s
		WHERE %s = 0 OR s.page_bytes <= %s OR s.page_bytes = s.body_bytes`,
		cols, columns, parentCol, rng, order, order, budget, budget)
}

// sameAsPrevious is the parent pageRange sends for a row whose parent is the row read
// just before it.
const sameAsPrevious = ""

// sameAsNext is the parent pageRangeOf sends for a row of a backward page whose parent
// is the row read just after it (never a public id, which starts "msg_").
const sameAsNext = "+"

// sharedColumns rewrite a page's message columns for the rows a fork shares (ch.shared,
// linkExpansion): the fork's derived id, the depth as the position, and segment 0, where
// the fork's history starts; and every row's conversation id as conv.
func sharedColumns(conv string) *strings.Replacer {
	return strings.NewReplacer(
		publicMessageID("id::text")+" AS id, conversation_id::text AS conversation_id, position,",
		publicMessageID("CASE WHEN ch.shared THEN fork_message_id(ch.fno, depth)::text ELSE id::text END")+" AS id, "+conv+" AS conversation_id, CASE WHEN ch.shared THEN depth ELSE position END AS position,",
		// llmOnePageColumns' (an LLM export's read of one conversation): the same for its
		// rows, whose conversation id stays NULL.
		publicMessageID("id::text")+" AS id, NULL::text AS conversation_id, position,",
		publicMessageID("CASE WHEN ch.shared THEN fork_message_id(ch.fno, depth)::text ELSE id::text END")+" AS id, NULL::text AS conversation_id, CASE WHEN ch.shared THEN depth ELSE position END AS position,",
		" segment, depth,", " CASE WHEN ch.shared THEN 0 ELSE segment END AS segment, depth,")
}

// conversationPageSQL reads a conversation ($1) of the owner $5 and a page of its active
// branch, forward (conversationPageSQL[false]) or backward (true), as pageSQL does (the
// same bounds $2, $3 and $4; the byte budget is $6): the conversation lookup folded into
// the page statement, so that `conversation(id:) { messages }` is one statement and one
// round trip. Its first row is the conversation's (headRow), in the columns of a
// message row; then come the page's rows, each a message's columns (their conversation
// id NULL: the first row's) and its parent's id (when $7 and the conversation has no
// forks: its tree fields without treeSQL; see pageRange).
// UNION ALL runs its branches in order. No row at all when the owner has no such
// conversation. The page is read exactly as pageSQL reads it: its segments found from
// the leaf segment's row (chainQuery), then index range scans whatever the statistics
// and the plan cache (db/page_plans_test.go, db/chain_plans_test.go).
var conversationPageSQL = map[bool]string{false: conversationPageQuery(false, false, true), true: conversationPageQuery(true, false, true)}

// treelessConversationPageSQL and treelessFittingConversationPageSQL are
// conversationPageSQL and fittingConversationPageSQL for a page read without the tree
// fields (the same arguments, and the same rows with every parent NULL, as $7 false
// gives): their statements hold no probe of the parent. Postgres keeps a prepared
// statement's generic plan only when its estimated cost is no more than its custom
// plans', and the probe, which a custom plan for $7 false leaves out, is in the generic
// plan's cost once for each row of each of the chain's ranges: the forward statements
// of a conversation with branches were planned anew on every read (60 custom plans in
// 60 reads; in pgbench 1.32 ms a read against 0.65 with the generic plan forced).
var (
	treelessConversationPageSQL        = map[bool]string{false: conversationPageQuery(false, false, false), true: conversationPageQuery(true, false, false)}
	treelessFittingConversationPageSQL = map[bool]string{false: conversationPageQuery(false, true, false), true: conversationPageQuery(true, true, false)}
)

// fittingConversationPageSQL is conversationPageSQL for a page that fits its byte budget,
// as fittingLinePageSQL is linePageSQL's: the same arguments, and the same rows when the
// conversation's row says that the page fits (pageFits; for a linked fork the bound
// covers the rows it shares, migration 000026), each of the chain's ranges read without
// the window (pageRangeOf with fits); when it does not, the chain is empty and the
// first row comes alone, and FindConversationPage reads the page again with the window.
// The parents hold across the ranges as within one: the depths along a branch are
// dense, and the ranges come in the page's order, so the row read just before (forward)
// or just after (backward) a row of the page but its first (forward) or last
// (backward) is the one at the depth below, in whichever range it is; the markers say
// so where the window sent the id of a range's first row's parent (its probe, or for
// a row a linked fork shares, its derived id).
var fittingConversationPageSQL = map[bool]string{false: conversationPageQuery(false, true, true), true: conversationPageQuery(true, true, true)}

// conversationPageQuery is the conversation's page statement, read forward or
// backward, without the budget's window (fits) or with it, with the tree fields'
// parents (tree) or without: then its parent column is "$7 AND false", which the
// planner folds to false and so plans the probe out, and $7 keeps its type, so that
// every headed statement takes the same arguments.
func conversationPageQuery(backward, fits, tree bool) string {
	parent := "$7::boolean AND (ch.hi = " + noBound + " OR ch.shared)"
	if !tree {
		parent = "$7::boolean AND false"
	}
	branch := `own CROSS JOIN LATERAL (SELECT own.active_segment AS seg, own.leaf AS leaf) b`
	if fits {
		branch = `own CROSS JOIN LATERAL (SELECT own.active_segment AS seg, own.leaf AS leaf
				WHERE $6 = 0 OR $4::bigint * own.max_message_bytes <= $6) b` // pageFits
	}
	return fmt.Sprintf(`WITH own AS (%s),
		chain AS (%s)
		%s
		UNION ALL
		SELECT m.* FROM chain ch
		CROSS JOIN LATERAL (%s) m`,
		ownQuery,
		chainQuery(backward, "1::bigint", branch),
		headRow,
		pageRangeOf(backward, pageColumns, "NULL::text", "$6", parent, fits))
}

// linePageSQL is conversationPageSQL (the same arguments, the same rows) for a
// conversation that is one line, the common case: no branches (segments = 0) and no
// shared history (base_depth = 0, db/fork.go). Its page is one range of depths of
// segment 0 read without the chain (no segment or link to look up, no chain to sort), a
// third of the statement's execution and the planning of its nodes on every run. Whether
// the conversation is one line is decided from its row, read by the same statement:
// when it is not, the first row comes alone, saying so (its line column false), and
// FindConversationPage reads the page with conversationPageSQL. The page's range is
// that of conversationPageSQL's one segment: an index range scan whatever the
// statistics and the plan cache (db/page_plans_test.go).
var linePageSQL = map[bool]string{false: linePageQuery(false, false), true: linePageQuery(true, false)}

// fittingLinePageSQL is linePageSQL for a page that fits its byte budget: the same
// arguments, and the same rows when the conversation's row says that the page fits
// (pageFits: $4 times the bound of its messages' size, max_message_bytes, migration
// 000026, is within the budget $6, or there is none), read without the budget's window
// (pageRangeOf with fits), a quarter of Postgres's time for a page of 100; when it does
// not, the first row comes alone, as for a conversation that is not one line, and
// FindConversationPage reads the page again with the window.
var fittingLinePageSQL = map[bool]string{false: linePageQuery(false, true), true: linePageQuery(true, true)}

func linePageQuery(backward, fits bool) string {
	line := "own.line"
	if fits {
		line = "own.line AND ($6 = 0 OR $4::bigint * own.max_message_bytes <= $6)" // pageFits
	}
	return fmt.Sprintf(`WITH own AS (%s)
		%s
		UNION ALL
		SELECT m.* FROM own
		CROSS JOIN LATERAL (SELECT own.id AS conv, 0 AS seg, %s AS hi, own.leaf AS leaf, false AS shared,
			NULL::bigint AS fno, 0 AS bdepth) ch
		CROSS JOIN LATERAL (%s) m
		WHERE %s`,
		ownQuery, headRow, noBound,
		pageRangeOf(backward, pageColumns, "NULL::text", "$6", "$7::boolean", fits), line)
}

// pageFits reports whether a page of at most rows messages, each of at most bound bytes
// (max_message_bytes), fits the byte budget (0: none), so that the budget's running sum
// cannot cut it: fittingLinePageSQL's condition, which it must stay.
func pageFits(budget, rows, bound int) bool {
	return budget <= 0 || int64(rows)*int64(bound) <= int64(budget)
}

// ownQuery reads the conversation of conversationPageSQL and linePageSQL: what headRow
// sends of it, and what finding its active branch takes.
var ownQuery = `SELECT ` + conversationColumns + `, segments, segments = 0 AND base_depth = 0 AS line,
			active_segment, ` + leafDepth + ` AS leaf, ` + forkLinkColumns + `, max_message_bytes FROM conversations WHERE id = $1 AND owner = $5`

// headRow is the first row of conversationPageSQL and linePageSQL: the conversation's
// conversationColumns, its number of segments, whether it is one line (linePageSQL) and
// the bound of its messages' size (fittingLinePageSQL), each in a column of a message
// row of its type (headPlaces), the others NULL. Where the conversation's columns came
// first, NULL in every message row, each page of 100 messages sent, read and scanned
// 900 NULLs.
var headRow = func() string {
	values := make([]string, len(pageRowColumns))
	for i := range values {
		values[i] = "NULL"
	}
	for _, p := range headPlaces {
		values[p.at] = p.value
	}
	return "SELECT " + strings.Join(values, ", ") + " FROM own"
}()

// pageRowColumns name the columns of a message row of conversationPageSQL and
// linePageSQL, in order: messageColumns, body_bytes and the parent's id.
var pageRowColumns = append(strings.Split(strings.Join(strings.Fields(messageColumns), ""), ","), "body_bytes", "parent")

// headPlaces are the columns of the conversation's row that headRow sends (value, read
// from ownQuery), each in the message row's column named column, of its type, and
// where scanRows scans it (dest); at is column's place in pageRowColumns.
var headPlaces = func() []headPlace {
	places := []headPlace{
		{column: "id", value: "id::text", dest: func(h *conversationHead, _ *time.Location) any { return &h.row.ID }},
		{column: "position", value: "message_count", dest: func(h *conversationHead, _ *time.Location) any { return intColumn{&h.row.MessageCount} }},
		{column: "content", value: "title", dest: func(h *conversationHead, _ *time.Location) any { return &h.row.Title }},
		{column: "source_id", value: "forked_from", dest: func(h *conversationHead, _ *time.Location) any { return &h.row.ForkedFrom }},
		{column: "created_at", value: pageTime("created_at"), dest: func(h *conversationHead, zone *time.Location) any {
			return timeColumn{t: &h.row.CreatedAt, zone: zone}
		}},
		{column: "updated_at", value: pageTime("updated_at"), dest: func(h *conversationHead, zone *time.Location) any {
			return timeColumn{t: &h.row.UpdatedAt, zone: zone}
		}},
		{column: "segment", value: "segments", dest: func(h *conversationHead, _ *time.Location) any { return intColumn{&h.segments} }},
		{column: "depth", value: "last_position", dest: func(h *conversationHead, _ *time.Location) any { return intColumn{&h.row.LastPosition} }},
		{column: "hidden", value: "line", dest: func(h *conversationHead, _ *time.Location) any { return &h.line }},
		{column: "body_bytes", value: "max_message_bytes", dest: func(h *conversationHead, _ *time.Location) any {
			return intColumn{&h.maxMessageBytes}
		}},
	}
	if len(pageRowColumns) != messageWidth+1 {
		panic(fmt.Sprintf("db: a page's message row has %d columns, messageWidth says %d and the parent", len(pageRowColumns), messageWidth))
	}
	for i, p := range places {
		places[i].at = slices.Index(pageRowColumns, p.column)
		if places[i].at < 0 {
			panic("db: headPlaces: no message column " + p.column)
		}
	}
	return places
}()

// headPlace is one of headPlaces.
type headPlace struct {
	column, value string
	at            int
	dest          func(h *conversationHead, zone *time.Location) any
}

// messageWidth is how many columns pageColumns has.
const messageWidth = 23

// pageColumns are messageColumns as a page reads them, and body_bytes: the message's
// public id (parley.MessageID: made by Postgres, where the reader made a second string
// of the key it had read), the conversation's id as text (lib/pq reads a uuid in binary
// and formats it into a new buffer that database/sql then copies into a string, two
// allocations per id where text is one), and content only for
// rows of schema version 1, the only ones decodeMessage builds from it (a version 2 row
// holds its text in its payload too): a tool result's text was sent, received and
// copied twice. What the row takes as read comes from body_bytes (migration 000017),
// which counts content whether or not it is sent. The times come as name (pageTime),
// and role and status, words of a few letters that their CHECK constraints fix, as
// name: lib/pq hands over the text of a type it does not decode as the bytes it read,
// where it copies text into a new string, and the reader takes the constant of that
// spelling (knownWord).
var pageColumns = strings.NewReplacer(
	"id, conversation_id,", publicMessageID("id::text")+" AS id, conversation_id::text AS conversation_id,",
	" content,", " CASE WHEN schema_version = 1 THEN content ELSE '' END AS content,",
	" created_at, updated_at,", pageTimes,
	" role,", " role::name AS role,", "\tstatus,", " status::name AS status,",
	" deleted_at", " "+pageTime("deleted_at")+" AS deleted_at",
	"\n", " ").Replace(messageColumns) + ", body_bytes"

// publicMessageID is the SQL expression of the public id (parley.MessageID) of the
// message whose key is the text expression key.
func publicMessageID(key string) string {
	return "'" + parley.MessageID("") + "' || " + key
}

// pageTimes are a page's creation and update times (pageTime).
var pageTimes = " " + pageTime("created_at") + " AS created_at, " + pageTime("updated_at") + " AS updated_at,"

// pageTime is the SQL expression of a page's time column col: its text (ISO, with the
// session's offset) as name, which lib/pq hands over as the bytes it read and
// timeColumn parses without allocating. As timestamptz, lib/pq copied each into a
// string of its own to parse it and returned the time boxed, two allocations and a
// slower parse each; as JSON (to_json), which lib/pq also hands over as read, Postgres
// spent 7.8% of its CPU on a page's times, most of it escaping the text it had just
// written (escape_json).
func pageTime(col string) string { return col + "::text::name" }

// llmPageColumns are pageColumns without what no LLM export uses (PageRequest.ForLLM):
// the times, NULL, and source_id, NULL.
var llmPageColumns = strings.NewReplacer(
	" source_id,"+pageTimes, " NULL::text AS source_id, NULL::name AS created_at, NULL::name AS updated_at,",
).Replace(pageColumns)

// llmOnePageColumns are llmPageColumns without the conversation's id, NULL
// (llmOnePageSQL).
var llmOnePageColumns = strings.Replace(llmPageColumns, " conversation_id::text AS conversation_id,", " NULL::text AS conversation_id,", 1)

// assemblePage turns the rows read for one conversation (limit+1 at most, in read order)
// into its page of a branch ending at position last.
// With lineTree, each message's tree fields come from its row: its parent (Parent), and
// itself alone among its siblings, as in a conversation without forks.
func (db *DB) assemblePage(rows []pageRow, page parley.PageRequest, limit, after, before, last int, cut, lineTree bool) (*parley.MessagePage, error) {
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
	var trees []parley.TreeInfo
	var self []string
	if lineTree {
		// The page's tree fields, in two allocations instead of two a message.
		trees, self = make([]parley.TreeInfo, len(rows)), make([]string, len(rows))
	}
	for i := range rows {
		m, err := rows[i].message()
		if err != nil {
			return nil, err
		}
		if lineTree {
			meta := m.Meta()
			self[i] = meta.ID
			trees[i] = parley.TreeInfo{ParentID: rows[i].parentID, SiblingIDs: self[i : i+1 : i+1]}
			meta.Tree = &trees[i]
		}
		out.Messages = append(out.Messages, m)
		out.Bytes += rows[i].bytes
	}
	// Positions are dense, so what lies beyond the page follows from its bounds; "more"
	// covers messages added since conv was read.
	if n := len(rows); n > 0 {
		out.HasPreviousPage = rows[0].depth > 1
		out.HasNextPage = (!backward && more) || rows[n-1].depth < last
	} else {
		out.HasPreviousPage = (backward && more) || (after > 0 && last > 0)
		out.HasNextPage = (!backward && more) || (before > 0 && before <= last)
	}
	return out, nil
}
