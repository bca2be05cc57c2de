package server_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
)

// introspectedType is the part of an introspection answer the mutation generator needs.
type typeRef struct {
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	OfType *typeRef `json:"ofType"`
}

type inputValue struct {
	Name string  `json:"name"`
	Type typeRef `json:"type"`
}

type fullType struct {
	Kind        string                  `json:"kind"`
	Name        string                  `json:"name"`
	IsOneOf     bool                    `json:"isOneOf"`
	InputFields []inputValue            `json:"inputFields"`
	EnumValues  []struct{ Name string } `json:"enumValues"`
	Fields      []struct {
		Name string       `json:"name"`
		Args []inputValue `json:"args"`
		Type typeRef      `json:"type"`
	} `json:"fields"`
}

const introspectMutations = `{ __schema { mutationType { name } types {
  kind name isOneOf
  fields { name args { name type { ...T } } type { ...T } }
  inputFields { name type { ...T } }
  enumValues { name }
} } }
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } }`

// mutationDocuments returns, for every mutation field of the schema, a document that
// calls it with every required argument given a value of its type (variables, so that
// the document validates), and those variables.
func mutationDocuments(t *testing.T, srv *testserver.Server) map[string]struct {
	doc  string
	vars map[string]any
} {
	t.Helper()
	var out struct {
		Schema struct {
			MutationType struct{ Name string } `json:"mutationType"`
			Types        []fullType            `json:"types"`
		} `json:"__schema"`
	}
	srv.MustDo(t, introspectMutations, nil, &out)
	types := map[string]fullType{}
	for _, ty := range out.Schema.Types {
		types[ty.Name] = ty
	}
	var value func(r typeRef, depth int) any
	value = func(r typeRef, depth int) any {
		switch r.Kind {
		case "NON_NULL":
			return value(*r.OfType, depth)
		case "LIST":
			return []any{value(*r.OfType, depth)}
		case "ENUM":
			return types[r.Name].EnumValues[0].Name
		case "INPUT_OBJECT":
			obj := map[string]any{}
			ty := types[r.Name]
			for _, f := range ty.InputFields {
				if ty.IsOneOf {
					obj[f.Name] = value(f.Type, depth+1)
					break
				}
				if f.Type.Kind == "NON_NULL" {
					obj[f.Name] = value(f.Type, depth+1)
				}
			}
			return obj
		}
		switch r.Name {
		case "Int":
			return 1
		case "Float":
			return 1.5
		case "Boolean":
			return true
		case "Time":
			return "2026-01-01T00:00:00Z"
		case "JSON":
			return map[string]any{}
		}
		return "x" // ID, String
	}
	var typeString func(r typeRef) string
	typeString = func(r typeRef) string {
		switch r.Kind {
		case "NON_NULL":
			return typeString(*r.OfType) + "!"
		case "LIST":
			return "[" + typeString(*r.OfType) + "]"
		}
		return r.Name
	}
	named := func(r typeRef) typeRef {
		for r.OfType != nil {
			r = *r.OfType
		}
		return r
	}
	docs := map[string]struct {
		doc  string
		vars map[string]any
	}{}
	for _, f := range types[out.Schema.MutationType.Name].Fields {
		var params, args []string
		vars := map[string]any{}
		for _, a := range f.Args {
			if a.Type.Kind != "NON_NULL" {
				continue
			}
			params = append(params, "$"+a.Name+": "+typeString(a.Type))
			args = append(args, a.Name+": $"+a.Name)
			vars[a.Name] = value(a.Type, 0)
		}
		doc := "mutation"
		if len(params) > 0 {
			doc += "(" + strings.Join(params, ", ") + ")"
		}
		call := f.Name
		if len(args) > 0 {
			call += "(" + strings.Join(args, ", ") + ")"
		}
		if k := named(f.Type).Kind; k == "OBJECT" || k == "INTERFACE" || k == "UNION" {
			call += " { __typename }"
		}
		docs[f.Name] = struct {
			doc  string
			vars map[string]any
		}{doc + " { " + call + " }", vars}
	}
	return docs
}

// TestReadOnlyTokenRefusedOnEveryMutation: a read-only API token may read, and every
// mutation of the schema, however its arguments, is refused with FORBIDDEN before it
// runs; nothing is written. The same mutation with a read-write token runs.
func TestReadOnlyTokenRefusedOnEveryMutation(t *testing.T) {
	t.Parallel()
	srv := authServer(t)
	rw, _ := token(t, srv, "alice", nil)
	_, roTok, err := func() (string, string, error) {
		tok, secret, err := srv.Store.CreateToken(context.Background(), "alice", "share link", nil, true)
		if err != nil {
			return "", "", err
		}
		return tok.ID, secret, nil
	}()
	if err != nil {
		t.Fatal(err)
	}
	writer, reader := srv.As(rw), srv.As(roTok)
	writer.CreateConversation(t, "alice's")

	docs := mutationDocuments(t, writer)
	if len(docs) < 10 {
		t.Fatalf("found %d mutations in the schema, want the whole Mutation type", len(docs))
	}
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d := docs[name]
		r := reader.Do(t, d.doc, d.vars)
		if code := r.ErrorCode(t); code != "FORBIDDEN" || !strings.Contains(r.Errors[0].Message, "read-only") {
			t.Errorf("%s as read-only: got %s %q, want FORBIDDEN saying the credential is read-only\n%s", name, code, r.Errors[0].Message, d.doc)
		}
		if string(r.Data) != "" && string(r.Data) != "null" {
			t.Errorf("%s as read-only: got data %s, want none: it must not have run", name, r.Data)
		}
	}
	// It reads; and nothing was written, though the writer's same mutation runs.
	var out struct {
		Conversations struct{ TotalCount int } `json:"conversations"`
	}
	reader.MustDo(t, `{ conversations { totalCount } }`, nil, &out)
	if out.Conversations.TotalCount != 1 {
		t.Errorf("conversations read with the read-only token: got %d, want 1", out.Conversations.TotalCount)
	}
	d := docs["createConversation"]
	if r := writer.Do(t, d.doc, d.vars); len(r.Errors) != 0 {
		t.Errorf("createConversation with the read-write token: %+v", r.Errors)
	}
}

// TestReadOnlyWebsocket: over a websocket, a read-only token may subscribe but not
// mutate.
func TestReadOnlyWebsocket(t *testing.T) {
	t.Parallel()
	srv := authServer(t)
	tok, secret, err := srv.Store.CreateToken(context.Background(), "dora", "", nil, true)
	if err != nil || !tok.ReadOnly {
		t.Fatalf("create read-only token: %v (read-only %v)", err, tok != nil && tok.ReadOnly)
	}
	rw, _ := token(t, srv, "dora", nil)
	conv := srv.As(rw).CreateConversation(t, "watched")
	conn, _, _, _ := wsDial(t, srv.URL, map[string]any{"Authorization": "Bearer " + secret})
	defer conn.CloseNow()
	wsSubscribe(t, conn, "m", `mutation { createConversation(title: "no") { id } }`, nil)
	msg, _, _ := wsNext(t, conn, 30*time.Second)
	if got := fmt.Sprint(msg["payload"]); msg["id"] != "m" || !strings.Contains(got, "FORBIDDEN") || !strings.Contains(got, "data:<nil>") {
		t.Errorf("mutation over a read-only websocket: got %v, want its errors FORBIDDEN and no data", msg)
	}
	if msg, _, _ = wsNext(t, conn, 30*time.Second); msg["type"] != "complete" || msg["id"] != "m" {
		t.Errorf("after the refused mutation: got %v, want it complete", msg)
	}
	// From the start, so the message added before is replayed: no race with the
	// subscription's start.
	srv.As(rw).AddMessage(t, conv, testserver.Text("USER", "hi"))
	wsSubscribe(t, conn, "s", `subscription($c: ID!, $a: String) { messageAdded(conversationId: $c, after: $a) { cursor } }`,
		map[string]any{"c": conv, "a": parley.MessageCursor(0)})
	msg, _, _ = wsNext(t, conn, 30*time.Second)
	if msg["type"] != "next" || msg["id"] != "s" {
		t.Errorf("subscription over a read-only websocket: got %v, want the message added", msg)
	}
}

// TestJWTScopesAndOwnerClaim: the owner comes from the configured claim, and a JWT
// whose scopes grant parley:read only is read-only.
func TestJWTScopesAndOwnerClaim(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWith(t, testserver.Options{Auth: func(*db.DB) auth.Config {
		return auth.Config{JWTSecret: jwtSecret, OwnerClaim: "email"}
	}})
	sign := func(claims jwt.MapClaims) string {
		claims["exp"] = time.Now().Add(time.Hour).Unix()
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(jwtSecret)
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + s
	}
	const create = `mutation { createConversation(title: "scoped") { id } }`
	for _, tt := range []struct {
		name   string
		claims jwt.MapClaims
		status int
		code   string
	}{
		{"no scope: may write", jwt.MapClaims{"sub": "u1", "email": "erin@example.com"}, 200, ""},
		{"read and write scopes", jwt.MapClaims{"email": "erin@example.com", "scope": "openid parley:read parley:write"}, 200, ""},
		{"read scope only", jwt.MapClaims{"email": "erin@example.com", "scope": "openid parley:read"}, 200, "FORBIDDEN"},
		{"scp list, read only", jwt.MapClaims{"email": "erin@example.com", "scp": []string{"parley:read"}}, 200, "FORBIDDEN"},
		{"owner claim missing", jwt.MapClaims{"sub": "erin@example.com"}, 401, "UNAUTHENTICATED"},
	} {
		status, resp := post(t, srv.URL, sign(tt.claims), create)
		code := ""
		if len(resp.Errors) > 0 {
			code = resp.Errors[0].Code()
		}
		if status != tt.status && !(tt.code == "FORBIDDEN" && code == "FORBIDDEN") || code != tt.code {
			t.Errorf("%s: got %d %s %+v, want %d %q", tt.name, status, code, resp.Errors, tt.status, tt.code)
		}
	}
	var owner string
	var n int
	if err := srv.Store.SQL().QueryRow(`SELECT min(owner), count(*) FROM conversations`).Scan(&owner, &n); err != nil || owner != "erin@example.com" || n != 2 {
		t.Errorf("conversations: got %d of %q (%v), want 2 of erin@example.com (from the email claim)", n, owner, err)
	}
}

// jwksServer serves a JSON Web Key Set that a test can rotate, and counts its fetches.
type jwksServer struct {
	mu      sync.Mutex
	keys    map[string]*rsa.PrivateKey
	fetches int
}

func (s *jwksServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetches++
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	var keys []map[string]any
	for kid, k := range s.keys {
		keys = append(keys, map[string]any{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
			"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"keys": keys})
}

func (s *jwksServer) rotate(kid string, k *rsa.PrivateKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = map[string]*rsa.PrivateKey{kid: k}
}

// TestJWKSURLRotation: keys come from the identity provider's JWKS URL, served by a
// local HTTP server; when it rotates to a new key, a token signed with the new key is
// accepted (an unknown kid makes Parley fetch the set again), and, after the refresh,
// the retired key's tokens are refused. A URL that serves no keys stops the server
// from starting, naming the setting.
func TestJWKSURLRotation(t *testing.T) {
	t.Parallel()
	k1, _ := rsa.GenerateKey(rand.Reader, 2048)
	k2, _ := rsa.GenerateKey(rand.Reader, 2048)
	idp := &jwksServer{keys: map[string]*rsa.PrivateKey{"k1": k1}}
	hs := httptest.NewServer(idp)
	defer hs.Close()

	cfg := config.Default()
	cfg.Auth.JWKSURL = hs.URL + "/.well-known/jwks.json"
	cfg.Auth.JWKSRefresh = config.Duration(time.Hour)
	srv := testserver.NewWith(t, testserver.Options{Config: &cfg})
	sign := func(kid string, k *rsa.PrivateKey) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": "frank", "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = kid
		s, err := tok.SignedString(k)
		if err != nil {
			t.Fatal(err)
		}
		return "Bearer " + s
	}
	const q = `{ conversations { totalCount } }`
	if status, resp := post(t, srv.URL, sign("k1", k1), q); status != 200 {
		t.Fatalf("token of the first key: %d %+v", status, resp.Errors)
	}
	idp.rotate("k2", k2)
	if status, resp := post(t, srv.URL, sign("k2", k2), q); status != 200 {
		t.Fatalf("token of the rotated-in key: %d %+v, want 200 (fetched again for the unknown kid)", status, resp.Errors)
	}
	idp.mu.Lock()
	fetches := idp.fetches
	idp.mu.Unlock()
	if fetches < 2 {
		t.Errorf("JWKS fetched %d times, want at least 2 (at start, and for the new key)", fetches)
	}
	if status, _ := post(t, srv.URL, sign("k1", k2), q); status != 401 {
		t.Errorf("a token naming k1 but signed with k2: got %d, want 401", status)
	}

	// A URL without keys is refused at start.
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"keys": []}`))
	}))
	defer empty.Close()
	_, err := auth.New(auth.Config{JWKSURL: empty.URL})
	if err == nil || !strings.Contains(err.Error(), "auth.jwks_url") {
		t.Errorf("a JWKS URL with no keys: got %v, want an error naming auth.jwks_url", err)
	}
}

// TestRateLimits: an owner over its request rate gets 429 RATE_LIMITED with
// Retry-After, another owner does not; over its write rate a mutation gets
// RATE_LIMITED with Retry-After while queries go on; local mode has no limits.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	one, three := 1, 3
	cfg := config.Default()
	cfg.RateLimits = config.RateLimits{Requests: &one, RequestsBurst: &three, Writes: &one, WritesBurst: &one}
	srv := testserver.NewWith(t, testserver.Options{Config: &cfg, Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store}
	}})
	alice, _ := token(t, srv, "alice", nil)
	bob, _ := token(t, srv, "bob", nil)

	// Requests: a burst of 3, then refused with the time until the next token.
	statuses := []int{}
	var last *http.Response
	for range 6 {
		resp := rawPost(t, srv.URL, alice, `{ conversations { totalCount } }`)
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests {
			last = resp
		}
	}
	if last == nil {
		t.Fatalf("6 requests at once with a burst of 3: statuses %v, want some 429", statuses)
	}
	if secs, err := strconv.Atoi(last.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 2 {
		t.Errorf("Retry-After: got %q, want 1 or 2 seconds", last.Header.Get("Retry-After"))
	}
	var body testserver.Response
	json.NewDecoder(last.Body).Decode(&body)
	if len(body.Errors) != 1 || body.Errors[0].Code() != "RATE_LIMITED" {
		t.Errorf("429 body: got %+v, want one RATE_LIMITED error", body.Errors)
	}
	if resp := rawPost(t, srv.URL, bob, `{ conversations { totalCount } }`); resp.StatusCode != 200 {
		t.Errorf("another owner: got %d, want 200: limits are per owner", resp.StatusCode)
	}

	// Writes: bob's first mutation runs, the second at once is refused; a query still
	// runs (within bob's request burst).
	const create = `mutation { createConversation(title: "w") { id } }`
	if _, r := post(t, srv.URL, "Bearer "+bob, create); len(r.Errors) != 0 {
		t.Fatalf("first write: %+v", r.Errors)
	}
	resp := rawPost(t, srv.URL, bob, create)
	var w testserver.Response
	json.NewDecoder(resp.Body).Decode(&w)
	if len(w.Errors) != 1 || w.Errors[0].Code() != "RATE_LIMITED" || resp.Header.Get("Retry-After") == "" || w.Errors[0].Extensions["retryAfter"] == nil {
		t.Errorf("second write at once: got %d %+v (Retry-After %q), want RATE_LIMITED with Retry-After", resp.StatusCode, w.Errors, resp.Header.Get("Retry-After"))
	}
	var n int
	if err := srv.Store.SQL().Get(&n, `SELECT count(*) FROM conversations WHERE owner = 'bob'`); err != nil || n != 1 {
		t.Errorf("bob's conversations: got %d (%v), want 1: the refused write wrote nothing", n, err)
	}

	// Local mode: the same limits configured, none applied.
	local := testserver.NewWith(t, testserver.Options{Config: &cfg})
	for i := range 10 {
		if r := local.Do(t, create, nil); len(r.Errors) != 0 {
			t.Fatalf("local mode, write %d: %+v, want no rate limit", i, r.Errors)
		}
	}
}

// rawPost sends a GraphQL POST with a bearer token and returns the response, its body
// unread (closed when the test ends).
func rawPost(t *testing.T, url, token, query string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, url+"/graphql", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
