package db

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

var _ parley.SearchService = (*DB)(nil)

// Search (migration 000016): every message has a weighted tsvector, search_vector,
// filled by a trigger from what it stores, and a GIN index on it. A search is two
// statements: the query is parsed once with the stored configuration (which also tells
// an empty query), then one statement finds, filters, orders and cuts the page, and
// makes the page's snippets and branch leaves and reads its conversations.

// onActiveBranch is the condition that message m is on the active branch of its
// conversation c: the one place search knows how branches are stored (segments, db/tree.go).
// A conversation without segments is one line; a message of the active leaf's segment
// up to the leaf is on it; any other is on it when its segment is on the chain of
// segments from the active leaf to the root (message_on_branch, migration 000016).
const onActiveBranch = `(c.segments = 0
	OR (m.segment = c.active_segment AND m.depth <= c.active_depth)
	OR message_on_branch(c.id, c.active_segment, c.active_depth, m.segment, m.depth))`

// branchLeafOf is the id of the leaf of the branch a hit m of conversation c is on
// (onActive says whether it is the active branch): the active leaf, or the last message
// of m's segment (the branch through m continued along first children).
var branchLeafOf = `(CASE WHEN onactive
	THEN ` + activeLeafOf("c") + `
	ELSE COALESCE((SELECT l.id::text FROM messages l WHERE l.conversation_id = c.id AND l.segment = m.segment
		ORDER BY l.depth DESC LIMIT 1),
		CASE WHEN m.segment = 0 AND c.base_depth > 0 THEN fork_message_id(c.fork_no, c.base_depth)::text END) END)`

// sharedHits is, for search, the rows the owner's ($1) linked forks share (db/fork.go)
// whose vectors match q, each as the fork's message m (sharedRowColumns, with its
// vector, its owner and the row's own id, rid) of the fork c: one probe of
// conversations_linked_idx when the owner has no linked fork, else the search index
// probed per entry of each link.
func sharedHits(q string) string {
	return `conversations c
		CROSS JOIN LATERAL fork_link_entries(c.id, c.base_depth) e
		CROSS JOIN LATERAL (SELECT ` + sharedRowColumns("c") + `, m.search_vector, m.owner, m.id AS rid
			FROM messages m WHERE m.conversation_id = e.conv AND m.segment = e.seg AND m.depth > e.lo AND m.depth <= e.hi
				AND m.search_vector IS NOT NULL AND m.search_vector @@ ` + q + ` AND m.deleted_at IS NULL) m
		WHERE c.owner = $1 AND c.base_depth > 0 AND`
}

// hitColumns are messageColumns of a relevance hit read by its row (m) and its
// candidate (r): the hit's id, and for a row a fork shares, the fork's conversation,
// the depth as the position, segment 0.
var hitColumns = messageColumnsOf("m", map[string]string{
	"id":              "r.id",
	"conversation_id": "COALESCE(r.fconv, m.conversation_id) AS conversation_id",
	"position":        "CASE WHEN r.fconv IS NULL THEN m.position ELSE m.depth END AS position",
	"segment":         "CASE WHEN r.fconv IS NULL THEN m.segment ELSE 0 END AS segment",
})

func leafDepthOf(c string) string {
	return `(CASE WHEN ` + c + `.segments = 0 THEN ` + c + `.last_position ELSE ` + c + `.active_depth END)`
}

// headlineOptions cut a snippet of 15 to 35 words around the matches, marked by
// parley.SnippetStart and SnippetStop. One piece, not fragments: Postgres ends a
// fragment at its last match, which cuts a path found by a part in the middle.
const headlineOptions = "StartSel=\x02, StopSel=\x03, MaxWords=35, MinWords=15, ShortWord=2"

// searchQuery parses req's query with the stored configuration: the configuration's
// name and the tsquery as text. ESEARCHQUERYEMPTY when nothing in it can be searched for.
func (db *DB) searchQuery(ctx context.Context, req parley.SearchRequest) (cfg, query string, err error) {
	sq, err := parley.ParseSearchQuery(req.Query, req.Prefix)
	if err != nil {
		return "", "", err
	}
	// A prefix word becomes a quoted tsquery lexeme with :* (each of its parts, in a phrase).
	var row struct {
		Cfg   string `db:"cfg"`
		Query string `db:"query"`
		Nodes int    `db:"nodes"`
	}
	err = db.db.GetContext(ctx, &row, `WITH p AS (
			SELECT config, websearch_to_tsquery(config, $1) AS web,
				CASE WHEN $2 <> '' THEN to_tsquery(config, '''' || $2 || ''':*') END AS prefix
			FROM search_config)
		SELECT config::text AS cfg, q::text AS query, numnode(q) AS nodes FROM p,
			LATERAL (SELECT CASE WHEN coalesce(numnode(prefix), 0) = 0 THEN web WHEN numnode(web) = 0 THEN prefix
				ELSE web && prefix END AS q) x`, sq.Web, sq.Prefix)
	if err != nil {
		return "", "", classify(fmt.Errorf("parse search query: %w", err))
	}
	if row.Nodes == 0 {
		return "", "", parley.Errorf(parley.ESEARCHQUERYEMPTY, "query: %q has no word to search for (only operators, punctuation or words the %s configuration ignores)",
			truncate(req.Query), row.Cfg)
	}
	return row.Cfg, row.Query, nil
}

// weightTSQuery restricts every lexeme of q, a tsquery as Postgres prints it, to the
// weights w: 'word' becomes 'word':ABC and a prefix 'wor':* becomes 'wor':*ABC. A
// negated word then excludes the messages having it at those weights, as if the others
// were not in the vector.
func weightTSQuery(q, w string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		b.WriteByte(c)
		if c != '\'' {
			continue
		}
		// A lexeme: quotes inside it are doubled, backslashes escape.
		for i++; i < len(q); i++ {
			b.WriteByte(q[i])
			if q[i] == '\\' && i+1 < len(q) {
				i++
				b.WriteByte(q[i])
			} else if q[i] == '\'' {
				if i+1 < len(q) && q[i+1] == '\'' {
					i++
					b.WriteByte(q[i])
					continue
				}
				break
			}
		}
		if strings.HasPrefix(q[i+1:], ":*") {
			b.WriteString(":*" + w)
			i += 2
		} else {
			b.WriteString(":" + w)
		}
	}
	return b.String()
}

func truncate(s string) string {
	if len(s) <= 80 {
		return s
	}
	return strings.ToValidUTF8(s[:80], "") + "…"
}

// args collects a statement's parameters.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// filterSQL is the conditions of f on message m of owner, its parameters added to a.
func filterSQL(f *parley.SearchFilter, owner string, a *args) (string, error) {
	var where []string
	if len(f.ConversationIDs) > 0 {
		keys := make([]string, len(f.ConversationIDs))
		for i, id := range f.ConversationIDs {
			keys[i], _ = parley.ParseConversationID(id)
		}
		where = append(where, `m.conversation_id = ANY(`+a.add(pq.Array(keys))+`::uuid[])`)
	}
	if len(f.Kinds) > 0 {
		where = append(where, `m.kind = ANY(`+a.add(pq.Array(f.Kinds))+`::text[])`)
	}
	if len(f.Roles) > 0 {
		where = append(where, `m.role = ANY(`+a.add(pq.Array(f.Roles))+`::text[])`)
	}
	if f.ToolResultStatus != "" {
		// Only tool results have a status: a tool name then names a result's tool. Both
		// are keys of the search index (search_tool_keys, migration 000022), which
		// intersects them with the words: owner<US>status, or owner<US>status<US>tool for
		// each exact name (m.owner is the owner's already, so a key names the status and
		// tool exactly).
		keys := `search_tool_keys(m.owner, m.kind, m.tool_results)`
		prefix := owner + "\x1f" + string(f.ToolResultStatus)
		names, exact := exactToolNames(f.ToolNames)
		switch {
		case len(f.ToolNames) == 0:
			where = append(where, keys+` @> `+a.add(pq.Array([]string{prefix}))+`::text[]`)
		case exact:
			want := make([]string, len(names))
			for i, n := range names {
				want[i] = prefix + "\x1f" + n
			}
			where = append(where, keys+` && `+a.add(pq.Array(want))+`::text[]`)
		default:
			where = append(where, keys+` @> `+a.add(pq.Array([]string{prefix}))+`::text[]
			AND m.tool_results->0->>'toolName' LIKE ANY(`+a.add(pq.Array(toolNameLikes(f.ToolNames)))+`::text[])`)
		}
	} else if len(f.ToolNames) > 0 {
		result := `m.tool_results->0->>'toolName' `
		var request string
		if names, exact := exactToolNames(f.ToolNames); exact {
			p := a.add(pq.Array(names))
			result += `= ANY(` + p + `::text[])`
			request = `tc->>'name' = ANY(` + p + `::text[])`
		} else {
			p := a.add(pq.Array(toolNameLikes(f.ToolNames)))
			result += `LIKE ANY(` + p + `::text[])`
			request = `tc->>'name' LIKE ANY(` + p + `::text[])`
		}
		where = append(where, `(m.kind = 'tool_result' AND `+result+`
			OR m.kind = 'tool_request' AND EXISTS (SELECT 1 FROM jsonb_array_elements(m.tool_calls) tc WHERE `+request+`))`)
	}
	if f.ApprovalStatus != "" {
		where = append(where, `m.kind = 'tool_request' AND EXISTS (SELECT 1 FROM jsonb_array_elements(m.tool_calls) tc
			WHERE tc->>'approvalStatus' = `+a.add(string(f.ApprovalStatus))+`)`)
	}
	if len(f.Models) > 0 {
		where = append(where, `m.provenance->>'model' = ANY(`+a.add(pq.Array(f.Models))+`::text[])`)
	}
	if len(f.Providers) > 0 {
		where = append(where, `m.provenance->>'provider' = ANY(`+a.add(pq.Array(f.Providers))+`::text[])`)
	}
	if f.CreatedAfter != nil {
		where = append(where, `m.created_at >= `+a.add(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		where = append(where, `m.created_at < `+a.add(*f.CreatedBefore))
	}
	if !f.AllBranches {
		where = append(where, onActiveBranch)
	}
	if len(where) == 0 {
		return "true", nil
	}
	return strings.Join(where, "\n\t\tAND "), nil
}

// toolNameLikes is the LIKE patterns of tool name globs.
func toolNameLikes(globs []string) []string {
	likes := make([]string, len(globs))
	for i, g := range globs {
		likes[i] = parley.ToolNameLike(g)
	}
	return likes
}

// exactToolNames is the tool names of globs when none has a wildcard: an equality, which
// an index can answer, rather than LIKE.
func exactToolNames(globs []string) ([]string, bool) {
	for _, g := range globs {
		if strings.ContainsAny(g, "*?") {
			return nil, false
		}
	}
	return globs, true
}

// Search implements parley.SearchService.
func (db *DB) Search(ctx context.Context, req parley.SearchRequest) (*parley.SearchPage, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkSearchPage(&req); err != nil {
		return nil, err
	}
	if err := parley.CheckSearchFilter(&req.Filter); err != nil {
		return nil, err
	}
	var after *parley.SearchCursor
	if req.After != "" {
		c, err := parley.ParseSearchCursor("after", req.After, req.Order)
		if err != nil {
			return nil, err
		}
		after = &c
	}
	cfg, query, err := db.searchQuery(ctx, req)
	if err != nil {
		return nil, err
	}
	stmt, a, err := searchSQL(&req, after, owner, cfg, query)
	if err != nil {
		return nil, err
	}
	rows, err := db.db.QueryxContext(ctx, stmt, a...)
	if err != nil {
		return nil, classify(fmt.Errorf("search: %w", err))
	}
	defer rows.Close()
	page := &parley.SearchPage{}
	// A page's hits share conversations: one value each.
	convs := map[string]*parley.Conversation{}
	for rows.Next() {
		var r struct {
			messageRow
			Conv     conversationRow `db:"conv"`
			Rank     float32         `db:"rank"`
			Micros   int64           `db:"micros"`
			OnActive bool            `db:"onactive"`
			Leaf     string          `db:"leaf"`
			Headline string          `db:"headline"`
		}
		if err := rows.StructScan(&r); err != nil {
			return nil, fmt.Errorf("search: scan: %w", err)
		}
		if len(page.Hits) == req.First {
			page.HasNextPage = true
			break
		}
		m, err := decodeMessage(&r.messageRow, db.log)
		if err != nil {
			return nil, err
		}
		c := parley.SearchCursor{Order: req.Order, Rank: r.Rank, Micro: r.Micros, Key: r.ID}
		if req.Order != parley.SearchByNewest {
			c.Order = parley.SearchByRelevance
		}
		conv := convs[r.Conv.ID]
		if conv == nil {
			conv = r.Conv.conversation()
			convs[r.Conv.ID] = conv
		}
		page.Hits = append(page.Hits, &parley.SearchHit{
			Message:        m,
			Conversation:   conv,
			BranchLeafID:   parley.MessageID(r.Leaf),
			OnActiveBranch: r.OnActive,
			MessageCursor:  parley.MessageCursor(r.Depth),
			Snippet:        parley.MakeSnippet(r.Headline),
			Rank:           float64(r.Rank),
			Cursor:         c.String(),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, classify(fmt.Errorf("search: %w", err))
	}
	return page, nil
}

// searchSQL is the statement that finds the page of req (checked, its cursor after,
// its query parsed into the tsquery query with configuration cfg) among owner's
// messages, and its arguments.
func searchSQL(req *parley.SearchRequest, after *parley.SearchCursor, owner, cfg, query string) (string, args, error) {
	a := args{owner}
	qp := a.add(query) + `::tsquery`
	filters, err := filterSQL(&req.Filter, owner, &a)
	if err != nil {
		return "", nil, err
	}
	// The thinking is weight D: without it, the query's words must match at weights A-C
	// (wq). The index cannot tell weights, so every row it finds for wq is read again
	// (its vector) to check them.
	wq := qp
	if !req.Filter.IncludeThinking {
		wq = a.add(weightTSQuery(query, "ABC")) + `::tsquery`
	}
	rank := `ts_rank_cd(m.search_vector, ` + wq + `)`
	order, cursorCond := `rank DESC, m.id`, ``
	if req.Order == parley.SearchByNewest {
		order = `m.created_at DESC, m.id DESC`
	}
	if after != nil {
		if req.Order == parley.SearchByNewest {
			t := a.add(after.Micro)
			cursorCond = `AND (m.created_at, m.id) < (to_timestamp(` + t + `::float8 / 1e6), ` + a.add(after.Key) + `::uuid)`
		} else {
			r := a.add(after.Rank)
			cursorCond = `AND (` + rank + ` < ` + r + `::real OR ` + rank + ` = ` + r + `::real AND m.id > ` + a.add(after.Key) + `::uuid)`
		}
	}
	limit := a.add(req.First + 1)
	cfgP := a.add(cfg)
	cols := `m.` + strings.ReplaceAll(messageColumns, ", ", ", m.")
	var found string
	if req.Order == parley.SearchByNewest {
		// Newest first: for a common word Postgres walks the owner's messages newest
		// first (messages_search_newest_idx) and stops at the page; for a rare one it
		// reads the word's matches through the search index and sorts them.
		found = `SELECT * FROM ((SELECT ` + cols + `, ` + rank + ` AS rank, (extract(epoch FROM m.created_at) * 1e6)::bigint AS micros
			FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.owner = $1
			WHERE m.owner = $1 AND m.search_vector @@ ` + wq + `
				AND m.deleted_at IS NULL
				AND ` + filters + `
				` + cursorCond + `
			ORDER BY ` + order + ` LIMIT ` + limit + `)
			UNION ALL
			(SELECT ` + cols + `, ` + rank + ` AS rank, (extract(epoch FROM m.created_at) * 1e6)::bigint AS micros
			FROM ` + sharedHits(wq) + ` ` + filters + `
				` + cursorCond + `
			ORDER BY ` + order + ` LIMIT ` + limit + `)) m
			ORDER BY ` + order + ` LIMIT ` + limit
	} else {
		// Relevance ranks a bounded set of candidates: the matches of the owner's most
		// recently updated conversations, newest conversation first, at most
		// parley.SearchRelevanceCandidates. They are chosen without reading a vector
		// (the index answers qp exactly), so a common word costs the candidates, not
		// every match of the owner; the weights are checked and the rank computed on
		// them only.
		weightCheck, candidates := ``, qp
		if wq != qp {
			weightCheck = `AND m.search_vector @@ ` + wq
			if strings.Contains(query, "!") {
				// An excluded word may be in the thinking alone: qp would leave out a
				// message that wq finds. Such a query chooses by wq, reading vectors.
				candidates = wq
			}
		}
		// Candidates and ranks carry only ids and vectors; the page's rows are read by id.
		// A linked fork's shared rows are candidates too, under the fork's ids (sharedHits);
		// each candidate carries the row it reads (rid) and, for those, the fork (fconv).
		n := strconv.Itoa(parley.SearchRelevanceCandidates)
		found = `SELECT ` + hitColumns + `, r.rank, (extract(epoch FROM m.created_at) * 1e6)::bigint AS micros
			FROM (SELECT m.id, m.rid, m.fconv, ` + rank + ` AS rank
				FROM ((SELECT m.id, m.search_vector, m.id AS rid, NULL::uuid AS fconv, c.updated_at AS cu, c.id AS cid, m.segment AS s, m.depth AS d
					FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.owner = $1
					WHERE m.owner = $1 AND m.search_vector @@ ` + candidates + `
						AND m.deleted_at IS NULL
						AND ` + filters + `
					ORDER BY c.updated_at DESC, c.id DESC, m.segment DESC, m.depth DESC
					LIMIT ` + n + `)
					UNION ALL
					(SELECT m.id, m.search_vector, m.rid, c.id, c.updated_at, c.id, m.segment, m.depth
					FROM ` + sharedHits(candidates) + ` ` + filters + `
					ORDER BY c.updated_at DESC, c.id DESC, m.segment DESC, m.depth DESC
					LIMIT ` + n + `)
					ORDER BY cu DESC, cid DESC, s DESC, d DESC LIMIT ` + n + `) m
				WHERE true ` + weightCheck + `
					` + cursorCond + `
				ORDER BY ` + order + ` LIMIT ` + limit + `) r
			JOIN messages m ON m.id = r.rid`
	}
	// The page's rows are found first; their snippets, branch and leaf are made for them
	// only, and their conversations read in the same statement (and snapshot).
	stmt := `SELECT h.*, ` + hitConversationColumns + `, ts_headline(` + cfgP + `::regconfig, message_search_document(h.kind, h.content, h.payload, h.tool_calls,
			h.tool_results, ` + a.add(req.Filter.IncludeThinking) + `), ` + qp + `, '` + headlineOptions + `') AS headline,
			onactive, ` + branchLeafOf + ` AS leaf
		FROM (` + found + `) h
		JOIN conversations c ON c.id = h.conversation_id,
		LATERAL (SELECT h.segment, h.depth) m,
		LATERAL (SELECT ` + activeOf(req.Filter.AllBranches) + ` AS onactive) ob
		ORDER BY ` + strings.NewReplacer("m.", "h.").Replace(order)
	return stmt, a, nil
}

// hitConversationColumns are conversationColumns of a hit's conversation c, named for
// the conv field of Search's row.
var hitConversationColumns = `c.id AS "conv.id", c.title AS "conv.title", c.created_at AS "conv.created_at", c.updated_at AS "conv.updated_at", ` +
	leafDepthOf("c") + ` AS "conv.message_count", ` + leafDepthOf("c") + ` AS "conv.last_position", c.forked_from::text AS "conv.forked_from"`

// activeOf is whether a hit m of conversation c is on its active branch: it is when
// the search was of active branches only.
func activeOf(allBranches bool) string {
	if allBranches {
		return onActiveBranch
	}
	return "true"
}

// fillConversations reads the conversations keyed in convs.
func (db *DB) fillConversations(ctx context.Context, owner string, convs map[string]*parley.Conversation) error {
	if len(convs) == 0 {
		return nil
	}
	keys := make([]string, 0, len(convs))
	for k := range convs {
		keys = append(keys, k)
	}
	var rows []conversationRow
	if err := db.db.SelectContext(ctx, &rows, `SELECT `+conversationColumns+` FROM conversations
		WHERE id = ANY($1::uuid[]) AND owner = $2`, pq.Array(keys), owner); err != nil {
		return classify(fmt.Errorf("search: read conversations: %w", err))
	}
	for i := range rows {
		convs[rows[i].ID] = rows[i].conversation()
	}
	return nil
}

// checkSearchPage checks and defaults a search's page size and order.
func checkSearchPage(req *parley.SearchRequest) error {
	switch {
	case req.First == 0:
		req.First = parley.DefaultSearchPageSize
	case req.First < 0 || req.First > parley.MaxSearchPageSize:
		return parley.Errorf(parley.EINVALID, "first: %d, not between 1 and %d", req.First, parley.MaxSearchPageSize)
	}
	switch req.Order {
	case "":
		req.Order = parley.SearchByRelevance
	case parley.SearchByRelevance, parley.SearchByNewest:
	default:
		return parley.Errorf(parley.EINVALID, "order: %q is not an order", req.Order)
	}
	return nil
}

// SearchConversations implements parley.SearchService: the conversations whose title
// matches, or whose active branch has messages that match (text only, thinking left
// out), by relevance (a title match weighs as much as the best message) or newest.
func (db *DB) SearchConversations(ctx context.Context, req parley.SearchRequest) (*parley.ConversationSearchPage, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkSearchPage(&req); err != nil {
		return nil, err
	}
	var after *parley.SearchCursor
	if req.After != "" {
		c, err := parley.ParseSearchCursor("after", req.After, req.Order)
		if err != nil {
			return nil, err
		}
		after = &c
	}
	cfg, query, err := db.searchQuery(ctx, req)
	if err != nil {
		return nil, err
	}
	a := args{owner}
	qp := a.add(query) + `::tsquery`
	cfgP := a.add(cfg) + `::regconfig`
	titleVec := `to_tsvector(` + cfgP + `, search_split(search_escape(c.title)))`
	order, cursorCond := `rank DESC, id`, ``
	if req.Order == parley.SearchByNewest {
		order = `updated_at DESC, id DESC`
	}
	if after != nil {
		if req.Order == parley.SearchByNewest {
			cursorCond = `WHERE (updated_at, id) < (to_timestamp(` + a.add(after.Micro) + `::float8 / 1e6), ` + a.add(after.Key) + `::uuid)`
		} else {
			r := a.add(after.Rank)
			cursorCond = `WHERE (rank < ` + r + `::real OR rank = ` + r + `::real AND id > ` + a.add(after.Key) + `::uuid)`
		}
	}
	wq := a.add(weightTSQuery(query, "ABC")) + `::tsquery`
	// A linked fork's shared rows are its hits too (sharedHits), on every branch of it.
	stmt := `WITH hits AS (
			SELECT conversation_id, sum(n) AS n, max(best) AS best FROM (
				SELECT m.conversation_id, count(*) AS n, max(ts_rank_cd(m.search_vector, ` + qp + `)) AS best
				FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.owner = $1
				WHERE m.owner = $1 AND m.search_vector @@ ` + wq + `
					AND m.deleted_at IS NULL AND ` + onActiveBranch + `
				GROUP BY m.conversation_id
				UNION ALL
				SELECT c.id, count(*), max(ts_rank_cd(m.search_vector, ` + qp + `))
				FROM ` + sharedHits(wq) + ` true
				GROUP BY c.id) h
			GROUP BY conversation_id),
		found AS (
			SELECT c.id, c.updated_at, coalesce(h.n, 0) AS n, ` + titleVec + ` @@ ` + qp + ` AS title_matched,
				greatest(coalesce(h.best, 0), CASE WHEN ` + titleVec + ` @@ ` + qp + `
					THEN ts_rank_cd(setweight(` + titleVec + `, 'A'), ` + qp + `) ELSE 0 END)::real AS rank
			FROM conversations c LEFT JOIN hits h ON h.conversation_id = c.id
			WHERE c.owner = $1 AND (h.n IS NOT NULL OR ` + titleVec + ` @@ ` + qp + `))
		SELECT id, n, title_matched, rank, (extract(epoch FROM updated_at) * 1e6)::bigint AS micros,
			ts_headline(` + cfgP + `, search_split(search_escape((SELECT title FROM conversations WHERE conversations.id = found.id))), ` + qp + `, '` + headlineOptions + `') AS headline
		FROM found ` + cursorCond + ` ORDER BY ` + order + ` LIMIT ` + a.add(req.First+1)
	var rows []struct {
		ID           string  `db:"id"`
		N            int     `db:"n"`
		TitleMatched bool    `db:"title_matched"`
		Rank         float32 `db:"rank"`
		Micros       int64   `db:"micros"`
		Headline     string  `db:"headline"`
	}
	if err := db.db.SelectContext(ctx, &rows, stmt, a...); err != nil {
		return nil, classify(fmt.Errorf("search conversations: %w", err))
	}
	page := &parley.ConversationSearchPage{}
	convs := map[string]*parley.Conversation{}
	for _, r := range rows {
		if len(page.Hits) == req.First {
			page.HasNextPage = true
			break
		}
		c := parley.SearchCursor{Order: req.Order, Rank: r.Rank, Micro: r.Micros, Key: r.ID}
		convs[r.ID] = nil
		page.Hits = append(page.Hits, &parley.ConversationSearchHit{
			Conversation: &parley.Conversation{ID: r.ID}, Title: parley.MakeSnippet(r.Headline),
			TitleMatched: r.TitleMatched, MessageHits: r.N, Rank: float64(r.Rank), Cursor: c.String(),
		})
	}
	if err := db.fillConversations(ctx, owner, convs); err != nil {
		return nil, err
	}
	hits := page.Hits[:0]
	for _, h := range page.Hits {
		// A conversation deleted between the two statements is left out.
		if c := convs[h.Conversation.ID]; c != nil {
			h.Conversation = c
			hits = append(hits, h)
		}
	}
	page.Hits = hits
	return page, nil
}

// SetSearchConfig makes cfg the text search configuration of the stored vectors and of
// every search, rebuilding the vectors when it changes (every message is rewritten:
// minutes for millions). EINVALID when Postgres has no such configuration.
func (db *DB) SetSearchConfig(ctx context.Context, cfg string) (changed bool, err error) {
	var state struct {
		Exists bool `db:"known"`
		Same   bool `db:"same"`
	}
	// Read first, outside a transaction: a server starts with the configuration it had.
	if err := db.db.GetContext(ctx, &state, `SELECT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = $1) AS known,
		EXISTS (SELECT 1 FROM search_config WHERE config::text = $1) AS same`, cfg); err != nil {
		return false, classify(fmt.Errorf("check search configuration: %w", err))
	}
	if !state.Exists {
		return false, parley.Errorf(parley.EINVALID, "search configuration %q: Postgres has no such text search configuration", cfg)
	}
	if state.Same {
		return false, nil
	}
	err = db.transact(ctx, func(tx *txn) error {
		res, err := tx.ExecContext(ctx, `UPDATE search_config SET config = $1::regconfig WHERE config <> $1::regconfig`, cfg)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		changed = true
		_, err = tx.ExecContext(ctx, `UPDATE messages SET search_vector = message_search_vector($1::regconfig, kind, content,
			payload, tool_calls, tool_results) WHERE search_vector IS NOT NULL`, cfg)
		return err
	})
	if err != nil {
		return false, classify(fmt.Errorf("set search configuration %s: %w", cfg, err))
	}
	return changed, nil
}
