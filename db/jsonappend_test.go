package db

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// TestAppendJSONIsMarshal holds the hand-written encoders of jsonappend.go to
// json.Marshal's bytes, over strings of every kind of character it escapes (HTML's,
// control characters, U+2028, invalid UTF-8, quotes, backslashes, emoji) and every
// optional field present and absent.
func TestAppendJSONIsMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 15))
	pieces := []string{"", "a", "plain text", "<b>&amp;</b>", "\"quoted\"", `back\slash`, "\n", "\r\n", "\t", "\b\f",
		"\x00", "\x01\x1f", "\x7f", "\u2028", "\u2029", "é", "😬", "\xff", "\xe2\x80", "\xed\xa0\x80", "ok  \tgithub.com/x\t0.01s\n", "\u001b[31m"}
	str := func() string {
		var b []byte
		for range rng.IntN(6) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		return string(b)
	}
	maybe := func(s string) string {
		if rng.IntN(2) == 0 {
			return ""
		}
		return s
	}
	num := func() int64 {
		if rng.IntN(2) == 0 {
			return 0
		}
		return rng.Int64N(1<<40) - 1<<20
	}
	kinds := []parley.PartKind{parley.PartText, parley.PartThinking, parley.PartRedactedThinking}
	args := []string{"", "{}", "null", `{"command":"go test ./..."}`, "{ \"a\" : [1, 2.50, -3e2],\n\t\"b\": \"<b>&amp;\u2028\" }",
		`{"path":"f\u003c1.go","nested":{"x":true,"y":null}}`, `"a string"`, `[{"k":"v"}, 1]`, "{\"s\":\"    é\"}"}
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+30*60), time.FixedZone("", -8*3600)}
	for i := range 5000 {
		var body parley.Body
		for range rng.IntN(4) {
			body.Parts = append(body.Parts, parley.Part{Kind: kinds[rng.IntN(len(kinds))], Text: str(), Signature: maybe(str()), ItemID: maybe(str())})
		}
		want, err := json.Marshal(encodeBody(body))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := appendBodyPayload([]byte("x"), body); !ok || !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("case %d: appendBodyPayload(%#v) = %q, %v; json.Marshal: %q", i, body, got, ok, want)
		}

		r := toolResultJSON{ToolCallID: str(), ToolName: maybe(str()), Status: parley.ToolResultStatus(str()), Truncated: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			r.Error = &toolErrorJSON{Message: str(), StackTrace: maybe(str()), Recoverable: rng.IntN(2) == 0}
		}
		want, err = json.Marshal([]toolResultJSON{r})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := appendToolResults(nil, &r); !ok || !bytes.Equal(got, want) {
			t.Fatalf("case %d: appendToolResults(%#v) = %q, %v; json.Marshal: %q", i, r, got, ok, want)
		}

		var calls []parley.ToolCall
		for range rng.IntN(4) {
			c := parley.ToolCall{ID: str(), Name: str(), Arguments: parley.JSON(args[rng.IntN(len(args))]), ItemID: maybe(str()),
				ThoughtSignature: maybe(str()), ApprovalStatus: parley.ApprovalStatus(str()), ArgumentsInvalid: rng.IntN(2) == 0, Imported: rng.IntN(2) == 0}
			if rng.IntN(2) == 0 {
				raw := str()
				c.ArgumentsRaw = &raw
			}
			if rng.IntN(2) == 0 {
				n := rng.IntN(5)
				c.PartIndex = &n
			}
			if rng.IntN(2) == 0 {
				at := time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
				c.Decision = &parley.ApprovalDecision{Status: parley.ApprovalStatus(str()), DecidedBy: maybe(str()), Reason: maybe(str()), DecidedAt: at}
			}
			calls = append(calls, c)
		}
		want, err = json.Marshal(encodeToolCalls(calls))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := appendToolCalls([]byte("x"), calls); !ok || !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("case %d: appendToolCalls(%#v) = %q, %v; json.Marshal: %q", i, calls, got, ok, want)
		}

		var p provenanceJSON
		p.Provider, p.Model, p.ResponseID, p.FinishReason = maybe(str()), maybe(str()), maybe(str()), maybe(str())
		p.Usage.Input, p.Usage.Output, p.Usage.CachedInput, p.Usage.CacheCreation, p.Usage.Reasoning = num(), num(), num(), num(), num()
		p.TimeToFirstTokenMs, p.DurationMs = num(), num()
		want, err = json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendProvenance(nil, &p); !bytes.Equal(got, want) {
			t.Fatalf("case %d: appendProvenance(%#v) = %q; json.Marshal: %q", i, p, got, want)
		}
	}
	// What they do not write is left to json.Marshal.
	if _, ok := appendBodyPayload(nil, parley.Body{Parts: []parley.Part{{Kind: parley.PartText, Citations: parley.JSON(`[]`)}}}); ok {
		t.Error("appendBodyPayload wrote a part with citations")
	}
	if _, ok := appendToolResults(nil, &toolResultJSON{Output: parley.JSON(`{}`)}); ok {
		t.Error("appendToolResults wrote a result with an output")
	}
	for _, c := range []parley.ToolCall{
		{ID: "a", Arguments: parley.JSON(`{"a":`)},
		{ID: "b", Decision: &parley.ApprovalDecision{DecidedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		if _, err := json.Marshal(encodeToolCalls([]parley.ToolCall{c})); err == nil {
			t.Errorf("json.Marshal wrote %#v: the case does not test a failure", c)
		}
		if got, ok := appendToolCalls([]byte("x"), []parley.ToolCall{c}); ok || string(got) != "x" {
			t.Errorf("appendToolCalls(%#v) = %q, %v; want it left to json.Marshal, which fails", c, got, ok)
		}
	}
}

// TestArrayIsPQArrays holds the vector query's arrays (vectorsQuery) to lib/pq's
// pq.Array text of the same elements.
func TestArrayIsPQArrays(t *testing.T) {
	for _, elems := range [][]sql.NullString{
		nil,
		{{String: "", Valid: true}},
		{{}},
		{{String: `a "quoted" \ back\slash`, Valid: true}, {}, {String: "{},NULL\n\t😬", Valid: true}, {String: "NULL", Valid: true}},
	} {
		var a []byte
		var s []string
		for _, e := range elems {
			a = appendArrayElement(a, e.String, e.Valid)
			s = append(s, e.String)
		}
		want, err := pq.Array(elems).Value()
		if err != nil {
			t.Fatal(err)
		}
		if len(elems) == 0 {
			want = "{}" // pq's for an empty slice; nil is NULL, which the query never sends
		}
		if got := string(array(a)); got != want {
			t.Errorf("array(%v) = %q, pq.Array: %q", elems, got, want)
		}
		allValid := true
		for _, e := range elems {
			allValid = allValid && e.Valid
		}
		if want, _ := pq.Array(s).Value(); allValid && len(s) > 0 && string(array(a)) != want {
			t.Errorf("array(%q) = %q, pq.Array of strings: %q", s, array(a), want)
		}
	}
}
