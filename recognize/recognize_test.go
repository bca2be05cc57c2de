package recognize_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/internal/textimage"
	"github.com/parley-dev/parley/recognize"
)

func TestTesseract(t *testing.T) {
	t.Parallel()
	ocr := &recognize.Tesseract{Languages: "eng", Timeout: time.Minute}
	if err := ocr.Check(context.Background()); err != nil {
		t.Fatalf("tesseract is not usable (make deps installs it): %v", err)
	}
	img := textimage.PNG("The quick brown fox jumps", "over the lazy dog 42 times.", "Parley reads images.")
	res, err := ocr.Recognize(context.Background(), parley.ImageData{Bytes: img, MediaType: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	want := "The quick brown fox jumps\nover the lazy dog 42 times.\nParley reads images."
	if res.Text != want {
		t.Errorf("got text %q, want %q", res.Text, want)
	}
	if res.Confidence == nil || *res.Confidence < 0.8 || *res.Confidence > 1 {
		t.Errorf("got confidence %v, want between 0.8 and 1", res.Confidence)
	}
	if res.Language != "eng" {
		t.Errorf("got language %q, want eng", res.Language)
	}
	if res.Script != "Latin" {
		t.Errorf("got script %q, want Latin", res.Script)
	}
}

func TestTesseractFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ocr  *recognize.Tesseract
		img  []byte
		want string
	}{
		{"not installed", &recognize.Tesseract{Command: "/nonexistent/tesseract"}, textimage.PNG("x"), "not installed"},
		{"not an image", &recognize.Tesseract{}, []byte("hello, not a picture"), "OCR failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.ocr.Recognize(context.Background(), parley.ImageData{Bytes: tt.img})
			var pe *parley.ProcessingError
			if !errors.As(err, &pe) || !strings.Contains(pe.Message, tt.want) {
				t.Errorf("got %v, want a failure containing %q", err, tt.want)
			}
		})
	}
}

func TestTesseractBlank(t *testing.T) {
	t.Parallel()
	res, err := (&recognize.Tesseract{}).Recognize(context.Background(), parley.ImageData{Bytes: textimage.PNG(" ")})
	if err != nil || res.Text != "" || res.Confidence != nil {
		t.Errorf("got %+v, %v; want no text, no confidence, no error", res, err)
	}
}

// fakeVision is an OpenAI-compatible chat completions endpoint that checks each
// request has the shape the real API accepts and answers as the real API does.
type fakeVision struct {
	t       *testing.T
	key     string
	wantImg []byte
	status  int // answer with this status instead, when set
	answer  string
	calls   atomic.Int32
}

func (f *fakeVision) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		f.t.Errorf("got %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+f.key {
		f.t.Errorf("got Authorization %q, want the bearer key", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		f.t.Errorf("got Content-Type %q, want application/json", got)
	}
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL *struct {
					URL    string `json:"url"`
					Detail string `json:"detail"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
	}
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("request is not the expected JSON: %v\n%s", err, raw)
	}
	if body.Model != "gpt-4o" || len(body.Messages) != 1 || body.Messages[0].Role != "user" || body.MaxCompletionTokens <= 0 {
		f.t.Errorf("got request %s, want model gpt-4o, one user message, max_completion_tokens", raw)
	}
	var sawText, sawImage bool
	for _, part := range body.Messages[0].Content {
		switch part.Type {
		case "text":
			sawText = part.Text != ""
		case "image_url":
			sawImage = true
			data, ok := strings.CutPrefix(part.ImageURL.URL, "data:image/png;base64,")
			img, err := base64.StdEncoding.DecodeString(data)
			if !ok || err != nil || string(img) != string(f.wantImg) {
				f.t.Errorf("got image_url %.60q..., want a data URL of the image", part.ImageURL.URL)
			}
			if part.ImageURL.Detail != "auto" {
				f.t.Errorf("got detail %q, want auto", part.ImageURL.Detail)
			}
		default:
			f.t.Errorf("got content part of type %q", part.Type)
		}
	}
	if !sawText || !sawImage {
		f.t.Errorf("got request %s, want a text part and an image_url part", raw)
	}
	w.Header().Set("Content-Type", "application/json")
	if f.status != 0 {
		w.WriteHeader(f.status)
		io.WriteString(w, `{"error":{"message":"model overloaded","type":"server_error","code":null}}`)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-2024-08-06",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": f.answer, "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
	})
}

func TestVision(t *testing.T) {
	t.Parallel()
	img := textimage.PNG("hello")
	fake := &fakeVision{t: t, key: "sk-test", wantImg: img,
		answer: "DESCRIPTION:\nA white card with one word.\nTEXT:\nhello"}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	v := recognize.NewVision(recognize.VisionConfig{URL: srv.URL + "/v1", Model: "gpt-4o", APIKey: "sk-test"})
	if ok, why := v.Available(); !ok {
		t.Fatalf("gpt-4o: got unavailable (%s), want available", why)
	}
	res, err := v.Analyze(context.Background(), parley.ImageData{Bytes: img, MediaType: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Analysis != "A white card with one word." || res.Text != "hello" || res.Model != "gpt-4o-2024-08-06" {
		t.Errorf("got %+v", res)
	}

	fake.status = http.StatusServiceUnavailable
	_, err = v.Analyze(context.Background(), parley.ImageData{Bytes: img, MediaType: "image/png"})
	var pe *parley.ProcessingError
	if !errors.As(err, &pe) || !pe.Retryable || !strings.Contains(pe.Message, "503") {
		t.Errorf("got %v, want a retryable failure naming 503", err)
	}
}

func TestVisionCapabilities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model         string
		table         map[string]bool
		want, wantKno bool
	}{
		{"gpt-4o", nil, true, true},
		{"gpt-4o-mini", nil, true, true},
		{"gpt-3.5-turbo", nil, false, true},
		{"o3-mini", nil, false, true},
		{"my-local-model", nil, false, false},
		{"my-local-model", map[string]bool{"my-*": true}, true, true},
		{"gpt-4o", map[string]bool{"gpt-4o": false}, false, true},
	}
	for _, tt := range tests {
		got, known := recognize.SupportsVision(tt.table, tt.model)
		if got != tt.want || known != tt.wantKno {
			t.Errorf("%s with %v: got %v known %v, want %v known %v", tt.model, tt.table, got, known, tt.want, tt.wantKno)
		}
	}
	v := recognize.NewVision(recognize.VisionConfig{URL: "http://127.0.0.1:1/v1", Model: "gpt-3.5-turbo"})
	if ok, why := v.Available(); ok || !strings.Contains(why, "cannot see images") {
		t.Errorf("gpt-3.5-turbo: got %v %q, want unavailable", ok, why)
	}
}

func TestFetcher(t *testing.T) {
	t.Parallel()
	img := textimage.PNG("x")
	mux := http.NewServeMux()
	mux.HandleFunc("/a.png", func(w http.ResponseWriter, r *http.Request) { w.Write(img) })
	mux.HandleFunc("/big.png", func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 5000)) })
	mux.HandleFunc("/gone.png", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/slow.png", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/a.png", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

	allowed := recognize.NewFetcher(4096, 500*time.Millisecond, loopback)
	refusing := recognize.NewFetcher(4096, 2*time.Second, nil)
	tests := []struct {
		name      string
		f         *recognize.Fetcher
		url       string
		wantErr   string
		retryable bool
	}{
		{name: "allowed loopback", f: allowed, url: srv.URL + "/a.png"},
		{name: "redirect", f: allowed, url: srv.URL + "/redirect"},
		{name: "loopback refused", f: refusing, url: srv.URL + "/a.png", wantErr: "non-public address"},
		{name: "localhost refused", f: refusing, url: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/a.png", wantErr: "non-public address"},
		{name: "metadata refused", f: refusing, url: "http://169.254.169.254/latest/meta-data", wantErr: "non-public address"},
		{name: "private refused", f: refusing, url: "http://10.0.0.1/x.png", wantErr: "non-public address"},
		{name: "not http", f: allowed, url: "file:///etc/passwd", wantErr: "not an absolute http(s) URL"},
		{name: "too big", f: allowed, url: srv.URL + "/big.png", wantErr: "allowed"},
		{name: "not found", f: allowed, url: srv.URL + "/gone.png", wantErr: "404"},
		{name: "too slow", f: allowed, url: srv.URL + "/slow.png", wantErr: "longer than", retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.FetchImage(context.Background(), tt.url)
			if tt.wantErr == "" {
				if err != nil || string(got.Bytes) != string(img) || got.MediaType != "image/png" {
					t.Fatalf("got %d bytes of %s, %v; want the PNG", len(got.Bytes), got.MediaType, err)
				}
				return
			}
			var pe *parley.ProcessingError
			if !errors.As(err, &pe) || !strings.Contains(pe.Message, tt.wantErr) || pe.Retryable != tt.retryable {
				t.Errorf("got %v, want a failure containing %q, retryable %v", err, tt.wantErr, tt.retryable)
			}
		})
	}
}
