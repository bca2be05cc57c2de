package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
)

func conversationsCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:    "conversations",
		Aliases: []string{"list"},
		Usage:   "list the owner's conversations, most recently updated first: id, title, owner, messages, updated",
		Flags: append(clientFlags(),
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Value: 0, Usage: "list at most this many (0: all)"},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array, in the API's field names (id, title, owner, messageCount, createdAt, updatedAt)"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return fmt.Errorf("conversations takes no arguments")
			}
			limit := cmd.Int("limit")
			if limit < 0 {
				return fmt.Errorf("--limit: %d is negative", limit)
			}
			c, cfg, err := clientOf(cmd)
			if err != nil {
				return err
			}
			if c != nil {
				owner, err := c.checkOwner(ctx, cfg.Process.Owner, cmd.IsSet("owner"))
				if err != nil {
					return err
				}
				list, err := c.conversations(ctx, owner, limit)
				if err != nil {
					return err
				}
				return printConversations(stdout, list, cmd.Bool("json"))
			}
			return withStore(ctx, cmd, stderr, func(cfg config.Config, store *db.DB) error {
				ctx, err := withOwner(ctx, cfg)
				if err != nil {
					return err
				}
				owner := ownerName(ctx)
				list := []conversationJSON{}
				size := parley.MaxPageSize
				page := parley.PageRequest{First: &size}
				for limit == 0 || len(list) < limit {
					p, err := store.FindConversations(ctx, page)
					if err != nil {
						return userError(err)
					}
					for _, c := range p.Conversations {
						if limit > 0 && len(list) == limit {
							break
						}
						list = append(list, conversationView(c, owner))
					}
					if !p.HasNextPage || len(p.Cursors) == 0 {
						break
					}
					after := p.Cursors[len(p.Cursors)-1]
					page.After = &after
				}
				return printConversations(stdout, list, cmd.Bool("json"))
			}, config.Owner)
		},
	}
}

// printConversations writes list as a table, or as JSON.
func printConversations(stdout io.Writer, list []conversationJSON, asJSON bool) error {
	if asJSON {
		return writeJSON(stdout, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tOWNER\tMESSAGES\tUPDATED")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", c.ID, oneLine(c.Title, 60), c.Owner, c.MessageCount, c.UpdatedAt.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

// oneLine fits a title into a column: whitespace runs (newlines, tabs) become one space,
// and it is cut at max characters.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
