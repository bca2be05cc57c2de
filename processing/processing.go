// Package processing runs Parley's processing steps: it implements
// parley.ProcessingService on top of a store and the capabilities it is given (a
// workspace file reader, an image fetcher, OCR, a vision model, an MCP resource reader),
// all behind the root package's interfaces. Every step runs outside any database
// transaction and stores its outcome, success or failure, in a short one.
package processing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // the formats whose headers loadImage reads
	_ "image/jpeg"
	_ "image/png"
	"log/slog"
	"net/http"
	"slices"
	"time"

	_ "golang.org/x/image/webp"

	"github.com/parley-dev/parley"
)

// Config is what a Service uses. Nil capabilities make their steps fail with a stored
// reason saying what is not configured.
type Config struct {
	Store       parley.ProcessingStore
	Permissions parley.AgentPermissions
	Files       parley.FileReader
	Fetcher     parley.ImageFetcher
	OCR         parley.OCR
	Vision      parley.Vision
	Resources   parley.ResourceReader
	// MaxImageBytes bounds an image read from a file (default parley.DefaultLimits).
	MaxImageBytes int64
	// MaxImagePixels bounds an image's width times height, checked on its header
	// before it is recognized (default parley.DefaultLimits).
	MaxImagePixels int64
	// Events wakes awaiting-call subscriptions when their owner's messages change (the
	// realtime hub, which also wakes them when events may have been lost); nil leaves
	// them to PollInterval.
	Events parley.EventWatcher
	// PollInterval is how often awaiting-call subscriptions look again when there is
	// no Events (default 5s).
	PollInterval time.Duration
	Logger       *slog.Logger
}

// Service implements parley.ProcessingService.
type Service struct {
	cfg Config
	log *slog.Logger
}

var _ parley.ProcessingService = (*Service)(nil)

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Permissions == nil {
		cfg.Permissions = parley.DefaultAgentPermissions
	}
	if cfg.MaxImageBytes == 0 {
		cfg.MaxImageBytes = int64(parley.DefaultLimits.MaxImageBytes)
	}
	if cfg.MaxImagePixels == 0 {
		cfg.MaxImagePixels = int64(parley.DefaultLimits.MaxImagePixels)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Second
	}
	return &Service{cfg: cfg, log: cfg.Logger}
}

// failure returns err as a stored failure when it is one, nil otherwise.
func failure(err error) *parley.ProcessingError {
	var pe *parley.ProcessingError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// ResolveFileReference implements parley.ProcessingService.
func (s *Service) ResolveFileReference(ctx context.Context, messageID string, agent *parley.AgentRole) (*parley.FileReferenceMessage, error) {
	if err := s.cfg.Permissions.Check(agent, parley.PermReadFiles); err != nil {
		return nil, err
	}
	m, err := s.cfg.Store.FindMessageByID(ctx, messageID)
	if err != nil {
		return nil, err
	}
	ref, ok := m.(*parley.FileReferenceMessage)
	if !ok {
		return nil, parley.Errorf(parley.EINVALID, "messageId: message %s is a %s, not a file reference", messageID, m.Kind())
	}
	res := parley.FileResolution{Status: parley.ProcessingCompleted}
	if s.cfg.Files == nil {
		res.Status, res.Error = parley.ProcessingFailed, &parley.ProcessingError{Message: "file reading is not configured on this server"}
	} else {
		content, err := s.cfg.Files.ReadReference(ctx, ref.Path, ref.StartLine, ref.EndLine)
		if pe := failure(err); pe != nil {
			res.Status, res.Error = parley.ProcessingFailed, pe
		} else if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", messageID, err)
		} else {
			res.Content, res.Truncated = content.Content, content.Truncated
			size := content.OriginalSize
			res.OriginalSize = &size
		}
	}
	return s.cfg.Store.SetFileResolution(ctx, messageID, res)
}

// RecognizeImage implements parley.ProcessingService.
func (s *Service) RecognizeImage(ctx context.Context, messageID string, mode *parley.RecognitionMode, agent *parley.AgentRole) (*parley.ImageMessage, error) {
	if err := s.cfg.Permissions.Check(agent, parley.PermRecognizeImages); err != nil {
		return nil, err
	}
	m, err := s.cfg.Store.FindMessageByID(ctx, messageID)
	if err != nil {
		return nil, err
	}
	img, ok := m.(*parley.ImageMessage)
	if !ok {
		return nil, parley.Errorf(parley.EINVALID, "messageId: message %s is a %s, not an image", messageID, m.Kind())
	}
	if img.Source.Kind == parley.ImageFilePath {
		if err := s.cfg.Permissions.Check(agent, parley.PermReadFiles); err != nil {
			return nil, err
		}
	}
	want := img.RecognitionMode
	if mode != nil {
		want = *mode
	}
	rec, err := s.recognize(ctx, img, want)
	if err != nil {
		return nil, fmt.Errorf("recognize %s: %w", messageID, err)
	}
	return s.cfg.Store.SetImageRecognition(ctx, messageID, rec)
}

// recognize runs the recognition mode asks for. Errors are faults; failures to store
// come back in the recognition.
func (s *Service) recognize(ctx context.Context, img *parley.ImageMessage, mode parley.RecognitionMode) (parley.ImageRecognition, error) {
	failed := func(pe *parley.ProcessingError, notice string) parley.ImageRecognition {
		return parley.ImageRecognition{Status: parley.ProcessingFailed, Error: pe, Notice: notice}
	}
	data, err := s.loadImage(ctx, img)
	if pe := failure(err); pe != nil {
		return failed(pe, ""), nil
	} else if err != nil {
		return parley.ImageRecognition{}, err
	}
	visionOK, why := false, "vision is not configured on this server"
	if s.cfg.Vision != nil {
		visionOK, why = s.cfg.Vision.Available()
	}
	switch mode {
	case parley.RecognitionVision:
		if !visionOK {
			return failed(&parley.ProcessingError{Message: "vision is unavailable: " + why}, ""), nil
		}
		return s.vision(ctx, data)
	case parley.RecognitionOCR:
		return s.ocr(ctx, data, "")
	}
	// AUTO: vision first when the model can see; OCR otherwise, or when vision fails.
	if !visionOK {
		return s.ocr(ctx, data, "Vision is unavailable ("+why+"); the image was read by OCR.")
	}
	rec, err := s.vision(ctx, data)
	if err != nil || rec.Status == parley.ProcessingCompleted {
		return rec, err
	}
	return s.ocr(ctx, data, "Vision failed ("+rec.Error.Message+"); the image was read by OCR instead.")
}

func (s *Service) vision(ctx context.Context, data parley.ImageData) (parley.ImageRecognition, error) {
	res, err := s.cfg.Vision.Analyze(ctx, data)
	if pe := failure(err); pe != nil {
		return parley.ImageRecognition{Status: parley.ProcessingFailed, Error: pe}, nil
	} else if err != nil {
		return parley.ImageRecognition{}, err
	}
	used := parley.RecognitionVision
	return parley.ImageRecognition{
		Status: parley.ProcessingCompleted, ModeUsed: &used,
		VisionAnalysis: res.Analysis, RecognizedText: res.Text,
	}, nil
}

func (s *Service) ocr(ctx context.Context, data parley.ImageData, notice string) (parley.ImageRecognition, error) {
	if s.cfg.OCR == nil {
		return parley.ImageRecognition{Status: parley.ProcessingFailed, Notice: notice,
			Error: &parley.ProcessingError{Message: "OCR is not configured on this server"}}, nil
	}
	res, err := s.cfg.OCR.Recognize(ctx, data)
	if pe := failure(err); pe != nil {
		return parley.ImageRecognition{Status: parley.ProcessingFailed, Error: pe, Notice: notice}, nil
	} else if err != nil {
		return parley.ImageRecognition{}, err
	}
	used := parley.RecognitionOCR
	return parley.ImageRecognition{
		Status: parley.ProcessingCompleted, ModeUsed: &used, RecognizedText: res.Text,
		Confidence: res.Confidence, Language: res.Language, Script: res.Script, Notice: notice,
	}, nil
}

// imageTypes are the formats recognized, by their content.
var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// loadImage gets an image's bytes from where its source says, and checks their format
// by content.
func (s *Service) loadImage(ctx context.Context, img *parley.ImageMessage) (parley.ImageData, error) {
	var data parley.ImageData
	switch src := img.Source; src.Kind {
	case parley.ImageBase64:
		b, err := decodeBase64(src.Data)
		if err != nil {
			return data, &parley.ProcessingError{Message: "the image's base64 data cannot be decoded"}
		}
		data.Bytes = b
	case parley.ImageURL:
		if s.cfg.Fetcher == nil {
			return data, &parley.ProcessingError{Message: "fetching images by URL is not configured on this server"}
		}
		var err error
		if data, err = s.cfg.Fetcher.FetchImage(ctx, src.URL); err != nil {
			return data, err
		}
	case parley.ImageFilePath:
		if s.cfg.Files == nil {
			return data, &parley.ProcessingError{Message: "file reading is not configured on this server"}
		}
		b, err := s.cfg.Files.ReadFile(ctx, src.FilePath, s.cfg.MaxImageBytes)
		if err != nil {
			return data, err
		}
		data.Bytes = b
	default:
		return data, &parley.ProcessingError{Message: fmt.Sprintf("image source %q is not supported", src.Kind)}
	}
	data.MediaType = http.DetectContentType(data.Bytes)
	if !slices.Contains(imageTypes, data.MediaType) {
		return data, &parley.ProcessingError{Message: fmt.Sprintf("the image data is %s, not PNG, JPEG, GIF or WebP", data.MediaType)}
	}
	// The header only: decoding the pixels of an image bomb is the cost to avoid.
	header, _, err := image.DecodeConfig(bytes.NewReader(data.Bytes))
	if err != nil {
		return data, &parley.ProcessingError{Message: fmt.Sprintf("the image's %s header cannot be read: it is damaged", data.MediaType)}
	}
	if px := int64(header.Width) * int64(header.Height); px > s.cfg.MaxImagePixels {
		return data, parley.Errorf(parley.EIMAGETOOLARGE, "image: %dx%d is %d pixels, more than the %d allowed",
			header.Width, header.Height, px, s.cfg.MaxImagePixels)
	}
	return data, nil
}

// InjectMCPResource implements parley.ProcessingService.
func (s *Service) InjectMCPResource(ctx context.Context, conversationID, server, uri string, agent *parley.AgentRole) (*parley.MCPResourceMessage, error) {
	if err := s.cfg.Permissions.Check(agent, parley.PermReadResources); err != nil {
		return nil, err
	}
	if s.cfg.Resources == nil {
		return nil, parley.Errorf(parley.EINVALID, "server: no MCP servers are configured on this server")
	}
	// Validate before reading: a bad uri should not reach the MCP server.
	probe := &parley.MCPResourceMessage{ServerName: server, ResourceURI: uri}
	if err := parley.Prepare(probe, parley.DefaultLimits); err != nil {
		return nil, err
	}
	if ttl := s.cfg.Resources.TTL(server); ttl > 0 {
		cached, ok, err := s.cfg.Store.AddCachedMCPResource(ctx, conversationID, server, uri, ttl)
		if err != nil {
			return nil, err
		}
		if ok {
			return cached, nil
		}
	}
	res, err := s.cfg.Resources.ReadResource(ctx, server, uri)
	if err != nil {
		return nil, err
	}
	m, err := s.cfg.Store.AddMessage(ctx, conversationID, &parley.MCPResourceMessage{
		ServerName: server, ResourceURI: uri, MimeType: res.MimeType, Truncated: res.Truncated,
		Body: parley.TextBody(res.Text),
	})
	if err != nil {
		return nil, err
	}
	return m.(*parley.MCPResourceMessage), nil
}
