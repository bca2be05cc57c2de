package processing_test

import (
	"net"
	"strings"
	"testing"
)

// TestImageFetchFailureRevealsNothing: a fetch that fails below HTTP (here a refused
// connection) is stored as "could not fetch the image from HOST", retryable, without the
// dial error, the server's addresses or its resolver (those go to the log).
func TestImageFetchFailureRevealsNothing(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close() // nothing listens there now: the connection is refused
	e := start(t, "fetch: {allow_networks: [127.0.0.0/8], timeout: 10s}\n")
	conv := e.CreateConversation(t, "fetch")
	id := e.AddMessage(t, conv, map[string]any{"image": map[string]any{"url": "http://" + closed + "/scan.png"}}).ID
	var out struct {
		RecognizeImage struct{ Recognition *recognition }
	}
	e.MustDo(t, recognizeMutation, map[string]any{"m": id, "mode": "OCR"}, &out)
	r := out.RecognizeImage.Recognition
	if r == nil || r.Status != "FAILED" || r.Error == nil {
		t.Fatalf("got %+v, want a stored failure", r)
	}
	if want := "could not fetch the image from " + closed; r.Error.Message != want || !r.Error.Retryable {
		t.Errorf("got %q (retryable %v), want %q, retryable", r.Error.Message, r.Error.Retryable, want)
	}
	for _, leak := range []string{"dial", "tcp", "connect", "refused", "lookup"} {
		if strings.Contains(r.Error.Message, leak) {
			t.Errorf("the stored failure %q says %q", r.Error.Message, leak)
		}
	}
}
