package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/interop"
)

// stdin is what `parley import ... -` reads; tests replace it.
var stdin io.Reader = os.Stdin

func importCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "import a history from another tool (FILE, or - for standard input) and print the import report",
		ArgsUsage: "FILE|-",
		Description: "Formats: CLAUDE_CODE_JSONL (a Claude Code session, ~/.claude/projects/<project>/<session>.jsonl),\n" +
			"OPENAI_CHAT (a Chat Completions messages array), OPENAI_RESPONSES (a Responses input array),\n" +
			"ANTHROPIC_MESSAGES ({system, messages}), " +
			"PARLEY_JSON (parley export --format PARLEY_JSON). The report starts with the conversation's id.\n" +
			"Importing the same history into the same conversation again adds only what is new.",
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Required: true, Usage: "CLAUDE_CODE_JSONL, OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES or PARLEY_JSON"},
			&cli.StringFlag{Name: "conversation", Aliases: []string{"c"}, Usage: "import into this conversation (its id) instead of a new one"},
			&cli.StringFlag{Name: "title", Aliases: []string{"t"}, Usage: "title of the new conversation (default: the source's title, else its first prompt)"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON, in the API's field names (importConversation's ImportReport)"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			format, err := parley.ParseImportFormat(cmd.String("format"))
			if err != nil {
				return userError(err)
			}
			if cmd.Args().Len() != 1 {
				return fmt.Errorf("give one FILE to import, or - for standard input")
			}
			if cmd.String("conversation") != "" && cmd.String("title") != "" {
				return fmt.Errorf("give --conversation or --title, not both")
			}
			var in io.Reader = stdin
			size, name := int64(-1), "standard input"
			if path := cmd.Args().First(); path != "-" {
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				defer f.Close()
				in, name = f, filepath.Base(path)
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					size = fi.Size()
				}
			}
			prog := newProgress(stderr, size, "importing "+name, unitBytes, cmd.Bool("json"))
			in = io.TeeReader(in, prog)
			target := parley.ImportTarget{ConversationID: cmd.String("conversation"), Title: cmd.String("title")}
			c, cfg, err := clientOf(cmd)
			if err != nil {
				return err
			}
			if c != nil {
				if _, err := c.checkOwner(ctx, cfg.Process.Owner, cmd.IsSet("owner")); err != nil {
					return err
				}
				rep, err := c.importHistory(ctx, format, target, in, size)
				prog.Finish()
				if err != nil {
					return err
				}
				if cmd.Bool("json") {
					return writeJSON(stdout, rep)
				}
				printImportReport(stdout, importReport(rep))
				return nil
			}
			return withStore(ctx, cmd, stderr, func(cfg config.Config, store *db.DB) error {
				ctx, err := withOwner(ctx, cfg)
				if err != nil {
					return err
				}
				rep, err := interop.New(store, store, store).ImportConversation(ctx, format, in, target)
				prog.Finish()
				if err != nil {
					return userError(err)
				}
				if cmd.Bool("json") {
					return writeJSON(stdout, importReportView(rep, ownerName(ctx)))
				}
				printImportReport(stdout, rep)
				return nil
			}, config.Owner)
		},
	}
}

// userError shows a domain error as its message, without the error type's framing.
func userError(err error) error {
	if code := parley.ErrorCode(err); code != "" && code != parley.EINTERNAL {
		return fmt.Errorf("%s", parley.ErrorMessage(err))
	}
	return err
}

func printImportReport(w io.Writer, r *parley.ImportReport) {
	fmt.Fprintln(w, r.Conversation.ID)
	how := "into"
	if r.Created {
		how = "as a new conversation,"
	}
	fmt.Fprintf(w, "Imported %s %q (%d messages now)\n", how, r.Conversation.Title, r.Conversation.MessageCount)
	var parts []string
	for _, v := range r.AddedByVariant {
		parts = append(parts, fmt.Sprintf("%d %s", v.Count, v.Variant))
	}
	fmt.Fprintf(w, "Added %d messages", r.Added)
	if len(parts) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	if r.AlreadyPresent > 0 {
		fmt.Fprintf(w, "Already present from an earlier import: %d\n", r.AlreadyPresent)
	}
	if len(r.Skipped) > 0 {
		total := 0
		for _, s := range r.Skipped {
			total += s.Count
		}
		fmt.Fprintf(w, "Skipped %d records:\n", total)
		for _, s := range r.Skipped {
			where := strings.Join(s.Where, ", ")
			if s.Count > len(s.Where) {
				where += ", ..."
			}
			fmt.Fprintf(w, "  %5d  %s (%s)\n", s.Count, s.Reason, where)
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w, "Warnings:")
		for _, warning := range r.Warnings {
			fmt.Fprintf(w, "  %s\n", warning)
		}
	}
	if r.SystemPrompt != nil {
		fmt.Fprintf(w, "System prompt (%d characters) not stored: pass it to parley export --system\n", len([]rune(*r.SystemPrompt)))
	}
}
