package db

import "testing"

func TestWithDefaultParam(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"key=value without it", "host=/tmp dbname=p", "host=/tmp dbname=p connect_timeout=5"},
		{"key=value with it", "host=/tmp connect_timeout=1 dbname=p", "host=/tmp connect_timeout=1 dbname=p"},
		{"spaces around =", "connect_timeout = 2", "connect_timeout = 2"},
		{"a longer key is another key", "x_connect_timeout=2", "x_connect_timeout=2 connect_timeout=5"},
		{"URL without it", "postgres://u@h:5/d?sslmode=disable", "dbname='d' host='h' port='5' sslmode='disable' user='u' connect_timeout=5"},
		{"URL with it", "postgres://u@h/d?connect_timeout=9", "connect_timeout='9' dbname='d' host='h' user='u'"},
		{"empty", "", "connect_timeout=5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withDefaultParam(tt.in, "connect_timeout", "5")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
