package processing_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parley-dev/parley/internal/textimage"
)

const recognizeMutation = `mutation($m: ID!, $mode: RecognitionMode) { recognizeImage(messageId: $m, mode: $mode) {
	id recognitionMode recognition { status modeUsed recognizedText visionAnalysis confidence language script notice
	error { message retryable } processedAt } } }`

type recognition struct {
	Status         string
	ModeUsed       *string
	RecognizedText *string
	VisionAnalysis *string
	Confidence     *float64
	Language       *string
	Script         *string
	Notice         *string
	Error          *struct {
		Message   string
		Retryable bool
	}
	ProcessedAt string
}

// visionEndpoint is a fake OpenAI-compatible endpoint: it checks that a request is a chat
// completion with a text part and an inline image part, and answers as the API does,
// or fails with status when it is set.
type visionEndpoint struct {
	t      *testing.T
	status atomic.Int32
	calls  atomic.Int32
}

func (v *visionEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.calls.Add(1)
	var body struct {
		Model    string
		Messages []struct {
			Role    string
			Content []struct {
				Type     string
				ImageURL struct{ URL string } `json:"image_url"`
			}
		}
	}
	raw, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(raw, &body); err != nil || r.URL.Path != "/v1/chat/completions" || body.Model != "gpt-4o" ||
		len(body.Messages) != 1 || len(body.Messages[0].Content) != 2 || body.Messages[0].Content[0].Type != "text" ||
		body.Messages[0].Content[1].Type != "image_url" || !strings.HasPrefix(body.Messages[0].Content[1].ImageURL.URL, "data:image/png;base64,") {
		v.t.Errorf("unexpected vision request to %s: %s", r.URL.Path, raw)
	}
	w.Header().Set("Content-Type", "application/json")
	if s := v.status.Load(); s != 0 {
		w.WriteHeader(int(s))
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
		return
	}
	fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"stop",`+
		`"message":{"role":"assistant","content":"DESCRIPTION:\nA card with a greeting.\nTEXT:\nHELLO VISION"}}]}`)
}

func TestRecognizeImage(t *testing.T) {
	t.Parallel()
	png := textimage.PNG("Invoice number 4711", "Total due 99 EUR")
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "scan.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "fake.png"), []byte("this is text, named like a picture"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := http.NewServeMux()
	files.HandleFunc("/scan.png", func(w http.ResponseWriter, r *http.Request) { w.Write(png) })
	fileServer := httptest.NewServer(files)
	defer fileServer.Close()
	vision := &visionEndpoint{t: t}
	visionServer := httptest.NewServer(vision)
	defer visionServer.Close()

	withVision := start(t, fmt.Sprintf(`
workspace: {root: %q}
vision: {url: %q, model: gpt-4o, api_key: sk-test}
fetch: {allow_networks: [127.0.0.0/8]}
`, ws, visionServer.URL+"/v1"))
	textOnlyModel := start(t, fmt.Sprintf(`
workspace: {root: %q}
vision: {url: %q, model: gpt-3.5-turbo}
`, ws, visionServer.URL+"/v1"))

	b64 := map[string]any{"base64": base64.StdEncoding.EncodeToString(png), "mediaType": "image/png"}
	tests := []struct {
		name       string
		e          *env
		input      map[string]any
		mode       any
		wantStatus string
		wantMode   string
		wantText   string // part of recognizedText
		wantNotice string
		wantError  string
	}{
		{name: "ocr", e: withVision, input: b64, mode: "OCR", wantStatus: "COMPLETED", wantMode: "OCR", wantText: "Invoice number 4711\nTotal due 99 EUR"},
		{name: "vision", e: withVision, input: b64, mode: "VISION", wantStatus: "COMPLETED", wantMode: "VISION", wantText: "HELLO VISION"},
		{name: "auto uses vision", e: withVision, input: b64, wantStatus: "COMPLETED", wantMode: "VISION", wantText: "HELLO VISION"},
		{name: "auto without vision model", e: textOnlyModel, input: b64, wantStatus: "COMPLETED", wantMode: "OCR",
			wantText: "Invoice number 4711", wantNotice: "Vision is unavailable (model gpt-3.5-turbo cannot see images)"},
		{name: "vision without vision model", e: textOnlyModel, input: b64, mode: "VISION", wantStatus: "FAILED", wantError: "cannot see images"},
		{name: "file path", e: withVision, input: map[string]any{"filePath": "scan.png"}, mode: "OCR", wantStatus: "COMPLETED", wantMode: "OCR", wantText: "Invoice number 4711"},
		{name: "file path outside", e: withVision, input: map[string]any{"filePath": "/etc/hostname"}, mode: "OCR", wantStatus: "FAILED", wantError: "outside the workspace"},
		{name: "format by content", e: withVision, input: map[string]any{"filePath": "fake.png"}, mode: "OCR", wantStatus: "FAILED", wantError: "not PNG, JPEG, GIF or WebP"},
		{name: "url allowed", e: withVision, input: map[string]any{"url": fileServer.URL + "/scan.png"}, mode: "OCR", wantStatus: "COMPLETED", wantMode: "OCR", wantText: "Total due 99 EUR"},
		{name: "url private refused", e: textOnlyModel, input: map[string]any{"url": fileServer.URL + "/scan.png"}, mode: "OCR", wantStatus: "FAILED", wantError: "non-public address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv := tt.e.CreateConversation(t, tt.name)
			id := tt.e.AddMessage(t, conv, map[string]any{"image": tt.input}).ID
			var out struct {
				RecognizeImage struct{ Recognition *recognition }
			}
			tt.e.MustDo(t, recognizeMutation, map[string]any{"m": id, "mode": tt.mode}, &out)
			r := out.RecognizeImage.Recognition
			if r == nil || r.Status != tt.wantStatus {
				t.Fatalf("got %+v, want status %s", r, tt.wantStatus)
			}
			if tt.wantError != "" {
				if r.Error == nil || !strings.Contains(r.Error.Message, tt.wantError) {
					t.Errorf("got error %+v, want one containing %q", r.Error, tt.wantError)
				}
				return
			}
			if deref(r.ModeUsed) != tt.wantMode || !strings.Contains(deref(r.RecognizedText), tt.wantText) {
				t.Errorf("got mode %s text %q, want %s with %q", deref(r.ModeUsed), deref(r.RecognizedText), tt.wantMode, tt.wantText)
			}
			if !strings.Contains(deref(r.Notice), tt.wantNotice) {
				t.Errorf("got notice %q, want %q", deref(r.Notice), tt.wantNotice)
			}
			switch tt.wantMode {
			case "OCR":
				if r.Confidence == nil || *r.Confidence < 0.7 || deref(r.Language) != "eng" || deref(r.Script) != "Latin" {
					t.Errorf("got confidence %v language %q script %q, want > 0.7, eng, Latin", r.Confidence, deref(r.Language), deref(r.Script))
				}
			case "VISION":
				if deref(r.VisionAnalysis) != "A card with a greeting." {
					t.Errorf("got analysis %q", deref(r.VisionAnalysis))
				}
			}
		})
	}
}

// AUTO falls back to OCR when vision fails, says so, and records the mode used; the
// failure of VISION alone is stored as retryable, and retrying succeeds.
func TestRecognizeFallbackAndRetry(t *testing.T) {
	t.Parallel()
	png := textimage.PNG("Fallback works")
	vision := &visionEndpoint{t: t}
	vision.status.Store(http.StatusServiceUnavailable)
	visionServer := httptest.NewServer(vision)
	defer visionServer.Close()
	e := start(t, fmt.Sprintf("vision: {url: %q, model: gpt-4o, api_key: k}\n", visionServer.URL+"/v1"))
	conv := e.CreateConversation(t, "fallback")
	id := e.AddMessage(t, conv, map[string]any{"image": map[string]any{
		"base64": base64.StdEncoding.EncodeToString(png), "mediaType": "image/png", "recognitionMode": "AUTO"}}).ID

	var out struct {
		RecognizeImage struct{ Recognition *recognition }
	}
	e.MustDo(t, recognizeMutation, map[string]any{"m": id}, &out)
	r := out.RecognizeImage.Recognition
	if r == nil || r.Status != "COMPLETED" || deref(r.ModeUsed) != "OCR" || deref(r.RecognizedText) != "Fallback works" ||
		!strings.Contains(deref(r.Notice), "Vision failed") {
		t.Fatalf("got %+v, want OCR's text with a notice that vision failed", r)
	}

	e.MustDo(t, recognizeMutation, map[string]any{"m": id, "mode": "VISION"}, &out)
	r = out.RecognizeImage.Recognition
	if r.Status != "FAILED" || r.Error == nil || !r.Error.Retryable || !strings.Contains(r.Error.Message, "503") {
		t.Fatalf("got %+v, want a retryable failure naming the 503", r)
	}
	vision.status.Store(0)
	e.MustDo(t, recognizeMutation, map[string]any{"m": id, "mode": "VISION"}, &out)
	if r = out.RecognizeImage.Recognition; r.Status != "COMPLETED" || deref(r.ModeUsed) != "VISION" || r.Error != nil {
		t.Fatalf("retry: got %+v, want vision's result", r)
	}
}
