// Package wire builds Parley's processing services from a configuration: the workspace
// reader, the image fetcher, Tesseract, the vision client, the MCP session pool and the
// processing service over them. cmd/parley and the tests wire through it, so they run
// what production runs.
package wire

import (
	"log/slog"
	"net/netip"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/fileref"
	"github.com/parley-dev/parley/mcpclient"
	"github.com/parley-dev/parley/processing"
	"github.com/parley-dev/parley/recognize"
)

// Processing is the processing side of a server.
type Processing struct {
	Service *processing.Service
	MCP     *mcpclient.Pool
	OCR     *recognize.Tesseract
	Vision  *recognize.Vision
}

// Close ends the MCP sessions (stopping stdio servers).
func (p *Processing) Close() error { return p.MCP.Close() }

// NewProcessing builds the processing services for store from cfg, which must have been
// validated (config.Load or config.Parse).
func NewProcessing(cfg config.Config, store parley.ProcessingStore, version string, log *slog.Logger) *Processing {
	if log == nil {
		log = slog.Default()
	}
	var allow []netip.Prefix
	for _, n := range cfg.Fetch.AllowNetworks {
		if p, err := config.ParseNetwork(n); err == nil {
			allow = append(allow, p)
		}
	}
	servers := make(map[string]mcpclient.Server, len(cfg.MCP.Servers))
	for name, s := range cfg.MCP.Servers {
		servers[name] = mcpclient.Server{
			Command: s.Command, Env: s.Env, URL: s.URL, Headers: s.Headers,
			TTL: s.TTL.Std(), Timeout: s.Timeout.Std(),
		}
	}
	p := &Processing{
		MCP: mcpclient.New(servers, cfg.MCP.MaxResourceBytes, version, log),
		OCR: &recognize.Tesseract{Command: cfg.OCR.Command, Languages: cfg.OCR.Languages, Timeout: cfg.OCR.Timeout.Std()},
		Vision: recognize.NewVision(recognize.VisionConfig{
			URL: cfg.Vision.URL, Model: cfg.Vision.Model, APIKey: cfg.Vision.APIKey, Models: cfg.Vision.Models,
			Timeout: cfg.Vision.Timeout.Std(), MaxTokens: cfg.Vision.MaxTokens, Detail: cfg.Vision.Detail,
		}),
	}
	p.Service = processing.New(processing.Config{
		Store:         store,
		Permissions:   cfg.AgentPermissions(),
		Files:         &fileref.Workspace{Root: cfg.Workspace.Root, MaxBytes: cfg.Workspace.MaxFileBytes},
		Fetcher:       recognize.NewFetcher(cfg.Fetch.MaxBytes, cfg.Fetch.Timeout.Std(), allow),
		OCR:           p.OCR,
		Vision:        p.Vision,
		Resources:     p.MCP,
		MaxImageBytes: cfg.Fetch.MaxBytes,
		Logger:        log,
	})
	return p
}
