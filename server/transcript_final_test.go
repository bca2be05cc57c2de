package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-dev/parley/internal/testserver"
)

// TestTranscriptOverHTTPIsJSONMarshal: a transcript answered over HTTP, which the
// transport writes from its final form (graph's placeTranscripts) and, when large, on
// its own (transport.bigPiece), is byte for byte what encoding/json makes of the same
// data as the websocket transport answers it (gqlgen's data, written as gqlgen writes
// it), gzipped or not, small and large (over bigPiece), with the characters the final
// form escapes (< > & U+2028 U+2029), two transcripts in one answer, and beside an
// error, where the transport leaves the answer to json.Marshal.
func TestTranscriptOverHTTPIsJSONMarshal(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "final <form> & more")
	text := "Look at <Save> & <Load>\u2028then\u2029\"quoted\" \\ back\tslash: "
	srv.AddMessage(t, conv, testserver.Text("USER", text+"small"))
	srv.AddMessage(t, conv, testserver.Text("ASSISTANT", text+strings.Repeat("a <b> & c ", 40<<10))) // 400 KiB: over bigPiece
	small := srv.CreateConversation(t, "small")
	srv.AddMessage(t, small, testserver.Text("USER", text))

	const one = `query($c: ID!, $f: TranscriptFormat!) { conversation(id: $c) { id transcript(format: $f) } }`
	const two = `query($c: ID!, $f: TranscriptFormat!) { conversation(id: $c) { a: transcript(format: $f) title b: transcript(format: $f, maxTokens: 200000) } }`
	const withError = `query($c: ID!, $f: TranscriptFormat!) { conversation(id: $c) { transcript(format: $f) } missing: conversation(id: "not an id") { transcript(format: $f) } }`
	for _, c := range []struct{ name, conv string }{{"large", conv}, {"small", small}} {
		for _, f := range []string{"OPENAI_CHAT", "ANTHROPIC_MESSAGES", "OPENAI_RESPONSES", "MARKDOWN", "PARLEY_JSON"} {
			for _, q := range []struct{ name, query string }{{"one", one}, {"two", two}, {"error", withError}} {
				if q.name == "two" && f == "PARLEY_JSON" || q.name == "two" && f == "MARKDOWN" {
					continue // maxTokens is for the LLM formats
				}
				t.Run(c.name+"/"+f+"/"+q.name, func(t *testing.T) {
					t.Parallel()
					vars := map[string]any{"c": c.conv, "f": f}
					want := wsAnswer(t, srv.URL, q.query, vars)
					if !bytes.Contains(want, []byte(`transcript`)) && !bytes.Contains(want, []byte(`"a"`)) {
						t.Fatalf("the websocket's answer holds no transcript: %.300s", want)
					}
					for _, enc := range []string{"gzip", "identity"} {
						got, gzipped := httpAnswer(t, srv.URL, q.query, vars, enc)
						got, want := requestIDs.ReplaceAll(got, []byte(`"requestId":"-"`)), requestIDs.ReplaceAll(want, []byte(`"requestId":"-"`))
						if c.name == "large" && gzipped != (enc == "gzip") {
							t.Errorf("%s: gzipped %v", enc, gzipped)
						}
						if !bytes.Equal(got, want) {
							i := 0
							for i < min(len(got), len(want)) && got[i] == want[i] {
								i++
							}
							t.Errorf("%s: got %d bytes, want %d (json.Marshal of the websocket's data); first difference at %d: got %.80q, want %.80q",
								enc, len(got), len(want), i, got[i:], want[i:])
						}
					}
				})
			}
		}
	}
}

// requestIDs are the errors' request ids, which differ from one request to the next.
var requestIDs = regexp.MustCompile(`"requestId":"[^"]*"`)

// httpAnswer posts query over HTTP with Accept-Encoding enc and returns the answer's
// body, decompressed, and whether it came gzipped.
func httpAnswer(t *testing.T, url, query string, vars map[string]any, enc string) ([]byte, bool) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequest("POST", url+"/graphql", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", enc) // set by hand: the client no longer decompresses
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		if r, err = gzip.NewReader(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if cl := resp.ContentLength; cl >= 0 && resp.Header.Get("Content-Encoding") == "" && cl != int64(len(out)) {
		t.Errorf("Content-Length %d for a body of %d bytes", cl, len(out))
	}
	return out, resp.Header.Get("Content-Encoding") == "gzip"
}

// wsAnswer runs query over the websocket transport and returns json.Marshal of its
// answer's payload, as the HTTP transport would write it with json.Marshal.
func wsAnswer(t *testing.T, url, query string, vars map[string]any) []byte {
	t.Helper()
	conn, _, _, _ := wsDial(t, url, nil)
	conn.SetReadLimit(64 << 20)
	wsSubscribe(t, conn, "1", query, vars)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m struct {
			Type    string
			Payload json.RawMessage
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		switch m.Type {
		case "ping", "ka":
			continue
		case "next":
		default:
			t.Fatalf("got a %s message, want next: %.300s", m.Type, b)
		}
		var p struct {
			Data   json.RawMessage `json:"data"`
			Errors json.RawMessage `json:"errors,omitempty"`
		}
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			t.Fatal(err)
		}
		// Errors first, as graphql.Response orders its fields.
		var out []byte
		if len(p.Errors) > 0 {
			out, err = json.Marshal(struct {
				Errors json.RawMessage `json:"errors"`
				Data   json.RawMessage `json:"data"`
			}{p.Errors, p.Data})
		} else {
			out, err = json.Marshal(struct {
				Data json.RawMessage `json:"data"`
			}{p.Data})
		}
		if err != nil {
			t.Fatal(err)
		}
		conn.Close(websocket.StatusNormalClosure, "")
		return out
	}
}
