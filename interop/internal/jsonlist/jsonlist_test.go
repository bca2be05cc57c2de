package jsonlist

import (
	"bytes"
	"encoding/json"
	"testing"
)

// raw marshals as its bytes, as the SDKs' params do.
type raw string

func (r raw) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// TestAppendMatchesMarshal: Append writes what encoding/json.Marshal writes for the same
// list, HTML escaping included.
func TestAppendMatchesMarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		items []raw
	}{
		{"empty", []raw{}},
		{"one", []raw{`{"role":"user","content":"hi"}`}},
		{"several", []raw{`{"a":1}`, `[true,null]`, `"x"`}},
		{"html and separators", []raw{`{"content":"<b>a & b</b>"}`, "\"line\u2028para\u2029\""}},
		{"nil", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(tc.items)
			if err != nil {
				t.Fatal(err)
			}
			if tc.items == nil {
				want = []byte("[]") // a nil list is written as an empty one, never null
			}
			got, err := Append([]byte("prefix:"), tc.items)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append([]byte("prefix:"), want...)) {
				t.Errorf("got %s, want prefix:%s", got, want)
			}
		})
	}
}

// FuzzAppendString: AppendString writes what encoding/json.Marshal writes for the same
// string, whatever its bytes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a<b>&\u2028\u2029\b\f\n\r\t\x01\x1f\x7f\"\\", "é日本 \xff \xed\xa0\x80 \xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

// TestAppendRaw: AppendRaw writes what encoding/json.Marshal writes for a
// json.RawMessage, and refuses what is not JSON.
func TestAppendRaw(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
	}{
		{"object", `{"b": 1,  "a": [2.50, "<x>"]}`},
		{"empty", ``},
		{"null", `null`},
		{"separators", "\"a\u2028b\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var msg json.RawMessage // nil when empty, as an absent value is
			if tc.raw != "" {
				msg = json.RawMessage(tc.raw)
			}
			want, err := json.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendRaw(nil, []byte(tc.raw))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("got %s (%v), want %s", got, err, want)
			}
		})
	}
	if _, err := AppendRaw(nil, []byte(`{"a":`)); err == nil {
		t.Error("AppendRaw took JSON cut short")
	}
}
