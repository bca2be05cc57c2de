package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
)

// tokenCommand creates, lists and revokes API tokens in the database.
func tokenCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "create, list and revoke API tokens (serve accepts them with --auth-tokens)",
		Commands: []*cli.Command{
			{
				Name:  "create",
				Usage: "make a token for an owner and print it (once: only its hash is stored)",
				Flags: append(flagsOf(config.Database),
					&cli.StringFlag{Name: "owner", Required: true, Usage: "the owner whose conversations the token sees"},
					&cli.StringFlag{Name: "name", Usage: "a label to recognize the token by"},
					&cli.DurationFlag{Name: "expires", Usage: "how long the token is valid, e.g. 720h (default: until revoked)"},
					&cli.BoolFlag{Name: "read-only", Usage: "the token may query and subscribe, never mutate (a read-only frontend, a share link)"},
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
					return withStore(ctx, cmd, stderr, func(_ config.Config, s *db.DB) error {
						tok, secret, err := s.CreateToken(ctx, cmd.String("owner"), cmd.String("name"), expires, cmd.Bool("read-only"))
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
						scope := ""
						if tok.ReadOnly {
							scope = ", read-only"
						}
						fmt.Fprintf(stderr, "Token %s for owner %q%s%s. It is shown once: only its hash is stored.\n",
							tok.ID, tok.Owner, scope, describeExpiry(tok.ExpiresAt))
						return nil
					})
				},
			},
			{
				Name:      "revoke",
				Usage:     "revoke a token, by its id (tok_...) or the token itself",
				ArgsUsage: "ID|TOKEN",
				Flags:     flagsOf(config.Database),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() != 1 {
						return fmt.Errorf("give the id (tok_...) or the token to revoke")
					}
					return withStore(ctx, cmd, stderr, func(_ config.Config, s *db.DB) error {
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
				Flags: append(flagsOf(config.Database),
					&cli.StringFlag{Name: "owner", Usage: "only this owner's tokens"},
					&cli.BoolFlag{Name: "json", Usage: "print JSON"},
				),
				Action: func(ctx context.Context, cmd *cli.Command) error {
					return withStore(ctx, cmd, stderr, func(_ config.Config, s *db.DB) error {
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
						fmt.Fprintln(tw, "ID\tOWNER\tNAME\tSCOPE\tCREATED\tLAST USED\tEXPIRES\tSTATUS")
						for _, t := range toks {
							scope := "read-write"
							if t.ReadOnly {
								scope = "read-only"
							}
							if t.ConversationID != "" {
								scope = "share link: " + t.ConversationID // reads that conversation only
							}
							fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Owner, t.Name, scope, stamp(&t.CreatedAt),
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
