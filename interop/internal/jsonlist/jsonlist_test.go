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
