package recognize

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/parley-dev/parley"
)

// BuiltinVisionModels says which well-known models see images, by name or glob
// pattern. A configuration's table is laid over it.
var BuiltinVisionModels = map[string]bool{
	"gpt-4o*": true, "chatgpt-4o*": true, "gpt-4.1*": true, "gpt-4.5*": true, "gpt-5*": true,
	"gpt-4-turbo*": true, "gpt-4-vision*": true, "o1": true, "o1-20*": true, "o3": true, "o3-20*": true,
	"o3-pro*": true, "o4-mini*": true,
	"gpt-3.5*": false, "gpt-4": false, "gpt-4-0*": false, "o1-mini*": false, "o3-mini*": false,
	"claude-3*": true, "claude-*-4*": true, "claude-sonnet-4*": true, "claude-opus-4*": true, "claude-haiku-4*": true,
	"gemini-*": true, "llava*": true, "bakllava*": true, "llama3.2-vision*": true, "llama-3.2-*-vision*": true,
	"llama-4-*": true, "qwen2-vl*": true, "qwen2.5-vl*": true, "qwen*-vl*": true, "pixtral*": true,
	"gemma3*": true, "minicpm-v*": true, "moondream*": true, "granite3.2-vision*": true,
}

// SupportsVision looks a model up in table (then in BuiltinVisionModels): an exact name
// first, then the longest matching pattern. Unknown models are taken not to see.
func SupportsVision(table map[string]bool, model string) (supported, known bool) {
	for _, t := range []map[string]bool{table, BuiltinVisionModels} {
		if v, ok := t[model]; ok {
			return v, true
		}
		best, bestV := "", false
		for pattern, v := range t {
			if ok, _ := path.Match(pattern, model); ok && len(pattern) > len(best) {
				best, bestV = pattern, v
			}
		}
		if best != "" {
			return bestV, true
		}
	}
	return false, false
}

// VisionConfig configures a Vision client.
type VisionConfig struct {
	// URL is the API's base URL, e.g. https://api.openai.com/v1.
	URL, Model, APIKey string
	// Models is the configured capability table (see SupportsVision).
	Models    map[string]bool
	Timeout   time.Duration
	MaxTokens int
	// Detail is "auto", "low" or "high".
	Detail string
	// HTTPClient is the client requests go through (default: one with Timeout).
	HTTPClient *http.Client
}

// Vision asks a vision-capable model, through the official openai-go SDK, to describe
// an image and transcribe its text.
type Vision struct {
	cfg       VisionConfig
	client    openai.Client
	supported bool
	why       string
}

var _ parley.Vision = (*Vision)(nil)

// visionPrompt asks for a description and a transcription in a form that can be split.
const visionPrompt = `Describe this image for someone who cannot see it. Then transcribe every piece of text visible in it, exactly as written, keeping line breaks.
Answer in exactly this form:
DESCRIPTION:
<the description>
TEXT:
<the transcribed text, or NONE if there is no text>`

// NewVision returns a Vision client; Available says whether its model can see.
func NewVision(cfg VisionConfig) *Vision {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 1024
	}
	if cfg.Detail == "" {
		cfg.Detail = "auto"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	v := &Vision{cfg: cfg}
	v.client = openai.NewClient(
		option.WithBaseURL(cfg.URL),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(hc),
		option.WithRequestTimeout(cfg.Timeout),
		option.WithMaxRetries(1),
	)
	supported, known := SupportsVision(cfg.Models, cfg.Model)
	switch {
	case cfg.URL == "" || cfg.Model == "":
		v.why = "no vision endpoint is configured"
	case !known:
		v.why = fmt.Sprintf("model %s is not known to see images (list it under vision.models in the configuration)", cfg.Model)
	case !supported:
		v.why = fmt.Sprintf("model %s cannot see images", cfg.Model)
	default:
		v.supported = true
	}
	return v
}

// Available implements parley.Vision.
func (v *Vision) Available() (bool, string) { return v.supported, v.why }

// Analyze implements parley.Vision. The image goes inline as a data URL, so the model
// sees exactly the bytes that were checked, and private URLs never leave the server.
func (v *Vision) Analyze(ctx context.Context, img parley.ImageData) (parley.VisionResult, error) {
	if !v.supported {
		return parley.VisionResult{}, &parley.ProcessingError{Message: "vision is unavailable: " + v.why}
	}
	dataURL := "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Bytes)
	resp, err := v.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: v.cfg.Model,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart(visionPrompt),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL, Detail: v.cfg.Detail}),
			}),
		},
		MaxCompletionTokens: openai.Int(int64(v.cfg.MaxTokens)),
	})
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return parley.VisionResult{}, ctx.Err()
		}
		return parley.VisionResult{}, visionFailure(err)
	}
	if len(resp.Choices) == 0 || strings.TrimSpace(resp.Choices[0].Message.Content) == "" {
		if len(resp.Choices) > 0 && resp.Choices[0].Message.Refusal != "" {
			return parley.VisionResult{}, &parley.ProcessingError{Message: "the vision model refused: " + resp.Choices[0].Message.Refusal}
		}
		return parley.VisionResult{}, &parley.ProcessingError{Message: "the vision model gave an empty answer", Retryable: true}
	}
	analysis, text := splitAnswer(resp.Choices[0].Message.Content)
	model := resp.Model
	if model == "" {
		model = v.cfg.Model
	}
	return parley.VisionResult{Analysis: analysis, Text: text, Model: model}, nil
}

// splitAnswer splits the answer visionPrompt asks for; an answer in another form is
// all description.
func splitAnswer(answer string) (analysis, text string) {
	answer = strings.TrimSpace(answer)
	rest, ok := strings.CutPrefix(answer, "DESCRIPTION:")
	if !ok {
		return answer, ""
	}
	desc, txt, ok := strings.Cut(rest, "\nTEXT:")
	if !ok {
		return strings.TrimSpace(rest), ""
	}
	txt = strings.TrimSpace(txt)
	if txt == "NONE" {
		txt = ""
	}
	return strings.TrimSpace(desc), txt
}

// visionFailure turns an SDK error into a stored failure: the API's own status says
// whether trying again can help.
func visionFailure(err error) *parley.ProcessingError {
	var apiErr *openai.Error
	var netErr net.Error
	switch {
	case errors.As(err, &apiErr):
		msg := fmt.Sprintf("the vision endpoint answered %d", apiErr.StatusCode)
		if apiErr.Message != "" {
			msg += ": " + apiErr.Message
		}
		retry := apiErr.StatusCode == http.StatusTooManyRequests || apiErr.StatusCode >= 500 ||
			apiErr.StatusCode == http.StatusRequestTimeout
		return &parley.ProcessingError{Message: msg, Retryable: retry}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr):
		return &parley.ProcessingError{Message: "the vision endpoint could not be reached or timed out", Retryable: true}
	}
	return &parley.ProcessingError{Message: "the vision request failed", Retryable: true}
}
