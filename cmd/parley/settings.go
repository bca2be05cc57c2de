package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley/config"
)

// flagsOf makes the flags of scope from their declarations (config.Settings): each
// with its environment variable as its source, its default as its value, so that
// --help shows the real one, and its file key in its help.
func flagsOf(scope config.Scope) []cli.Flag {
	def := config.Default()
	var flags []cli.Flag
	for _, s := range config.SettingsOf(scope) {
		usage := s.Usage
		if s.Key != "" {
			usage += " (" + s.Key + ")"
		}
		if s.DefaultNote != "" {
			usage += " (default: " + s.DefaultNote + ")"
		}
		src := cli.EnvVars(s.Env)
		var f cli.Flag
		switch v := s.Field(&def).(type) {
		case *string:
			f = &cli.StringFlag{Name: s.Flag, Value: *v, Usage: usage, Sources: src}
		case *bool:
			if *v { // the library shows no default for a boolean flag
				usage += " (default: true)"
			}
			f = &cli.BoolFlag{Name: s.Flag, Value: *v, Usage: usage, Sources: src}
		case *int:
			f = &cli.IntFlag{Name: s.Flag, Value: *v, Usage: usage, Sources: src}
		case *int64:
			f = &cli.Int64Flag{Name: s.Flag, Value: *v, Usage: usage, Sources: src}
		case *time.Duration:
			f = &cli.DurationFlag{Name: s.Flag, Value: *v, Usage: usage, Sources: src}
		case *[]string:
			f = &cli.StringSliceFlag{Name: s.Flag, Value: *v, Usage: usage, Sources: src}
		default:
			panic(fmt.Sprintf("setting %s: a field of type %T", s.Flag, v))
		}
		flags = append(flags, f)
	}
	return flags
}

// loadConfig returns the configuration cmd runs with: the defaults, under the
// configuration file when serve is given one, under what the flags and environment
// variables of scopes give (cmd.IsSet is true for either; a flag wins over its
// variable). The result is validated.
func loadConfig(cmd *cli.Command, scopes ...config.Scope) (config.Config, error) {
	cfg := config.Default()
	for _, scope := range scopes {
		if scope != config.Serve {
			continue
		}
		if path := cmd.String("config"); path != "" {
			var err error
			if cfg, err = config.Load(path); err != nil {
				return cfg, err
			}
		}
	}
	for _, scope := range scopes {
		for _, s := range config.SettingsOf(scope) {
			if !cmd.IsSet(s.Flag) {
				continue
			}
			switch v := s.Field(&cfg).(type) {
			case *string:
				*v = cmd.String(s.Flag)
			case *bool:
				*v = cmd.Bool(s.Flag)
			case *int:
				*v = cmd.Int(s.Flag)
			case *int64:
				*v = cmd.Int64(s.Flag)
			case *time.Duration:
				*v = cmd.Duration(s.Flag)
			case *[]string:
				*v = cmd.StringSlice(s.Flag)
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	return cfg, nil
}
