package transport

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/parley-dev/parley/internal/bufpool"
)

// TestAppendDataIsJSONMarshal: appendData writes what json.Marshal writes for a
// response holding only data, whatever the data.
func TestAppendDataIsJSONMarshal(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, data string }{
		{"object", `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`},
		{"whitespace", "{ \"a\" : [ 1 ,\n\t2 ] ,\r\n \"b\" : { } }"},
		{"html in strings", `{"a":"<p>x & y</p>","<":">"}`},
		{"escapes", `{"a":"quote \" backslash \\ slash \/ \u003c \n","b":"\\"}`},
		{"line separators", "{\"a\":\"x\u2028y\u2029z \xe2\x80\xa7 \xe2\x80\xaa\"}"},
		{"unicode", `{"a":"é 😀 日本"}`},
		{"invalid utf-8 in a string", "{\"a\":\"\xff\xfe\"}"},
		{"scalars", `{"n":-1.5e+10,"s":""}`},
		{"backslash before quote", `{"a":"\\\"","b":"c"}`},
		// Longer than a word of eight bytes (jsonscan): specials and runes past it, at
		// every offset within one.
		{"long strings", "{\"a\":\"" + strings.Repeat("plain text, eight at a time <b>é & \u2028 \\\" ", 3) + "\",\"b\":\"0123456789abcdef\xe2\x80\xa8\"}"},
	}
	for _, tc := range tests {
		want, err := json.Marshal(&graphql.Response{Data: json.RawMessage(tc.data)})
		if err != nil {
			t.Fatalf("%s: json.Marshal: %v", tc.name, err)
		}
		got, ok := appendData(nil, []byte(tc.data), nil)
		if !ok || string(got) != string(want) {
			t.Errorf("%s: got %s (%v), want %s", tc.name, got, ok, want)
		}
	}
	if _, ok := appendData(nil, []byte(`{"a":"unterminated}`), nil); ok {
		t.Errorf("data ending inside a string was written")
	}
}

// TestIsFinal: IsFinal says whether AppendFinal would append the data unchanged, for
// data that needs compacting or escaping, for what AppendFinal makes of it, and for data
// ending inside a string or an escape.
func TestIsFinal(t *testing.T) {
	t.Parallel()
	var cases []string
	for _, d := range []string{
		`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`,
		"{ \"a\" : [ 1 ,\n\t2 ] ,\r\n \"b\" : { } }",
		`{"a":"<p>x & y</p>","<":">"}`, `"<"`, `">"`, `"&"`, "\"\u2028\"", "\"\u2029\"",
		`{"a":"quote \" backslash \\ slash \/ \u003c \n","b":"\\"}`,
		"{\"a\":\"x \xe2\x80\xa7 \xe2\x80\xaa \xe2\x80\"}",
		`{"a":"é 😀 日本"}`, "{\"a\":\"\xff\xfe\"}", `{"n":-1.5e+10,"s":""}`, `{"a":"\\\"","b":"c"}`,
		"[\"" + strings.Repeat("plain text, eight at a time <b>é & \u2028 \\\" ", 3) + "\"]",
		"[\"" + strings.Repeat("plain text, eight at a time é \\\" ", 3) + "\"]",
		`{"a":"unterminated}`, `"ends in an escape\`, `[1, 2]`, "[1,2]\n", "",
	} {
		cases = append(cases, d)
		if f, ok := AppendFinal(nil, []byte(d)); ok {
			cases = append(cases, string(f))
		}
	}
	for _, d := range cases {
		f, ok := AppendFinal(nil, []byte(d))
		if want := ok && string(f) == d; IsFinal([]byte(d)) != want {
			t.Errorf("IsFinal(%q): got %v, want %v", d, !want, want)
		}
	}
}

// TestAppendDataCopiesFinalPieces: pieces of the data in their final form (Final) are
// copied where their placeholders stand outside a string, and the bytes are
// json.Marshal's of the data with the pieces in place all the same; a placeholder
// missing, or inside a string, leaves the response to json.Marshal (writeResponse puts
// the pieces in place for it: placePieces).
func TestAppendDataCopiesFinalPieces(t *testing.T) {
	page := `[{"t":"\u003cp\u003ex \u0026 y\u003c/p\u003e","n":1},{"t":"\u2028","j":{"a":[1,2]}}]`
	tests := []struct {
		name   string
		data   string // \x00: a piece
		pieces []string
		copied int64 // pieces copied; -1: left to json.Marshal
	}{
		{"one page", `{"c":{"title":"<b>","m":{"edges":` + "\x00" + `,"n":2}}}`, []string{page}, 1},
		{"two pages, whitespace around", "{\"a\": \x00 ,\"b\":\t\x00}", []string{page, page}, 2},
		{"no pieces", `{"a":"<x>"}`, nil, 0},
		{"a placeholder missing", `{"a":"<x>"}`, []string{page}, -1},
		{"a placeholder inside a string", "{\"a\":\"abc \x00 <&> abc\",\"b\":\"abc\"}", []string{`1`}, -1},
	}
	for _, tc := range tests {
		var pieces [][]byte
		for _, p := range tc.pieces {
			pieces = append(pieces, []byte(p))
		}
		want, err := json.Marshal(&graphql.Response{Data: json.RawMessage(placePieces([]byte(tc.data), pieces))})
		if err != nil && tc.copied >= 0 {
			t.Fatalf("%s: json.Marshal: %v", tc.name, err)
		}
		before := piecesCopied.Load()
		got, ok := appendData(nil, []byte(tc.data), pieces)
		if tc.copied < 0 {
			if ok {
				t.Errorf("%s: written as %s, want it left to json.Marshal", tc.name, got)
			}
			continue
		}
		if !ok || string(got) != string(want) {
			t.Errorf("%s: got %s (%v), want %s", tc.name, got, ok, want)
		}
		// Not parallel, and the parallel tests start after it: the counter is its own.
		if n := piecesCopied.Load() - before; n != tc.copied {
			t.Errorf("%s: copied %d pieces, want %d", tc.name, n, tc.copied)
		}
	}
}

// TestWriteResponse: a response with data only is written by appendData, anything else
// by json.Marshal; the bytes are json.Marshal's either way.
func TestWriteResponse(t *testing.T) {
	t.Parallel()
	hasNext := true
	tests := []struct {
		name     string
		resp     *graphql.Response
		dataOnly bool
	}{
		{"data", &graphql.Response{Data: json.RawMessage(`{"a":"<b>\u2028</b>","c":[1, 2]}`)}, true},
		{"data and errors", &graphql.Response{Data: json.RawMessage(`{"a":null}`), Errors: gqlerror.List{{Message: "x"}}}, false},
		{"errors only", &graphql.Response{Errors: gqlerror.List{{Message: "x"}}}, false},
		{"extensions", &graphql.Response{Data: json.RawMessage(`{}`), Extensions: map[string]any{"k": 1}}, false},
		{"incremental", &graphql.Response{Data: json.RawMessage(`{}`), Label: "l", HasNext: &hasNext}, false},
		{"data ending in a string", &graphql.Response{Data: json.RawMessage(`{"a":"b`)}, false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.resp)
			if tc.name == "data ending in a string" {
				// json.Marshal refuses it, and so does writeResponse, by panicking.
				defer func() {
					if recover() == nil {
						t.Errorf("invalid data was written")
					}
				}()
			} else if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			before := dataWritten.Load()
			writeResponse(rec, tc.resp, nil)
			if got := rec.Body.String(); got != string(want) {
				t.Errorf("got %s, want %s", got, want)
			}
			// No other test of this package writes responses.
			if wrote := dataWritten.Load() > before; wrote != tc.dataOnly {
				t.Errorf("appendData wrote the response: %v; want %v (a response with data only)", wrote, tc.dataOnly)
			}
			// A response of data says its length, so that net/http need not chunk it.
			if got := rec.Header().Get("Content-Length"); tc.dataOnly && got != strconv.Itoa(rec.Body.Len()) {
				t.Errorf("got Content-Length %q, want %d", got, rec.Body.Len())
			}
		})
	}
}

// benchData is a page of 100 messages' worth of JSON, with strings to escape.
var benchData = func() []byte {
	var b strings.Builder
	b.WriteString(`{"conversation":{"messages":{"edges":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"cursor":"Y3Vyc29y","node":{"__typename":"TextMessage","id":"msg_0123456789","position":42,` +
			`"role":"ASSISTANT","label":"Assistant","createdAt":"2025-03-04T05:06:07.890123+02:00",` +
			`"text":"What is in **main.go**? It reads <config> & starts\nthe server.","html":"<p>What is in <strong>main.go</strong>? It reads &lt;config&gt; &amp; starts</p>\n",` +
			`"parts":[{"kind":"TEXT","text":"What is in **main.go**?","signature":null}]}}`)
	}
	b.WriteString(`]}}}`)
	return []byte(b.String())
}()

// BenchmarkAppendData writes a page of history.
func BenchmarkAppendData(b *testing.B) {
	b.SetBytes(int64(len(benchData)))
	buf := make([]byte, 0, 2*len(benchData))
	for b.Loop() {
		if _, ok := appendData(buf[:0], benchData, nil); !ok {
			b.Fatal("not written")
		}
	}
}

// BenchmarkJSONMarshalData is what gqlgen does instead, for scale.
func BenchmarkJSONMarshalData(b *testing.B) {
	b.SetBytes(int64(len(benchData)))
	for b.Loop() {
		if _, err := json.Marshal(&graphql.Response{Data: benchData}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWriteResponsePlacesPieces: a response json.Marshal writes (here, data with errors)
// gets the pieces of its data (Final) in place of their placeholders.
func TestWriteResponsePlacesPieces(t *testing.T) {
	t.Parallel()
	page := `[{"t":"\u003cp\u003e"}]`
	_, final := withFinal(t.Context())
	var data bytes.Buffer
	data.WriteString(`{"a":`)
	final.Place(&data, append(bufpool.Get(), page...))
	data.WriteString(`,"b":null}`)
	resp := &graphql.Response{Data: data.Bytes(), Errors: gqlerror.List{{Message: "x"}}}
	want, err := json.Marshal(&graphql.Response{Data: json.RawMessage(`{"a":` + page + `,"b":null}`), Errors: resp.Errors})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	writeResponse(rec, resp, final)
	if got := rec.Body.String(); got != string(want) {
		t.Errorf("got %s, want %s", got, want)
	}
}
