package parley

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// The fuzz targets of the domain's codecs: what clients send straight into them (JSON
// values, cursors, ids, free text). Each checks a round trip or an invariant, and that
// nothing panics. `make test-fuzz` runs each for a few seconds; failing inputs land in
// testdata/fuzz, which `go test` then replays.

// decodeAsGQL decodes JSON as gqlgen decodes variables: numbers kept as json.Number.
func decodeAsGQL(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errTrailing
	}
	return v, nil
}

var errTrailing = Errorf(EINVALID, "trailing data")

// FuzzJSONScalar: the JSON scalar (tool arguments and outputs, control params) takes
// any JSON value gqlgen decodes and gives back the same value; checkJSON accepts only
// valid JSON without NUL in its strings or keys, nested at most MaxJSONDepth deep, and
// says what is wrong with the rest as EINVALID.
func FuzzJSONScalar(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5e10,-0,"x\u0000y",null,true]}`, `"\ud800"`, `[[[[[]]]]]`,
		`{"\u0000":1}`, `1e999`, `{"a":1,"a":2}`, `"<script>alert(1)</script>"`, `[` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 201),
		"\"\xff\"", `12345678901234567890123456789`, ` {"k": "v"} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := checkJSON("f", JSON(data))
		if err != nil {
			if ErrorCode(err) != EINVALID || !strings.HasPrefix(ErrorMessage(err), "f: ") {
				t.Fatalf("checkJSON(%q): got %v, want EINVALID naming the field", data, err)
			}
		} else if !json.Valid(data) {
			t.Fatalf("checkJSON accepted invalid JSON %q", data)
		}
		v, derr := decodeAsGQL(data)
		if derr != nil {
			return
		}
		if err == nil && jsonDepth(v) > MaxJSONDepth {
			t.Fatalf("checkJSON accepted %q, nested %d deep", data, jsonDepth(v))
		}
		var j JSON
		if err := j.UnmarshalGQL(v); err != nil {
			t.Fatalf("UnmarshalGQL of decoded %q: %v", data, err)
		}
		var buf bytes.Buffer
		j.MarshalGQL(&buf)
		if !json.Valid(buf.Bytes()) {
			t.Fatalf("MarshalGQL of %q wrote invalid JSON %q", data, buf.Bytes())
		}
		back, err := decodeAsGQL(buf.Bytes())
		if err != nil || !reflect.DeepEqual(back, v) {
			t.Fatalf("round trip of %q: got %#v (%v), want %#v", data, back, err, v)
		}
		if j.IsNull() != (v == nil) {
			t.Fatalf("IsNull of %q: got %v", data, j.IsNull())
		}
		_, isObject := v.(map[string]any)
		if j.IsObject() != isObject {
			t.Fatalf("IsObject of %q: got %v, want %v", data, j.IsObject(), isObject)
		}
	})
}

// jsonDepth is how deeply v's arrays and objects nest (a scalar is 0).
func jsonDepth(v any) int {
	d := 0
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			d = max(d, jsonDepth(e))
		}
		return d + 1
	case map[string]any:
		for _, e := range v {
			d = max(d, jsonDepth(e))
		}
		return d + 1
	}
	return 0
}

// FuzzMessageCursor: a cursor parses to a position whose cursor parses to the same
// position, or is refused with EINVALID; every position's cursor parses back.
func FuzzMessageCursor(f *testing.F) {
	for _, s := range []string{MessageCursor(0), MessageCursor(42), "bTotMQ", "bTo5OTk5OTk5OTk5OTk5OTk5OTk5OTk", "", "%%%", "bTo", "YzoxOjI"} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, cursor string, position int) {
		pos, err := ParseMessageCursor("after", cursor)
		if err != nil {
			if ErrorCode(err) != EINVALID || !utf8.ValidString(ErrorMessage(err)) || len(ErrorMessage(err)) > 512 {
				t.Fatalf("ParseMessageCursor(%q): got %v, want a short EINVALID", cursor, err)
			}
		} else {
			if pos < 0 {
				t.Fatalf("ParseMessageCursor(%q) = %d, negative", cursor, pos)
			}
			if again, err := ParseMessageCursor("after", MessageCursor(pos)); err != nil || again != pos {
				t.Fatalf("cursor of %d (from %q): parsed %d, %v", pos, cursor, again, err)
			}
		}
		if position < 0 {
			return
		}
		if position > MaxPosition {
			if _, err := ParseMessageCursor("after", MessageCursor(position)); ErrorCode(err) != EINVALID {
				t.Fatalf("MessageCursor(%d), past MaxPosition: got %v, want EINVALID", position, err)
			}
			return
		}
		if got, err := ParseMessageCursor("after", MessageCursor(position)); err != nil || got != position {
			t.Fatalf("MessageCursor(%d) parsed back as %d, %v", position, got, err)
		}
	})
}

// FuzzConversationCursor: the same for conversation cursors (an update time and a key).
func FuzzConversationCursor(f *testing.F) {
	f.Add(ConversationCursor(time.Unix(1700000000, 123456000), "0afe6979-3156-424a-a237-1f8bc24a5211"), int64(1), []byte("0123456789abcdef"))
	f.Add("YzoxOjI", int64(-62135596800000000), []byte{})
	f.Add("", int64(0), []byte("x"))
	f.Fuzz(func(t *testing.T, cursor string, micros int64, keyBytes []byte) {
		ts, key, err := ParseConversationCursor("after", cursor)
		if err != nil {
			if ErrorCode(err) != EINVALID || len(ErrorMessage(err)) > 512 {
				t.Fatalf("ParseConversationCursor(%q): got %v, want a short EINVALID", cursor, err)
			}
		} else if ts2, key2, err := ParseConversationCursor("after", ConversationCursor(ts, key)); err != nil || !ts2.Equal(ts) || key2 != key {
			t.Fatalf("re-encoding %q: got %v %q %v, want %v %q", cursor, ts2, key2, err, ts, key)
		}
		u, err := uuid.FromBytes(append(keyBytes, make([]byte, 16)...)[:16])
		if err != nil {
			t.Fatal(err)
		}
		at := time.UnixMicro(micros).UTC()
		ts, key, err = ParseConversationCursor("after", ConversationCursor(at, u.String()))
		if micros < minCursorTime || micros > maxCursorTime {
			if ErrorCode(err) != EINVALID {
				t.Fatalf("cursor of %v, outside years 1 to 9999: got %v, want EINVALID", at, err)
			}
			return
		}
		if err != nil || !ts.Equal(at) || key != u.String() {
			t.Fatalf("round trip of %v %s: got %v %q %v", at, u, ts, key, err)
		}
	})
}

// FuzzIDs: a public id parses to a canonical key whose id parses to the same key; a
// conversation id is never a message id and the other way round.
func FuzzIDs(f *testing.F) {
	for _, s := range []string{"conv_0afe6979-3156-424a-a237-1f8bc24a5211", "msg_0AFE6979-3156-424A-A237-1F8BC24A5211",
		"conv_{0afe6979-3156-424a-a237-1f8bc24a5211}", "msg_urn:uuid:0afe6979-3156-424a-a237-1f8bc24a5211", "conv_", "", "msg_\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		for _, k := range []struct {
			parse, other func(string) (string, bool)
			format       func(string) string
		}{
			{ParseConversationID, ParseMessageID, ConversationID},
			{ParseMessageID, ParseConversationID, MessageID},
		} {
			key, ok := k.parse(id)
			if !ok {
				continue
			}
			if _, err := uuid.Parse(key); err != nil || key != strings.ToLower(key) {
				t.Fatalf("%q parsed to %q, not a canonical UUID", id, key)
			}
			if again, ok := k.parse(k.format(key)); !ok || again != key {
				t.Fatalf("%q: key %q formats to %q, which parses to %q, %v", id, key, k.format(key), again, ok)
			}
			if _, ok := k.other(id); ok {
				t.Fatalf("%q parses as both kinds of id", id)
			}
		}
	})
}

// FuzzCleanText: invalid UTF-8 is refused (EINVALID, naming the field); anything else
// comes back valid, without control characters other than tab, newline and carriage
// return, unchanged when it had none, and cleaning again changes nothing.
func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"hello", "a\x00b\x07c\x1bd\x7fe\u0085f\tg\nh\ri", "\xff\xfe", "e\u0301 👩‍👩‍👧", "<script>alert(1)</script>",
		"\u202eevil", "\ufeffBOM", strings.Repeat("x", 1000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := CleanText("content", s)
		if !utf8.ValidString(s) {
			if ErrorCode(err) != EINVALID || !strings.HasPrefix(ErrorMessage(err), "content: invalid UTF-8") {
				t.Fatalf("CleanText(%q): got %q, %v; want EINVALID", s, out, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("CleanText(%q): %v", s, err)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("CleanText(%q) = %q, invalid UTF-8", s, out)
		}
		hadControl := false
		for _, r := range s {
			if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
				hadControl = true
			}
		}
		for _, r := range out {
			if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
				t.Fatalf("CleanText(%q) = %q, keeps control character %U", s, out, r)
			}
		}
		if !hadControl && out != s {
			t.Fatalf("CleanText(%q) = %q, changed clean text", s, out)
		}
		if again, err := CleanText("content", out); err != nil || again != out {
			t.Fatalf("cleaning %q again: got %q, %v", out, again, err)
		}
	})
}
