package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/internal/wire"
)

// reportProcessing logs what the processing steps will be able to do, so that an
// operator sees at start that OCR is missing or vision is off.
func reportProcessing(ctx context.Context, cfg config.Config, p *wire.Processing, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.OCR.Check(ctx); err != nil {
		log.Warn("OCR unavailable: image recognition by OCR will fail", "err", err)
	}
	if ok, why := p.Vision.Available(); !ok {
		log.Info("vision unavailable: AUTO recognition uses OCR", "reason", why)
	}
	if cfg.Workspace.Root == "" {
		log.Info("no workspace root: file references cannot be resolved (set --workspace-root)")
	}
	log.Info("processing", "workspace", cfg.Workspace.Root, "mcpServers", len(cfg.MCP.Servers),
		"toolPolicies", len(cfg.Tools.Policies), "defaultToolPolicy", cfg.Tools.Default)
}
