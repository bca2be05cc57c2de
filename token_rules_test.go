package parley_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
)

func TestCleanTokenName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want, err string
	}{
		{"trimmed", "  ci bot ", "ci bot", ""},
		{"empty", "", "", ""},
		{"the longest", strings.Repeat("n", 200), strings.Repeat("n", 200), ""},
		{"too long", strings.Repeat("n", 201), "", "name: 201 bytes, at most 200 allowed"},
		{"invalid UTF-8", "a\xff", "", "name: invalid UTF-8 at byte 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parley.CleanTokenName(tt.in)
			if tt.err != "" {
				checkError(t, err, parley.EINVALID, tt.err)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCheckTokenExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		expires *time.Time
		ok      bool
	}{
		{"never", nil, true},
		{"later", ptr(now.Add(time.Microsecond)), true},
		{"now", ptr(now), false},
		{"before", ptr(now.Add(-time.Hour)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := parley.CheckTokenExpiry(tt.expires, now)
			if tt.ok != (err == nil) {
				t.Fatalf("got %v, want ok %v", err, tt.ok)
			}
			if err != nil && parley.ErrorMessage(err) != "expires: "+tt.expires.Format(time.RFC3339)+" is in the past" {
				t.Errorf("got %q, want it to name the time", parley.ErrorMessage(err))
			}
		})
	}
}

func TestCheckLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		n    int
		want int
		err  string
	}{
		{"zero: the default", 0, parley.DefaultPageSize, ""},
		{"one", 1, 1, ""},
		{"the maximum", parley.MaxPageSize, parley.MaxPageSize, ""},
		{"above", parley.MaxPageSize + 1, 0, "first: 1001 is out of range 1..1000"},
		{"negative", -1, 0, "first: -1 is out of range 1..1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parley.CheckLimit("first", tt.n)
			if tt.err != "" {
				checkError(t, err, parley.EINVALID, tt.err)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}
