package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/internal/wire"
)

// clientVersion is how Parley names its version to MCP servers.
const clientVersion = "0.1.0"

// configFlags are serve's configuration file and the flags that override its simple keys.
func configFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name: "config", Usage: "a YAML (or JSON) configuration file: workspace, agents, tool policies, MCP servers, vision, OCR, fetch limits (see README)",
			Sources: cli.EnvVars("PARLEY_CONFIG"),
		},
		&cli.StringFlag{
			Name: "workspace-root", Usage: "the directory file references and image files are read from (overrides workspace.root)",
			Sources: cli.EnvVars("PARLEY_WORKSPACE_ROOT"),
		},
		&cli.StringFlag{
			Name: "vision-url", Usage: "an OpenAI-compatible API base URL for image recognition, e.g. https://api.openai.com/v1 (overrides vision.url)",
			Sources: cli.EnvVars("PARLEY_VISION_URL"),
		},
		&cli.StringFlag{
			Name: "vision-model", Usage: "the vision model (overrides vision.model)",
			Sources: cli.EnvVars("PARLEY_VISION_MODEL"),
		},
		&cli.StringFlag{
			Name: "vision-api-key", Usage: "the vision endpoint's API key (overrides vision.api_key; prefer the environment variable)",
			Sources: cli.EnvVars("PARLEY_VISION_API_KEY"),
		},
	}
}

// loadConfig reads the configuration file (defaults without one) and applies the
// flags' overrides, then validates the result.
func loadConfig(cmd *cli.Command) (config.Config, error) {
	cfg := config.Default()
	if path := cmd.String("config"); path != "" {
		var err error
		if cfg, err = config.Load(path); err != nil {
			return cfg, err
		}
	}
	for flag, dst := range map[string]*string{
		"workspace-root": &cfg.Workspace.Root, "vision-url": &cfg.Vision.URL,
		"vision-model": &cfg.Vision.Model, "vision-api-key": &cfg.Vision.APIKey,
	} {
		if v := cmd.String(flag); v != "" {
			*dst = v
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	return cfg, nil
}

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
