package parley

import (
	"context"
	"html"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Search: finding messages across an owner's conversations by their words and by what
// they are. The words go to Postgres's full-text search (websearch_to_tsquery); this file
// holds the rules that do not need the database: the query's limits and its rewriting,
// the filters' checks, the cursors, and the snippet's escaping.

// Search error codes: a query that cannot be searched for says why with its own code.
const (
	// ESEARCHQUERYEMPTY refuses a query with no word to search for: empty, blank, or
	// only punctuation, operators or words the text search configuration ignores.
	ESEARCHQUERYEMPTY = "search_query_empty"
	// ESEARCHQUERYTOOLONG refuses a query over MaxSearchQueryBytes.
	ESEARCHQUERYTOOLONG = "search_query_too_long"
)

// MaxSearchQueryBytes bounds a search query: longer ones are refused
// (ESEARCHQUERYTOOLONG). Enough for any query a person types or pastes.
const MaxSearchQueryBytes = 1000

// MaxSearchFilterValues bounds each list of a search filter (conversations, kinds, roles,
// tool names, models, providers).
const MaxSearchFilterValues = 100

// DefaultSearchPageSize is the number of hits when first is not given.
const DefaultSearchPageSize = 20

// MaxSearchPageSize bounds first.
const MaxSearchPageSize = 100

// SearchRelevanceCandidates bounds what a search in relevance order ranks: the matches
// (after filters) of the owner's most recently updated conversations, newest first, at
// most this many. Older matches are found in newest order or by narrowing the search
// (a conversation, a date range). Ranking every match of a common word in years of
// history is what made a relevance search slow; a bounded set keeps its first page
// (and each next one) fast whatever the history's size.
const SearchRelevanceCandidates = 1000

// SearchOrder orders search hits.
type SearchOrder string

// The orders.
const (
	// SearchByRelevance puts the best matches first (ts_rank_cd), the default.
	SearchByRelevance SearchOrder = "relevance"
	// SearchByNewest puts the newest messages first.
	SearchByNewest SearchOrder = "newest"
)

// SearchFilter narrows a search by what messages are. Empty fields do not narrow.
type SearchFilter struct {
	// ConversationIDs: only these conversations.
	ConversationIDs []string
	Kinds           []MessageKind
	Roles           []Role
	// ToolNames: tool requests calling, and tool results of, a tool of one of these
	// names; a name may be a glob (* any run of characters, ? one character).
	ToolNames        []string
	ToolResultStatus ToolResultStatus
	// ApprovalStatus: tool requests with a call of that status.
	ApprovalStatus ApprovalStatus
	// Models and Providers match the provenance of live messages exactly.
	Models    []string
	Providers []string
	// CreatedAfter (inclusive) and CreatedBefore (exclusive) bound when the message was
	// stored.
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
	// AllBranches searches every branch; otherwise only each conversation's active branch.
	AllBranches bool
	// IncludeThinking searches the model's thinking too.
	IncludeThinking bool
}

// SearchRequest is one page of a search.
type SearchRequest struct {
	// Query is what the user typed: words, "phrases", OR, -exclusions.
	Query string
	// Prefix matches the query's last word as the start of words (search as you type).
	Prefix bool
	Filter SearchFilter
	Order  SearchOrder
	First  int
	// After is the cursor of the last hit of the previous page, "" for the first.
	After string
}

// SearchHit is a message found.
type SearchHit struct {
	Message      Message
	Conversation *Conversation
	// BranchLeafID names the branch the hit is on by its leaf: the active branch when
	// the message is on it, else the branch that continues from it along first
	// children. Reading conversation.messages with branch: BranchLeafID and
	// after/before MessageCursor pages around the hit.
	BranchLeafID   string
	OnActiveBranch bool
	// MessageCursor is the hit's cursor in its conversation's messages.
	MessageCursor string
	Snippet       Snippet
	// Rank is the hit's relevance (ts_rank_cd): higher is better.
	Rank float64
	// Cursor is the hit's place in the search's order.
	Cursor string
}

// Snippet is the part of a message around what was found.
type Snippet struct {
	// HTML is the text escaped, with each match in <mark>...</mark>: safe in innerHTML.
	HTML string
	// Text is the plain text.
	Text string
}

// SearchPage is a page of hits.
type SearchPage struct {
	Hits        []*SearchHit
	HasNextPage bool
}

// ConversationSearchHit is a conversation found by its title or its messages.
type ConversationSearchHit struct {
	Conversation *Conversation
	// Title is the title with its matches marked.
	Title        Snippet
	TitleMatched bool
	// MessageHits counts the conversation's messages found (on its active branch).
	MessageHits int
	Rank        float64
	Cursor      string
}

// ConversationSearchPage is a page of conversations found.
type ConversationSearchPage struct {
	Hits        []*ConversationSearchHit
	HasNextPage bool
}

// SearchService searches an owner's history.
type SearchService interface {
	// Search pages through the caller's messages matching req. Returns
	// ESEARCHQUERYEMPTY or ESEARCHQUERYTOOLONG for a query that cannot be searched for,
	// EINVALID for a bad filter, page size or cursor.
	Search(ctx context.Context, req SearchRequest) (*SearchPage, error)
	// SearchConversations pages through the caller's conversations whose title or
	// active branch matches req.Query (req.Filter is not used), best first. Same errors.
	SearchConversations(ctx context.Context, req SearchRequest) (*ConversationSearchPage, error)
}

// SearchQuery is a query rewritten for Postgres.
type SearchQuery struct {
	// Web is the query for websearch_to_tsquery, without the prefix word.
	Web string
	// Prefix is the last word when it matches as a prefix, "" otherwise.
	Prefix string
}

// searchSeparators are what split paths and dotted names into parts, in the query as in the
// stored vectors (migration 000016's search_split): a \x01 after each of these.
const searchSeparators = `/.:\`

func splitSearchText(s string) string {
	if !strings.ContainsAny(s, searchSeparators) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
		if strings.ContainsRune(searchSeparators, r) {
			b.WriteByte(1)
		}
	}
	return b.String()
}

// ParseSearchQuery checks a query's size and rewrites it for websearch_to_tsquery: a
// word with a path or dotted name in it (file/paths.go, -pkg.Func) becomes a phrase of
// its parts, as the stored text is split; with prefix, the last plain word is taken out
// to match as a prefix.
func ParseSearchQuery(q string, prefix bool) (SearchQuery, error) {
	if len(q) > MaxSearchQueryBytes {
		return SearchQuery{}, Errorf(ESEARCHQUERYTOOLONG, "query: %d bytes, over the limit of %d", len(q), MaxSearchQueryBytes)
	}
	if !utf8.ValidString(q) {
		return SearchQuery{}, Errorf(EINVALID, "query: not valid UTF-8")
	}
	if strings.TrimSpace(q) == "" {
		return SearchQuery{}, Errorf(ESEARCHQUERYEMPTY, "query: empty; give at least one word")
	}
	// Control characters mean nothing to the parser, and \x01-\x03 mark splits and
	// snippets.
	q = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, q)
	var terms []string
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == ' ':
			i++
		case c == '"' || (c == '-' && i+1 < len(q) && q[i+1] == '"'):
			start := i
			if c == '-' {
				i++
			}
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				i = len(q)
			} else {
				i += end + 2
			}
			terms = append(terms, q[start:i])
		default:
			end := strings.IndexAny(q[i:], ` "`)
			if end < 0 {
				end = len(q) - i
			}
			terms = append(terms, q[i:i+end])
			i += end
		}
	}
	var sq SearchQuery
	if prefix && len(terms) > 0 {
		last := terms[len(terms)-1]
		if !strings.HasPrefix(last, "-") && !strings.HasPrefix(last, `"`) && !strings.EqualFold(last, "or") {
			// ' and \ would end or escape the quoted lexeme it goes in.
			sq.Prefix = splitSearchText(strings.Trim(strings.NewReplacer("'", " ", `\`, " ").Replace(last), searchSeparators))
			terms = terms[:len(terms)-1]
		}
	}
	for i, t := range terms {
		if !strings.HasPrefix(t, `"`) && !strings.HasPrefix(t, `-"`) && strings.ContainsAny(t, searchSeparators) {
			neg := strings.HasPrefix(t, "-")
			t = `"` + strings.TrimPrefix(t, "-") + `"`
			if neg {
				t = "-" + t
			}
		}
		terms[i] = splitSearchText(t)
	}
	sq.Web = strings.Join(terms, " ")
	return sq, nil
}

// CheckSearchFilter checks a filter's values; EINVALID names the first bad one.
func CheckSearchFilter(f *SearchFilter) error {
	lists := []struct {
		name string
		n    int
	}{{"conversationIds", len(f.ConversationIDs)}, {"kinds", len(f.Kinds)}, {"roles", len(f.Roles)},
		{"toolNames", len(f.ToolNames)}, {"models", len(f.Models)}, {"providers", len(f.Providers)}}
	for _, l := range lists {
		if l.n > MaxSearchFilterValues {
			return Errorf(EINVALID, "filter.%s: %d values, at most %d", l.name, l.n, MaxSearchFilterValues)
		}
	}
	for _, id := range f.ConversationIDs {
		if _, ok := ParseConversationID(id); !ok {
			return Errorf(EINVALID, "filter.conversationIds: %q is not a conversation id", truncateForError(id))
		}
	}
	for _, n := range f.ToolNames {
		if strings.TrimSpace(n) == "" || len(n) > 200 {
			return Errorf(EINVALID, "filter.toolNames: %q is not a tool name or glob (1 to 200 bytes)", truncateForError(n))
		}
	}
	for name, vs := range map[string][]string{"models": f.Models, "providers": f.Providers} {
		for _, v := range vs {
			if v == "" || len(v) > 200 {
				return Errorf(EINVALID, "filter.%s: %q is not a value of 1 to 200 bytes", name, truncateForError(v))
			}
		}
	}
	if f.CreatedAfter != nil && f.CreatedBefore != nil && !f.CreatedAfter.Before(*f.CreatedBefore) {
		return Errorf(EINVALID, "filter: createdAfter (%s) is not before createdBefore (%s)",
			f.CreatedAfter.Format(time.RFC3339Nano), f.CreatedBefore.Format(time.RFC3339Nano))
	}
	return nil
}

// ToolNameLike turns a tool name or glob into a SQL LIKE pattern (escape character \).
func ToolNameLike(glob string) string {
	var b strings.Builder
	for _, r := range glob {
		switch r {
		case '\\', '%', '_':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '*':
			b.WriteByte('%')
		case '?':
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// SearchCursor is a hit's place in a search's order: its rank (relevance) or its
// creation time in microseconds (newest), then its message key.
type SearchCursor struct {
	Order SearchOrder
	Rank  float32
	Micro int64
	Key   string
}

// String encodes the cursor.
func (c SearchCursor) String() string {
	var s string
	if c.Order == SearchByNewest {
		s = "s:n:" + strconv.FormatInt(c.Micro, 10) + ":" + c.Key
	} else {
		s = "s:r:" + strconv.FormatFloat(float64(c.Rank), 'g', -1, 32) + ":" + c.Key
	}
	return cursorEncoding.EncodeToString([]byte(s))
}

// ParseSearchCursor decodes a cursor of a search in order; EINVALID names field when it
// is not one, or belongs to the other order.
func ParseSearchCursor(field, cursor string, order SearchOrder) (SearchCursor, error) {
	bad := func(why string) error {
		return Errorf(EINVALID, "%s: %q is not a cursor of this search%s", field, truncateForError(cursor), why)
	}
	raw, err := cursorEncoding.DecodeString(cursor)
	if err != nil {
		return SearchCursor{}, bad("")
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 4 || parts[0] != "s" {
		return SearchCursor{}, bad("")
	}
	if _, ok := parseID("", parts[3]); !ok {
		return SearchCursor{}, bad("")
	}
	c := SearchCursor{Order: order, Key: parts[3]}
	switch {
	case parts[1] == "r" && order == SearchByRelevance:
		f, err := strconv.ParseFloat(parts[2], 32)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return SearchCursor{}, bad("")
		}
		c.Rank = float32(f)
	case parts[1] == "n" && order == SearchByNewest:
		n, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil || n < minCursorTime || n > maxCursorTime {
			return SearchCursor{}, bad("")
		}
		c.Micro = n
	case parts[1] == "r" || parts[1] == "n":
		return SearchCursor{}, bad(" (it is of the other order)")
	default:
		return SearchCursor{}, bad("")
	}
	return c, nil
}

// The marks Postgres's ts_headline puts around matches in a snippet (StartSel, StopSel).
const (
	SnippetStart = "\x02"
	SnippetStop  = "\x03"
)

// MakeSnippet turns ts_headline's output (stored, escaped text with matches between
// SnippetStart and SnippetStop, and the \x01 of split paths) into a Snippet: the text
// is unescaped for Text, and escaped again for HTML with only <mark> elements added, so
// that nothing in a message can come back as markup.
func MakeSnippet(headline string) Snippet {
	headline = strings.ReplaceAll(headline, "\x01", "")
	var h, t strings.Builder
	marked := false
	for rest := headline; rest != ""; {
		i := strings.IndexAny(rest, SnippetStart+SnippetStop)
		seg := rest
		if i >= 0 {
			seg = rest[:i]
		}
		plain := html.UnescapeString(seg)
		t.WriteString(plain)
		if seg != "" {
			if marked {
				h.WriteString("<mark>" + html.EscapeString(plain) + "</mark>")
			} else {
				h.WriteString(html.EscapeString(plain))
			}
		}
		if i < 0 {
			break
		}
		marked = rest[i] == SnippetStart[0]
		rest = rest[i+1:]
	}
	return Snippet{HTML: h.String(), Text: t.String()}
}
