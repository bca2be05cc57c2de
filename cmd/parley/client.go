package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/server"
)

// client is parley's client mode (--server URL): import, export and conversations talk
// to a running Parley over its public HTTP API, with the credential --token (or
// PARLEY_TOKEN) gives, instead of opening the database. Imports stream the file as
// POST /api/import's body; exports and lists are GraphQL queries.
type client struct {
	base  string // scheme://host[:port][/prefix], without a trailing slash
	token string
	http  *http.Client
}

// newClient checks server, the base URL a running Parley serves (its /graphql may be
// given too), and returns a client of it.
func newClient(serverURL, token string) (*client, error) {
	u, err := url.Parse(strings.TrimSpace(serverURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--server: %q is not the URL of a Parley server, like http://127.0.0.1:8080 or https://parley.example.com", serverURL)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/graphql")
	if token != "" && strings.TrimSpace(token) != token || strings.ContainsAny(token, " \r\n") {
		return nil, fmt.Errorf("--token: the token has spaces or line breaks in it; give the token alone")
	}
	return &client{base: u.String(), token: token, http: &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     true,
		ExpectContinueTimeout: time.Second,
	}}}, nil
}

// apiError is the API's error answer: {"errors": [{"message", "extensions": {"code"}}]}.
type apiError struct {
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// first is the first error's message and code.
func (e *apiError) first() (msg, code string) {
	if len(e.Errors) == 0 {
		return "", ""
	}
	code, _ = e.Errors[0].Extensions["code"].(string)
	return e.Errors[0].Message, code
}

// send sends req with the credential; it answers a response the caller reads only
// when its status is 200, and otherwise an error saying what went wrong in the user's
// terms: the server cannot be reached, refused the credential, refused the request.
func (c *client) send(req *http.Request) (*http.Response, error) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("User-Agent", "parley/"+clientVersion)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, ctxErr
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("cannot reach the Parley server at %s: %w", c.base, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var ae apiError
	msg, code := "", ""
	if json.Unmarshal(body, &ae) == nil {
		msg, code = ae.first()
	}
	what := req.Method + " " + req.URL.Path
	switch {
	case resp.StatusCode == http.StatusUnauthorized && c.token == "":
		return nil, fmt.Errorf("the Parley server at %s requires a credential: give an API token or JWT with --token or PARLEY_TOKEN", c.base)
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, fmt.Errorf("the Parley server at %s refused the credential (--token or PARLEY_TOKEN): %s", c.base, orStatus(msg, resp))
	case resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("the Parley server at %s refused %s: %s", c.base, what, orStatus(msg, resp))
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, fmt.Errorf("the Parley server at %s: %s (Retry-After: %s s)", c.base, orStatus(msg, resp), resp.Header.Get("Retry-After"))
	case code == "":
		return nil, fmt.Errorf("%s at %s answered %s: is it a Parley server (one new enough to have %s)?", what, c.base, resp.Status, req.URL.Path)
	case code == "INTERNAL_SERVER_ERROR":
		id, _ := ae.Errors[0].Extensions["requestId"].(string)
		return nil, fmt.Errorf("the Parley server at %s failed (%s): its log has the cause under request id %s", c.base, resp.Status, id)
	}
	return nil, fmt.Errorf("%s", msg)
}

func orStatus(msg string, resp *http.Response) string {
	if msg == "" {
		return resp.Status
	}
	return msg
}

// whoami asks whom the credential acts for.
func (c *client) whoami(ctx context.Context) (*server.WhoamiJSON, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/whoami", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var w server.WhoamiJSON
	if err := json.NewDecoder(resp.Body).Decode(&w); err != nil {
		return nil, fmt.Errorf("GET /api/whoami at %s: reading the answer: %w", c.base, err)
	}
	return &w, nil
}

// checkOwner refuses an --owner the credential does not act for: the server decides
// the owner from the credential, and acting for another would be a surprise.
func (c *client) checkOwner(ctx context.Context, owner string, given bool) (string, error) {
	w, err := c.whoami(ctx)
	if err != nil {
		return "", err
	}
	if given && owner != w.Owner {
		return "", fmt.Errorf("--owner %q: the credential sent to %s acts for %q; with --server the credential decides the owner, so leave --owner out or give that owner's token", owner, c.base, w.Owner)
	}
	return w.Owner, nil
}

// importHistory sends a history (size bytes, -1 unknown) to POST /api/import.
func (c *client) importHistory(ctx context.Context, format parley.ImportFormat, target parley.ImportTarget, body io.Reader, size int64) (*server.ImportReportJSON, error) {
	q := url.Values{"format": {string(format)}}
	if target.ConversationID != "" {
		q.Set("conversationId", target.ConversationID)
	}
	if target.Title != "" {
		q.Set("title", target.Title)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/api/import?"+q.Encode(), body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = size // the server refuses a history over its limit before reading it
	if size == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rep server.ImportReportJSON
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return nil, fmt.Errorf("POST /api/import at %s: reading the report: %w", c.base, err)
	}
	return &rep, nil
}

// query runs a GraphQL operation and decodes its data into out; the first GraphQL
// error, when there is one, is the error.
func (c *client) query(ctx context.Context, query string, vars map[string]any, out any, progress io.Writer) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if progress != nil {
		r = io.TeeReader(r, progress)
	}
	var gr struct {
		Data json.RawMessage `json:"data"`
		apiError
	}
	if err := json.NewDecoder(r).Decode(&gr); err != nil {
		return fmt.Errorf("POST /graphql at %s: reading the answer: %w", c.base, err)
	}
	if msg, code := gr.first(); msg != "" {
		if code == "INTERNAL_SERVER_ERROR" {
			id, _ := gr.Errors[0].Extensions["requestId"].(string)
			return fmt.Errorf("the Parley server at %s failed: its log has the cause under request id %s", c.base, id)
		}
		return fmt.Errorf("%s", msg)
	}
	return json.Unmarshal(gr.Data, out)
}

// importReport turns POST /api/import's answer back into the domain's report, to be
// printed as a local import's is.
func importReport(r *server.ImportReportJSON) *parley.ImportReport {
	out := &parley.ImportReport{
		Conversation: &parley.Conversation{ID: r.Conversation.ID, Title: r.Conversation.Title,
			MessageCount: r.Conversation.MessageCount, CreatedAt: r.Conversation.CreatedAt, UpdatedAt: r.Conversation.UpdatedAt},
		Created: r.Created, Added: r.Added, AlreadyPresent: r.AlreadyPresent, Warnings: r.Warnings, SystemPrompt: r.SystemPrompt,
	}
	for _, v := range r.AddedByVariant {
		out.AddedByVariant = append(out.AddedByVariant, parley.VariantCount{Variant: v.Variant, Count: v.Count})
	}
	for _, s := range r.Skipped {
		out.Skipped = append(out.Skipped, parley.SkippedRecords{Reason: s.Reason, Count: s.Count, Where: s.Where})
	}
	return out
}

// clientFlags are the flags of the commands that open the database or, given
// --server, ask a running server: import, export, conversations.
func clientFlags() []cli.Flag {
	return append(append(flagsOf(config.Database), flagsOf(config.Owner)...), flagsOf(config.Client)...)
}

// clientOf returns the client of --server (PARLEY_SERVER) with the configuration it
// was read from, or a nil client when none is given: the command opens the database.
func clientOf(cmd *cli.Command) (*client, config.Config, error) {
	cfg, err := loadConfig(cmd, config.Global, config.Client, config.Owner)
	if err != nil || cfg.Process.Server == "" {
		return nil, cfg, err
	}
	c, err := newClient(cfg.Process.Server, cfg.Process.Token)
	return c, cfg, err
}

// exportQuery asks for a transcript and its report (Conversation.transcript and
// transcriptReport, with the same arguments).
const exportQuery = `query Export($id: ID!, $format: TranscriptFormat!, $system: String, $maxTokens: Int, $repair: Boolean,
    $images: TranscriptImages, $model: String, $cacheBreakpoints: Int, $after: String) {
  conversation(id: $id) {
    transcript(format: $format, system: $system, maxTokens: $maxTokens, repair: $repair,
      images: $images, model: $model, cacheBreakpoints: $cacheBreakpoints, after: $after)
    transcriptReport(format: $format, system: $system, maxTokens: $maxTokens, repair: $repair,
      images: $images, model: $model, cacheBreakpoints: $cacheBreakpoints, after: $after) {
      format tokenCounting estimatedTokens maxTokens
      dropped { messageId position label reason }
      repairs notes endCursor cutPosition
    }
  }
}`

// transcript exports a conversation through GraphQL; progress counts the bytes of the
// answer as they arrive.
func (c *client) transcript(ctx context.Context, id string, format parley.TranscriptFormat, opts parley.TranscriptOptions, progress io.Writer) (*parley.Transcript, error) {
	vars := map[string]any{"id": id, "format": string(format), "repair": opts.Repair}
	if opts.System != "" {
		vars["system"] = opts.System
	}
	if opts.MaxTokens != nil {
		vars["maxTokens"] = *opts.MaxTokens
	}
	if opts.Images != "" {
		vars["images"] = string(opts.Images)
	}
	if opts.Model != "" {
		vars["model"] = opts.Model
	}
	if opts.CacheBreakpoints != 0 {
		vars["cacheBreakpoints"] = opts.CacheBreakpoints
	}
	if opts.After != nil {
		vars["after"] = parley.MessageCursor(*opts.After)
	}
	var data struct {
		Conversation *struct {
			Transcript json.RawMessage `json:"transcript"`
			Report     struct {
				Format          parley.TranscriptFormat `json:"format"`
				TokenCounting   string                  `json:"tokenCounting"`
				EstimatedTokens int                     `json:"estimatedTokens"`
				MaxTokens       *int                    `json:"maxTokens"`
				Dropped         []parley.TranscriptDrop `json:"dropped"`
				Repairs         []string                `json:"repairs"`
				Notes           []string                `json:"notes"`
				EndCursor       *string                 `json:"endCursor"`
				CutPosition     *int                    `json:"cutPosition"`
			} `json:"transcriptReport"`
		} `json:"conversation"`
	}
	if err := c.query(ctx, exportQuery, vars, &data, progress); err != nil {
		return nil, err
	}
	if data.Conversation == nil {
		return nil, fmt.Errorf("conversation %s: not found", id)
	}
	r := data.Conversation.Report
	report := parley.TranscriptReport{
		Format: r.Format, TokenCounting: r.TokenCounting, EstimatedTokens: r.EstimatedTokens, MaxTokens: r.MaxTokens,
		Dropped: r.Dropped, Repairs: r.Repairs, Notes: r.Notes}
	if r.CutPosition != nil {
		report.CutPosition = *r.CutPosition
	}
	if r.EndCursor != nil {
		end, err := parley.ParseMessageCursor("endCursor", *r.EndCursor)
		if err != nil {
			return nil, fmt.Errorf("the server's transcript report: %w", err)
		}
		report.EndPosition = end
	}
	return &parley.Transcript{Body: parley.JSON(data.Conversation.Transcript), Report: report}, nil
}

// conversationsQuery pages through the owner's conversations.
const conversationsQuery = `query Conversations($first: Int!, $after: String) {
  conversations(first: $first, after: $after) {
    edges { node { id title messageCount createdAt updatedAt } }
    pageInfo { hasNextPage endCursor }
  }
}`

// conversations lists the owner's conversations, most recently updated first, at most
// limit of them (0: all).
func (c *client) conversations(ctx context.Context, owner string, limit int) ([]conversationJSON, error) {
	list := []conversationJSON{}
	var after *string
	for limit == 0 || len(list) < limit {
		first := 100 // under any page size limit a server is likely to set
		if limit > 0 {
			first = min(first, limit-len(list))
		}
		var data struct {
			Conversations struct {
				Edges []struct {
					Node conversationJSON `json:"node"`
				} `json:"edges"`
				PageInfo struct {
					HasNextPage bool    `json:"hasNextPage"`
					EndCursor   *string `json:"endCursor"`
				} `json:"pageInfo"`
			} `json:"conversations"`
		}
		if err := c.query(ctx, conversationsQuery, map[string]any{"first": first, "after": after}, &data, nil); err != nil {
			return nil, err
		}
		for _, e := range data.Conversations.Edges {
			e.Node.Owner = owner
			list = append(list, e.Node)
		}
		if !data.Conversations.PageInfo.HasNextPage || data.Conversations.PageInfo.EndCursor == nil {
			break
		}
		after = data.Conversations.PageInfo.EndCursor
	}
	return list, nil
}
