package sourceid_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/internal/sourceid"
)

func text(s string) *parley.TextMessage {
	return &parley.TextMessage{Body: parley.Body{Parts: []parley.Part{{Kind: parley.PartText, Text: s}}}}
}

// ids imports the input messages (each yielding n messages) and returns the source ids.
func ids(prefix string, inputs []string, n int) []string {
	imp := &parley.Import{}
	chain := sourceid.NewChain(prefix)
	for _, in := range inputs {
		o := chain.Start(imp, "here", []byte(in))
		for range n {
			o.Add(text(in))
		}
		if o.Len() != n {
			panic("Len")
		}
	}
	var out []string
	for _, m := range imp.Messages {
		out = append(out, m.Message.Meta().SourceID)
	}
	return out
}

func TestChain(t *testing.T) {
	t.Parallel()
	// The digest is chained over the compact JSON of each message: the ids stored by
	// earlier imports must stay what they were.
	first := sha256.Sum256([]byte("\n" + `{"role":"user","content":"hi"}`))
	firstHex := hex.EncodeToString(first[:])
	second := sha256.Sum256([]byte(firstHex + "\n" + `{"role":"assistant","content":"yo"}`))
	want := []string{
		"p:" + firstHex[:32], "p:" + firstHex[:32] + "#1",
		"p:" + hex.EncodeToString(second[:])[:32], "p:" + hex.EncodeToString(second[:])[:32] + "#1",
	}
	got := ids("p", []string{`{"role": "user", "content": "hi"}`, "{\n\"role\":\"assistant\",\"content\":\"yo\"}"}, 2)
	if len(got) != len(want) {
		t.Fatalf("got %d ids, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("id %d: got %s, want %s", i, got[i], want[i])
		}
	}
	// The same message after a different history gets a different id; a longer copy of
	// a history keeps the ids of what it shares.
	if a, b := ids("p", []string{`"x"`, `"z"`}, 1), ids("p", []string{`"y"`, `"z"`}, 1); a[1] == b[1] {
		t.Errorf("the same message after different histories: both %s", a[1])
	}
	if a, b := ids("p", []string{`"x"`}, 1), ids("p", []string{`"x"`, `"y"`}, 1); a[0] != b[0] {
		t.Errorf("a longer copy changed an id: %s, then %s", a[0], b[0])
	}
	// Input that is not JSON is digested as it is.
	notJSON := sha256.Sum256([]byte("\n" + "not json "))
	if got := ids("p", []string{"not json "}, 1)[0]; got != "p:"+hex.EncodeToString(notJSON[:])[:32] {
		t.Errorf("not JSON: got %s", got)
	}
}
