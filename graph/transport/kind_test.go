package transport

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestClassify: each request gets the Kind the transports serve it by, once.
func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method string
		header       map[string]string
		want         Kind
	}{
		{"GET", http.MethodGet, nil, HTTP},
		{"POST", http.MethodPost, map[string]string{"Content-Type": "application/json"}, HTTP},
		{"PUT", http.MethodPut, nil, HTTP},
		{"websocket upgrade", http.MethodGet, map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}, Websocket},
		{"any upgrade", http.MethodGet, map[string]string{"Upgrade": "h2c"}, Websocket},
		{"event stream", http.MethodPost, map[string]string{"Content-Type": "application/json", "Accept": "text/event-stream"}, EventStream},
		{"event stream among others", http.MethodPost, map[string]string{"Content-Type": "application/json; charset=utf-8", "Accept": "application/json, text/event-stream;q=0.5"}, EventStream},
		{"event stream refused by q=0", http.MethodPost, map[string]string{"Content-Type": "application/json", "Accept": "text/event-stream;q=0, application/json"}, HTTP},
		{"event stream by wildcard only", http.MethodPost, map[string]string{"Content-Type": "application/json", "Accept": "text/*"}, HTTP},
		{"event stream with a body POST refuses", http.MethodPost, map[string]string{"Content-Type": "text/plain", "Accept": "text/event-stream"}, HTTP},
		{"event stream over GET", http.MethodGet, map[string]string{"Accept": "text/event-stream"}, HTTP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "/graphql", nil)
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			var got []Kind
			h := Classify(Classify(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got = append(got, KindOf(r.Context()))
			})))
			h.ServeHTTP(httptest.NewRecorder(), r)
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("got %v, want [%v]", got, tc.want)
			}
		})
	}
}

// TestClassifyOnce: a request classified at the edge keeps its Kind when a handler
// further in classifies again, whatever its headers have become.
func TestClassifyOnce(t *testing.T) {
	t.Parallel()
	var got Kind
	inner := Classify(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = KindOf(r.Context()) }))
	outer := Classify(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Upgrade")
		inner.ServeHTTP(w, r)
	}))
	r := httptest.NewRequest(http.MethodGet, "/graphql", nil)
	r.Header.Set("Upgrade", "websocket")
	outer.ServeHTTP(httptest.NewRecorder(), r)
	if got != Websocket {
		t.Errorf("got %v, want %v", got, Websocket)
	}
}
