// Command parley serves and administers Parley, the GraphQL store of LLM conversation
// history. main only wires: the work is in run.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "parley:", err)
		os.Exit(1)
	}
}

// run executes the command line args (args[0] is the program name). Output meant for the
// user goes to stdout, logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	app := &cli.Command{
		Name:      "parley",
		Usage:     "store LLM conversation history and serve it over GraphQL",
		Writer:    stdout,
		ErrWriter: stderr,
		Flags:     flagsOf(config.Global),
		Commands: []*cli.Command{
			serveCommand(stdout, stderr),
			migrateCommand(stdout, stderr),
			importCommand(stdout, stderr), exportCommand(stdout, stderr),
			conversationsCommand(stdout, stderr), tokenCommand(stdout, stderr),
			schemaCommand(stdout),
		},
	}
	return app.Run(ctx, args)
}

// clientVersion is how Parley names its version to MCP servers and tracers.
const clientVersion = "0.1.0"

// logger builds the slog logger the configuration asks for (--log-level, --log-format).
func logger(cfg config.Config, stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Process.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch cfg.Process.LogFormat {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", cfg.Process.LogFormat)
}
