package db

import "testing"

func TestWeightTSQuery(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"word", `'error'`, `'error':ABC`},
		{"prefix", `'deploy' & 'conf':*`, `'deploy':ABC & 'conf':*ABC`},
		{"phrase and negation", `'a' <-> 'b' & !'c'`, `'a':ABC <-> 'b':ABC & !'c':ABC`},
		{"quotes and backslashes", `'it''s' | 'a\\b'`, `'it''s':ABC | 'a\\b':ABC`},
		{"quote after backslash", `'a\\''':*`, `'a\\''':*ABC`},
	}
	for _, tt := range tests {
		if got := weightTSQuery(tt.in, "ABC"); got != tt.want {
			t.Errorf("%s: weightTSQuery(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}
