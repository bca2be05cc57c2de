package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph"
	"github.com/parley-dev/parley/graph/transport"
)

// The HTTP API beside GraphQL, for what GraphQL carries badly:
//
//   - POST /api/import?format=F[&conversationId=ID|&title=T] reads a history as the
//     request body itself, streamed into the store as it arrives (a Claude Code session
//     a batch of records at a time, see interop), so that sessions of hundreds of
//     megabytes import with bounded memory. importConversation takes its data as a
//     GraphQL string, which must fit in the request body limit (limits.max_body_bytes)
//     and in memory, several times over. The answer is importConversation's
//     ImportReport as JSON, in the API's field names; errors are {"errors": [...]} with
//     the API's codes, as GraphQL's.
//   - GET /api/whoami says whom the credential acts for: {"owner", "method",
//     "readOnly"}. parley's client mode (--server) asks it to name the owner.
//
// Both authenticate as /graphql does (Authorization: Bearer, or local mode), are
// owner-scoped, refused cross-origin, and count against the owner's request rate; an
// import is a write, so it also takes from the owner's write rate and is refused to a
// read-only credential.

// ImportAPI bounds POST /api/import.
type ImportAPI struct {
	// MaxBytes bounds a history (0: DefaultMaxImportBytes); a larger one gets 413.
	MaxBytes int64
	// Timeout bounds one import, its upload included (0: DefaultImportTimeout). It
	// replaces the server's read timeout and the GraphQL request timeout, which are
	// meant for requests of a few megabytes.
	Timeout time.Duration
}

// The default bounds of POST /api/import.
const (
	DefaultMaxImportBytes = 4 << 30
	DefaultImportTimeout  = time.Hour
)

// ConversationJSON is a conversation as the HTTP API and parley's --json write it:
// the GraphQL schema's field names, plus its owner.
type ConversationJSON struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	Owner        string    `json:"owner"`
	MessageCount int       `json:"messageCount"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// ConversationView is c, of owner, as ConversationJSON.
func ConversationView(c *parley.Conversation, owner string) ConversationJSON {
	return ConversationJSON{ID: c.ID, Title: c.Title, Owner: owner, MessageCount: c.MessageCount,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// VariantCountJSON is ImportReport.addedByVariant's element.
type VariantCountJSON struct {
	Variant string `json:"variant"`
	Count   int    `json:"count"`
}

// SkippedJSON is ImportReport.skipped's element.
type SkippedJSON struct {
	Reason string   `json:"reason"`
	Count  int      `json:"count"`
	Where  []string `json:"where"`
}

// ImportReportJSON is POST /api/import's answer and parley import --json: the
// importConversation mutation's ImportReport. Fields are only ever added.
type ImportReportJSON struct {
	Conversation   ConversationJSON   `json:"conversation"`
	Created        bool               `json:"created"`
	Added          int                `json:"added"`
	AddedByVariant []VariantCountJSON `json:"addedByVariant"`
	AlreadyPresent int                `json:"alreadyPresent"`
	Skipped        []SkippedJSON      `json:"skipped"`
	Warnings       []string           `json:"warnings"`
	SystemPrompt   *string            `json:"systemPrompt"`
}

// ImportReportView is r, an import for owner, as ImportReportJSON; lists are never
// null.
func ImportReportView(r *parley.ImportReport, owner string) ImportReportJSON {
	out := ImportReportJSON{Conversation: ConversationView(r.Conversation, owner), Created: r.Created, Added: r.Added,
		AddedByVariant: []VariantCountJSON{}, AlreadyPresent: r.AlreadyPresent, Skipped: []SkippedJSON{},
		Warnings: append([]string{}, r.Warnings...), SystemPrompt: r.SystemPrompt}
	for _, v := range r.AddedByVariant {
		out.AddedByVariant = append(out.AddedByVariant, VariantCountJSON{Variant: v.Variant, Count: v.Count})
	}
	for _, s := range r.Skipped {
		out.Skipped = append(out.Skipped, SkippedJSON{Reason: s.Reason, Count: s.Count, Where: append([]string{}, s.Where...)})
	}
	return out
}

// WhoamiJSON is GET /api/whoami's answer.
type WhoamiJSON struct {
	Owner string `json:"owner"`
	// Method is how the request authenticated: "token", "jwt" or "local".
	Method   string `json:"method"`
	ReadOnly bool   `json:"readOnly"`
}

// importParams are the query parameters POST /api/import knows.
var importParams = []string{"format", "conversationId", "title"}

// importHandler serves POST /api/import; it runs behind authentication.
type importHandler struct {
	interop parley.InteropService
	limits  ImportAPI
	// wholeBytes bounds the formats read whole (JSON documents: OPENAI_CHAT,
	// ANTHROPIC_MESSAGES, PARLEY_JSON), which are held in memory as importConversation
	// holds them: the GraphQL body limit (limits.max_body_bytes).
	wholeBytes int64
	writes     *ownerLimiter
	log        *slog.Logger
}

func (h *importHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	if h.interop == nil {
		transport.WriteError(w, r, http.StatusNotFound, "NOT_FOUND", "this server does not import histories")
		return
	}
	if p.ReadOnly {
		transport.WriteError(w, r, http.StatusForbidden, "FORBIDDEN",
			"This credential may only read: it is read-only, and an import needs a credential that may write.")
		return
	}
	if p != localPrincipal {
		if ok, wait := h.writes.take(p.Owner); !ok {
			secs := retryAfterSeconds(wait)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			transport.WriteError(w, r, http.StatusTooManyRequests, codeRateLimited,
				fmt.Sprintf("Too many writes for this owner: try again in %d s.", secs))
			return
		}
	}
	q := r.URL.Query()
	for name := range q {
		if !slices.Contains(importParams, name) {
			badRequest(w, r, fmt.Sprintf("query parameter %q: unknown; POST /api/import takes %s", name, strings.Join(importParams, ", ")))
			return
		}
		if len(q[name]) > 1 {
			badRequest(w, r, fmt.Sprintf("query parameter %q: given %d times", name, len(q[name])))
			return
		}
	}
	if q.Get("format") == "" {
		badRequest(w, r, "query parameter \"format\": missing; give the history's format, e.g. format=CLAUDE_CODE_JSONL")
		return
	}
	format, err := parley.ParseImportFormat(q.Get("format"))
	if err != nil {
		badRequest(w, r, "query parameter \"format\": "+parley.ErrorMessage(err))
		return
	}
	limit, key := h.limits.MaxBytes, "limits.max_import_bytes"
	if format != parley.ImportClaudeCode && h.wholeBytes > 0 && h.wholeBytes < limit {
		limit, key = h.wholeBytes, "limits.max_body_bytes: "+string(format)+" is read whole; only CLAUDE_CODE_JSONL streams"
	}
	if r.ContentLength > limit {
		tooLarge(w, r, limit, key)
		return
	}
	// The upload of a large history takes longer than a request's read timeout allows.
	deadline := time.Now().Add(h.limits.Timeout)
	if err := http.NewResponseController(w).SetReadDeadline(deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
		h.log.WarnContext(r.Context(), "import: extending the read deadline", "err", err)
	}
	ctx, cancel := context.WithDeadline(r.Context(), deadline)
	defer cancel()
	body := http.MaxBytesReader(w, r.Body, limit)
	rep, err := h.interop.ImportConversation(ctx, format, body,
		parley.ImportTarget{ConversationID: q.Get("conversationId"), Title: q.Get("title")})
	if err != nil {
		h.fail(w, r, err, key)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if err := json.NewEncoder(w).Encode(ImportReportView(rep, p.Owner)); err != nil {
		h.log.WarnContext(r.Context(), "import: writing the report", "err", err)
	}
}

// fail answers err as the API's error: its code and message for a domain error, 413
// for a body over the limit, a generic message (the cause logged) for anything else.
func (h *importHandler) fail(w http.ResponseWriter, r *http.Request, err error, key string) {
	var tooBig *http.MaxBytesError
	switch code := parley.ErrorCode(err); {
	case errors.As(err, &tooBig):
		tooLarge(w, r, tooBig.Limit, key)
	case code != "" && code != parley.EINTERNAL:
		status, ok := importStatus[code]
		if !ok {
			status = http.StatusBadRequest
		}
		transport.WriteError(w, r, status, graph.ExtensionCode(code), parley.ErrorMessage(err))
	case errors.Is(err, context.DeadlineExceeded):
		transport.WriteError(w, r, http.StatusServiceUnavailable, "REQUEST_CANCELLED",
			fmt.Sprintf("The import took longer than limits.import_timeout (%s) and stored nothing.", h.limits.Timeout))
	case r.Context().Err() != nil:
		// The client went away: nothing was stored, and nobody reads the answer.
		h.log.InfoContext(r.Context(), "import: the client went away", "err", err)
	default:
		h.log.ErrorContext(r.Context(), "internal error", "err", err, "requestId", transport.RequestID(r.Context()))
		transport.WriteError(w, r, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR", "Internal server error.")
	}
}

// importStatus is the HTTP status of each domain error code an import can end with;
// codes not listed are 400.
var importStatus = map[string]int{
	parley.EINVALID:       http.StatusBadRequest,
	parley.ENOTFOUND:      http.StatusNotFound,
	parley.ECONFLICT:      http.StatusConflict,
	parley.EUNAUTHORIZED:  http.StatusUnauthorized,
	parley.EFORBIDDEN:     http.StatusForbidden,
	parley.EUNAVAILABLE:   http.StatusServiceUnavailable,
	parley.ERESOURCELIMIT: http.StatusRequestEntityTooLarge,

	parley.EMESSAGETOOLARGE:   http.StatusBadRequest,
	parley.ETOOMANYTOOLCALLS:  http.StatusBadRequest,
	parley.EARGUMENTSTOOLARGE: http.StatusBadRequest,
	parley.EIMAGETOOLARGE:     http.StatusBadRequest,
}

func badRequest(w http.ResponseWriter, r *http.Request, msg string) {
	transport.WriteError(w, r, http.StatusBadRequest, "BAD_USER_INPUT", msg)
}

func tooLarge(w http.ResponseWriter, r *http.Request, limit int64, key string) {
	transport.WriteError(w, r, http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE",
		fmt.Sprintf("The history is larger than this server imports: at most %d bytes (%s). Nothing was stored.", limit, key))
}

// serveWhoami serves GET /api/whoami.
func serveWhoami(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(WhoamiJSON{Owner: p.Owner, Method: p.Method, ReadOnly: p.ReadOnly})
}
