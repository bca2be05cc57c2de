package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
)

// authFlags are serve's authentication and limit flags; each overrides its key of the
// configuration file.
func authFlags() []cli.Flag {
	intFlag := func(name, key, env, usage string) cli.Flag {
		return &cli.IntFlag{Name: name, Usage: usage + " (overrides " + key + ")", Sources: cli.EnvVars(env)}
	}
	return []cli.Flag{
		&cli.BoolFlag{Name: "auth-tokens", Usage: "accept API tokens made with parley token create (auth.tokens)", Sources: cli.EnvVars("PARLEY_AUTH_TOKENS")},
		&cli.StringFlag{Name: "jwt-secret", Usage: "verify HS256 JWTs with this secret, at least 32 bytes (auth.jwt_secret; prefer the variable)", Sources: cli.EnvVars("PARLEY_JWT_SECRET")},
		&cli.StringFlag{Name: "jwks-file", Usage: "verify JWTs with the public keys of this JSON Web Key Set file (auth.jwks_file)", Sources: cli.EnvVars("PARLEY_JWKS_FILE")},
		&cli.StringFlag{Name: "jwt-issuer", Usage: "require this iss in JWTs (auth.issuer)", Sources: cli.EnvVars("PARLEY_JWT_ISSUER")},
		&cli.StringFlag{Name: "jwt-audience", Usage: "require this aud in JWTs (auth.audience)", Sources: cli.EnvVars("PARLEY_JWT_AUDIENCE")},
		intFlag("max-depth", "limits.max_depth", "PARLEY_MAX_DEPTH", "how deeply an operation's fields may nest"),
		intFlag("max-aliases", "limits.max_aliases", "PARLEY_MAX_ALIASES", "how many aliases an operation may have"),
		intFlag("max-complexity", "limits.max_complexity", "PARLEY_MAX_COMPLEXITY", "an operation's largest cost, lists weighted by their page size"),
		intFlag("max-page-size", "limits.max_page_size", "PARLEY_MAX_PAGE_SIZE", "the largest first, last or ids (at most 1000)"),
		intFlag("max-tokens", "limits.max_tokens", "PARLEY_MAX_TOKENS", "the most tokens a query document may have"),
		intFlag("max-body-bytes", "limits.max_body_bytes", "PARLEY_MAX_BODY_BYTES", "the largest request body"),
		intFlag("max-websocket-message-bytes", "limits.max_websocket_message_bytes", "PARLEY_MAX_WEBSOCKET_MESSAGE_BYTES", "the largest message a client may send over a websocket"),
		intFlag("max-subscriptions-per-connection", "limits.max_subscriptions_per_connection", "PARLEY_MAX_SUBSCRIPTIONS_PER_CONNECTION", "how many subscriptions one websocket may have open"),
		&cli.StringSliceFlag{Name: "websocket-origin", Usage: "an origin pattern allowed to open websockets besides the server's own, e.g. *.example.com; repeatable (http.websocket_origins)", Sources: cli.EnvVars("PARLEY_WEBSOCKET_ORIGINS")},
		&cli.StringSliceFlag{Name: "trusted-origin", Usage: "an origin whose pages may POST cross-origin, e.g. https://app.example.com; repeatable (http.trusted_origins)", Sources: cli.EnvVars("PARLEY_TRUSTED_ORIGINS")},
	}
}

// applyAuthFlags lays the flags that were given over the configuration, and validates
// the result.
func applyAuthFlags(cmd *cli.Command, cfg *config.Config) error {
	if cmd.IsSet("auth-tokens") {
		cfg.Auth.Tokens = cmd.Bool("auth-tokens")
	}
	for flag, dst := range map[string]*string{
		"jwt-secret": &cfg.Auth.JWTSecret, "jwks-file": &cfg.Auth.JWKSFile,
		"jwt-issuer": &cfg.Auth.Issuer, "jwt-audience": &cfg.Auth.Audience,
	} {
		if cmd.IsSet(flag) {
			*dst = cmd.String(flag)
		}
	}
	for flag, dst := range map[string]*int{
		"max-depth": &cfg.Limits.MaxDepth, "max-aliases": &cfg.Limits.MaxAliases,
		"max-complexity": &cfg.Limits.MaxComplexity, "max-page-size": &cfg.Limits.MaxPageSize,
		"max-tokens": &cfg.Limits.MaxTokens, "max-subscriptions-per-connection": &cfg.Limits.MaxSubscriptionsPerConnection,
	} {
		if cmd.IsSet(flag) {
			*dst = int(cmd.Int(flag))
		}
	}
	for flag, dst := range map[string]*int64{
		"max-body-bytes": &cfg.Limits.MaxBodyBytes, "max-websocket-message-bytes": &cfg.Limits.MaxWebsocketMessageBytes,
	} {
		if cmd.IsSet(flag) {
			*dst = int64(cmd.Int(flag))
		}
	}
	if cmd.IsSet("introspection") || cfg.HTTP.Introspection == nil {
		v := cmd.Bool("introspection")
		cfg.HTTP.Introspection = &v
	}
	if cmd.IsSet("websocket-origin") {
		cfg.HTTP.WebsocketOrigins = cmd.StringSlice("websocket-origin")
	}
	if cmd.IsSet("trusted-origin") {
		cfg.HTTP.TrustedOrigins = cmd.StringSlice("trusted-origin")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return nil
}

// ownerFlag selects whose conversations import and export act on.
func ownerFlag() cli.Flag {
	return &cli.StringFlag{Name: "owner", Value: parley.LocalOwner, Usage: "act on this owner's conversations (the local owner is the one a server without authentication serves)",
		Sources: cli.EnvVars("PARLEY_OWNER")}
}

// withOwner returns ctx acting for the --owner flag's owner.
func withOwner(ctx context.Context, cmd *cli.Command) (context.Context, error) {
	owner, err := parley.CleanOwner(cmd.String("owner"))
	if err != nil {
		return ctx, userError(err)
	}
	return parley.WithOwner(ctx, owner), nil
}

func tokenCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "create, list and revoke API tokens (serve accepts them with --auth-tokens)",
		Commands: []*cli.Command{
			{
				Name:  "create",
				Usage: "make a token for an owner and print it (once: only its hash is stored)",
				Flags: append(databaseFlags(),
					&cli.StringFlag{Name: "owner", Required: true, Usage: "the owner whose conversations the token sees"},
					&cli.StringFlag{Name: "name", Usage: "a label to recognize the token by"},
					&cli.DurationFlag{Name: "expires", Usage: "how long the token is valid, e.g. 720h (default: until revoked)"},
					&cli.BoolFlag{Name: "json", Usage: "print the token and its details as JSON"},
				),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					var expires *time.Time
					if cmd.IsSet("expires") {
						if cmd.Duration("expires") <= 0 {
							return fmt.Errorf("--expires: give a positive duration, e.g. 720h")
						}
						t := time.Now().Add(cmd.Duration("expires"))
						expires = &t
					}
					return withTokens(ctx, cmd, stderr, func(s parley.TokenService) error {
						tok, secret, err := s.CreateToken(ctx, cmd.String("owner"), cmd.String("name"), expires)
						if err != nil {
							return userError(err)
						}
						if cmd.Bool("json") {
							return printJSON(stdout, struct {
								Token string `json:"token"`
								*parley.APIToken
							}{secret, tok})
						}
						fmt.Fprintln(stdout, secret)
						fmt.Fprintf(stderr, "Token %s for owner %q%s. It is shown once: only its hash is stored.\n",
							tok.ID, tok.Owner, describeExpiry(tok.ExpiresAt))
						return nil
					})
				},
			},
			{
				Name:      "revoke",
				Usage:     "revoke a token, by its id (tok_...) or the token itself",
				ArgsUsage: "ID|TOKEN",
				Flags:     databaseFlags(),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() != 1 {
						return fmt.Errorf("give the id (tok_...) or the token to revoke")
					}
					return withTokens(ctx, cmd, stderr, func(s parley.TokenService) error {
						tok, err := s.RevokeToken(ctx, cmd.Args().First())
						if err != nil {
							return userError(err)
						}
						fmt.Fprintf(stdout, "Revoked %s (owner %q).\n", tok.ID, tok.Owner)
						return nil
					})
				},
			},
			{
				Name:  "list",
				Usage: "list tokens, newest first (never the tokens themselves)",
				Flags: append(databaseFlags(),
					&cli.StringFlag{Name: "owner", Usage: "only this owner's tokens"},
					&cli.BoolFlag{Name: "json", Usage: "print JSON"},
				),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return withTokens(ctx, cmd, stderr, func(s parley.TokenService) error {
						toks, err := s.FindTokens(ctx, cmd.String("owner"))
						if err != nil {
							return userError(err)
						}
						if cmd.Bool("json") {
							if toks == nil {
								toks = []*parley.APIToken{}
							}
							return printJSON(stdout, toks)
						}
						tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
						fmt.Fprintln(tw, "ID\tOWNER\tNAME\tCREATED\tLAST USED\tEXPIRES\tSTATUS")
						for _, t := range toks {
							fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Owner, t.Name, stamp(&t.CreatedAt),
								stamp(t.LastUsedAt), stamp(t.ExpiresAt), tokenStatus(t))
						}
						return tw.Flush()
					})
				},
			},
		},
	}
}

func tokenStatus(t *parley.APIToken) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked"
	case t.ExpiresAt != nil && !t.ExpiresAt.After(time.Now()):
		return "expired"
	}
	return "active"
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func describeExpiry(t *time.Time) string {
	if t == nil {
		return ", valid until revoked"
	}
	return ", valid until " + t.UTC().Format(time.RFC3339)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// withTokens migrates and opens the database the flags select and runs fn with its
// token store.
func withTokens(ctx context.Context, cmd *cli.Command, stderr io.Writer, fn func(parley.TokenService) error) error {
	log, err := logger(cmd, stderr)
	if err != nil {
		return err
	}
	dsn, release, err := openDatabase(ctx, cmd, log)
	if err != nil {
		return err
	}
	defer release()
	if err := db.Migrate(ctx, dsn); err != nil {
		return err
	}
	store, err := db.Open(ctx, dsn, db.Config{Logger: log, MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(store)
}

// logAuth says at start who the server will let in.
func logAuth(log *slog.Logger, cfg config.Config) {
	if !cfg.Auth.Configured() {
		log.Info("local mode: no authentication configured; every request acts as the local owner", "owner", parley.LocalOwner)
		return
	}
	log.Info("authentication", "apiTokens", cfg.Auth.Tokens, "jwtHS256", cfg.Auth.JWTSecret != "",
		"jwks", cfg.Auth.JWKSFile, "issuer", cfg.Auth.Issuer, "audience", cfg.Auth.Audience)
}
