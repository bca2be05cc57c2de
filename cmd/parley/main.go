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
	"github.com/parley-dev/parley/internal/buildinfo"
	"github.com/parley-dev/parley/tracing"
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
		Version:   buildinfo.Get().String(),
		Flags:     flagsOf(config.Global),
		Commands: []*cli.Command{
			versionCommand(stdout),
			serveCommand(stdout, stderr),
			migrateCommand(stdout, stderr),
			importCommand(stdout, stderr), exportCommand(stdout, stderr),
			conversationsCommand(stdout, stderr), tokenCommand(stdout, stderr),
			schemaCommand(stdout),
		},
	}
	return app.Run(ctx, args)
}

func init() {
	// --version prints what `parley version` prints.
	cli.VersionPrinter = func(cmd *cli.Command) {
		fmt.Fprintf(cmd.Root().Writer, "parley %s\n", cmd.Root().Version)
	}
}

// versionCommand prints the build's version, VCS revision and Go toolchain, as
// --version does.
func versionCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, the VCS revision it was built from and the Go toolchain",
		Action: func(ctx context.Context, cmd *cli.Command) error {
			_, err := fmt.Fprintf(stdout, "parley %s\n", buildinfo.Get())
			return err
		},
	}
}

// clientVersion is how Parley names its version to MCP servers and tracers.
var clientVersion = buildinfo.Get().Version

// logger builds the slog logger the configuration asks for (--log-level, --log-format).
func logger(cfg config.Config, stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Process.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	// Lines logged in a traced request carry its trace_id and span_id.
	switch cfg.Process.LogFormat {
	case "text":
		return slog.New(tracing.LogHandler(slog.NewTextHandler(stderr, opts))), nil
	case "json":
		return slog.New(tracing.LogHandler(slog.NewJSONHandler(stderr, opts))), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", cfg.Process.LogFormat)
}
