package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/auth"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/internal/testserver"
	"github.com/parley-dev/parley/server"
)

// jwtSecret is the HS256 secret of the tests' servers.
var jwtSecret = []byte("a test secret of at least thirty-two bytes")

// authServer starts a server accepting API tokens and HS256 JWTs.
func authServer(t *testing.T) *testserver.Server {
	t.Helper()
	return testserver.NewWith(t, testserver.Options{Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store, JWTSecret: jwtSecret}
	}})
}

// token makes an API token for owner in srv's store.
// annAndBob starts a server that takes API tokens and returns clients of it as ann and
// as bob.
func annAndBob(t *testing.T) (ann, bob *testserver.Server) {
	srv := testserver.NewWith(t, testserver.Options{Auth: func(store *db.DB) auth.Config { return auth.Config{Tokens: store} }})
	annToken, _ := token(t, srv, "ann", nil)
	bobToken, _ := token(t, srv, "bob", nil)
	return srv.As(annToken), srv.As(bobToken)
}

func token(t *testing.T, srv *testserver.Server, owner string, expires *time.Time) (string, *parley.APIToken) {
	t.Helper()
	tok, secret, err := srv.Store.CreateToken(context.Background(), owner, "test", expires, false)
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	return secret, tok
}

func hs256(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Subject: sub, ExpiresAt: jwt.NewNumericDate(exp),
	}).SignedString(jwtSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// post sends a GraphQL POST with an Authorization header (none when empty).
func post(t *testing.T, url, authorization, query string) (int, testserver.Response) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out testserver.Response
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("status %d: %v\n%s", resp.StatusCode, err, raw)
	}
	return resp.StatusCode, out
}

// TestAuthenticationRequired: with authentication configured, a request without a
// credential, with a malformed one, an unknown, revoked or expired token, or a JWT
// that is expired, badly signed or has no exp, gets 401 UNAUTHENTICATED; valid ones get
// through as their owner.
func TestAuthenticationRequired(t *testing.T) {
	t.Parallel()
	srv := authServer(t)
	good, _ := token(t, srv, "alice", nil)
	revoked, tok := token(t, srv, "alice", nil)
	if _, err := srv.Store.RevokeToken(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(1500 * time.Millisecond)
	expiring, _ := token(t, srv, "alice", &soon)
	other, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "alice",
		ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}).SignedString([]byte("another secret, also thirty-two bytes"))
	if err != nil {
		t.Fatal(err)
	}
	noExp, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "alice"}).SignedString(jwtSecret)
	const q = `{ conversations { totalCount } }`

	for _, tt := range []struct {
		name, authorization string
		want                int
	}{
		{"no credential", "", 401},
		{"not bearer", "Basic YWxpY2U6c2VjcmV0", 401},
		{"empty bearer", "Bearer ", 401},
		{"unknown token", "Bearer prl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 401},
		{"revoked token", "Bearer " + revoked, 401},
		{"garbage", "Bearer not-a-jwt", 401},
		{"expired JWT", "Bearer " + hs256(t, "alice", time.Now().Add(-time.Hour)), 401},
		{"JWT signed with another secret", "Bearer " + other, 401},
		{"JWT without exp", "Bearer " + noExp, 401},
		{"token", "Bearer " + good, 200},
		{"JWT", "Bearer " + hs256(t, "alice", time.Now().Add(time.Hour)), 200},
		{"bearer in lower case", "bearer " + good, 200},
	} {
		status, resp := post(t, srv.URL, tt.authorization, q)
		if status != tt.want {
			t.Errorf("%s: status %d, want %d (%+v)", tt.name, status, tt.want, resp.Errors)
			continue
		}
		if tt.want == 401 && (len(resp.Errors) != 1 || resp.Errors[0].Code() != "UNAUTHENTICATED") {
			t.Errorf("%s: got errors %+v, want one UNAUTHENTICATED", tt.name, resp.Errors)
		}
	}

	// A token with an expiry works until then, and not after.
	if status, resp := post(t, srv.URL, "Bearer "+expiring, q); status != 200 {
		t.Fatalf("expiring token before its expiry: status %d %+v", status, resp.Errors)
	}
	time.Sleep(time.Until(soon) + 100*time.Millisecond) // the expiry is the subject here
	if status, resp := post(t, srv.URL, "Bearer "+expiring, q); status != 401 || resp.Errors[0].Code() != "UNAUTHENTICATED" {
		t.Errorf("expired token: status %d %+v, want 401 UNAUTHENTICATED", status, resp.Errors)
	}
}

// TestJWKS: a server configured with a JWKS file accepts JWTs signed by its RSA and EC
// keys, with the configured issuer and audience, and refuses others; sub is the owner.
func TestJWKS(t *testing.T) {
	t.Parallel()
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]any{
		{"kty": "RSA", "kid": "r1", "alg": "RS256", "use": "sig", "n": b64(rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(rsaKey.E)).Bytes())},
		{"kty": "EC", "kid": "e1", "alg": "ES256", "use": "sig", "crv": "P-256",
			"x": b64(ecKey.X.FillBytes(make([]byte, 32))), "y": b64(ecKey.Y.FillBytes(make([]byte, 32)))},
	}})
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testserver.NewWith(t, testserver.Options{Auth: func(*db.DB) auth.Config {
		return auth.Config{JWKSFile: file, Issuer: "https://issuer.test", Audience: "parley"}
	}})
	sign := func(method jwt.SigningMethod, kid string, key any, claims jwt.RegisteredClaims) string {
		tok := jwt.NewWithClaims(method, claims)
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	claims := func(sub, iss, aud string) jwt.RegisteredClaims {
		return jwt.RegisteredClaims{Subject: sub, Issuer: iss, Audience: jwt.ClaimStrings{aud},
			ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}
	}
	otherKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tt := range []struct {
		name, token string
		want        int
	}{
		{"RS256", sign(jwt.SigningMethodRS256, "r1", rsaKey, claims("carol", "https://issuer.test", "parley")), 200},
		{"ES256", sign(jwt.SigningMethodES256, "e1", ecKey, claims("carol", "https://issuer.test", "parley")), 200},
		{"unknown key", sign(jwt.SigningMethodRS256, "r1", otherKey, claims("carol", "https://issuer.test", "parley")), 401},
		{"wrong issuer", sign(jwt.SigningMethodRS256, "r1", rsaKey, claims("carol", "https://evil.test", "parley")), 401},
		{"wrong audience", sign(jwt.SigningMethodRS256, "r1", rsaKey, claims("carol", "https://issuer.test", "other")), 401},
		{"HS256 not configured", hs256(t, "carol", time.Now().Add(time.Hour)), 401},
		{"no sub", sign(jwt.SigningMethodES256, "e1", ecKey, claims("", "https://issuer.test", "parley")), 401},
	} {
		status, resp := post(t, srv.URL, "Bearer "+tt.token, `mutation { createConversation(title: "jwks") { id } }`)
		if status != tt.want {
			t.Errorf("%s: status %d, want %d (%+v)", tt.name, status, tt.want, resp.Errors)
		}
	}
	// Both keys stood for carol: she has both conversations, and nobody else does.
	var n int
	if err := srv.Store.SQL().Get(&n, `SELECT count(*) FROM conversations WHERE owner = 'carol'`); err != nil || n != 2 {
		t.Errorf("carol's conversations: got %d (%v), want 2", n, err)
	}
}

// TestLocalMode: without authentication every request acts as the local owner, and
// only requests addressed to a loopback host are served (a page that rebinds its own
// name to 127.0.0.1 does not get in); listening anywhere but loopback is refused.
func TestLocalMode(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	srv.CreateConversation(t, "mine")
	var n int
	if err := srv.Store.SQL().Get(&n, `SELECT count(*) FROM conversations WHERE owner = 'local'`); err != nil || n != 1 {
		t.Errorf("local conversations: got %d (%v), want 1", n, err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(`{"query":"{ __typename }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Host = "attacker.example:8080"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("non-loopback Host in local mode: status %d, want 421", resp.StatusCode)
	}

	for _, tt := range []struct {
		addr string
		auth bool
		ok   bool
	}{
		{"127.0.0.1:8080", false, true},
		{"[::1]:8080", false, true},
		{"localhost:8080", false, true},
		{"0.0.0.0:8080", false, false},
		{":8080", false, false},
		{"192.168.1.10:8080", false, false},
		{"0.0.0.0:8080", true, true},
	} {
		err := server.CheckListenAddr(tt.addr, tt.auth)
		if (err == nil) != tt.ok {
			t.Errorf("CheckListenAddr(%q, auth %v): got %v, want ok %v", tt.addr, tt.auth, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--addr 127.0.0.1") {
			t.Errorf("CheckListenAddr(%q): %v does not say how to fix it", tt.addr, err)
		}
	}
}

// wsDial opens a graphql-transport-ws connection and sends connection_init with
// payload; it returns the connection and the first message's type ("" if the server
// closed it instead), with the close status.
func wsDial(t *testing.T, url string, payload map[string]any) (*websocket.Conn, string, websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	init, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": payload})
	if err := conn.Write(ctx, websocket.MessageText, init); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errorsAs(err, &ce) {
				return conn, "", ce.Code, ce.Reason
			}
			t.Fatalf("read: %v", err)
		}
		var m struct{ Type string }
		json.Unmarshal(b, &m)
		if m.Type != "ping" && m.Type != "ka" {
			return conn, m.Type, 0, ""
		}
	}
}

// wsNext reads the next message that is not a ping, or the close status.
func wsNext(t *testing.T, conn *websocket.Conn, wait time.Duration) (map[string]any, websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errorsAs(err, &ce) {
				return nil, ce.Code, ce.Reason
			}
			t.Fatalf("read: %v", err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		if m["type"] == "ping" {
			pong, _ := json.Marshal(map[string]any{"type": "pong"})
			conn.Write(ctx, websocket.MessageText, pong)
			continue
		}
		return m, 0, ""
	}
}

func wsSubscribe(t *testing.T, conn *websocket.Conn, id, query string, vars map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": query, "variables": vars}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// TestWebsocketAuthentication: connection_init carries the credential, as
// {"Authorization": "Bearer ..."} or {"authToken": "..."}; without one the socket is
// closed with 4401, with a bad one with 4403, and a connection whose credential
// expires is closed with 4403 then, ending its subscriptions.
func TestWebsocketAuthentication(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWiredWith(t, "", testserver.Options{Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store, JWTSecret: jwtSecret}
	}})
	good, _ := token(t, srv.Server, "alice", nil)
	conv := srv.As(good).CreateConversation(t, "ws")

	for _, tt := range []struct {
		name     string
		payload  map[string]any
		wantType string
		wantCode websocket.StatusCode
	}{
		{"Authorization", map[string]any{"Authorization": "Bearer " + good}, "connection_ack", 0},
		{"authorization in lower case", map[string]any{"authorization": "Bearer " + good}, "connection_ack", 0},
		{"authToken", map[string]any{"authToken": good}, "connection_ack", 0},
		{"nothing", nil, "", 4401},
		{"bad token", map[string]any{"authToken": "prl_nope"}, "", 4403},
		{"expired JWT", map[string]any{"authToken": hs256(t, "alice", time.Now().Add(-time.Minute))}, "", 4403},
	} {
		_, typ, code, reason := wsDial(t, srv.URL, tt.payload)
		if typ != tt.wantType || code != tt.wantCode {
			t.Errorf("%s: got %q, close %d %q; want %q, close %d", tt.name, typ, code, reason, tt.wantType, tt.wantCode)
		}
	}

	// A subscription of a JWT that expires in two seconds ends then, with 4403.
	exp := time.Now().Add(3 * time.Second).Truncate(time.Second) // exp counts whole seconds
	conn, typ, _, _ := wsDial(t, srv.URL, map[string]any{"Authorization": "Bearer " + hs256(t, "alice", exp)})
	if typ != "connection_ack" {
		t.Fatalf("expiring JWT: got %q, want connection_ack", typ)
	}
	// From the start: the message added just before is replayed.
	srv.As(good).AddMessage(t, conv, testserver.Text("USER", "hello"))
	wsSubscribe(t, conn, "1", `subscription($c: ID!, $a: String) { messageAdded(conversationId: $c, after: $a) { cursor } }`,
		map[string]any{"c": conv, "a": parley.MessageCursor(0)})
	if m, code, reason := wsNext(t, conn, 10*time.Second); m == nil || m["type"] != "next" {
		t.Fatalf("before expiry: got %v (close %d %q), want a next message", m, code, reason)
	}
	var code websocket.StatusCode
	var reason string
	for m := map[string]any{}; m != nil; { // a complete may come before the close
		m, code, reason = wsNext(t, conn, 10*time.Second)
	}
	if code != 4403 {
		t.Errorf("at expiry: close %d %q, want 4403", code, reason)
	}
	if time.Now().Before(exp) {
		t.Errorf("closed before the credential expired")
	}
}

// TestSSEExpiry: an SSE subscription authenticated by a header ends when its credential
// expires, without "complete" (the client subscribes again with a fresh one).
func TestSSEExpiry(t *testing.T) {
	t.Parallel()
	srv := testserver.NewWiredWith(t, "", testserver.Options{Auth: func(store *db.DB) auth.Config {
		return auth.Config{Tokens: store, JWTSecret: jwtSecret}
	}})
	good, _ := token(t, srv.Server, "alice", nil)
	conv := srv.As(good).CreateConversation(t, "sse")
	exp := time.Now().Add(3 * time.Second).Truncate(time.Second) // exp counts whole seconds
	body, _ := json.Marshal(map[string]any{"query": `subscription($c: ID!) { messageAdded(conversationId: $c) { cursor } }`,
		"variables": map[string]any{"c": conv}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+hs256(t, "alice", exp))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rest, err := io.ReadAll(resp.Body) // ends when the server cuts the stream
	if ctx.Err() != nil {
		t.Fatalf("the stream did not end at the credential's expiry: %v", err)
	}
	if time.Now().Before(exp) {
		t.Errorf("the stream ended before the credential expired")
	}
	if strings.Contains(string(rest), "event: complete") {
		t.Errorf("the stream completed; want it cut:\n%s", rest)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
