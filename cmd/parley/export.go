package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/config"
	"github.com/parley-dev/parley/db"
	"github.com/parley-dev/parley/interop"
	"github.com/parley-dev/parley/recognize"
)

func exportCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write a conversation's history in a provider's shape, as Markdown or as Parley JSON",
		ArgsUsage: "CONVERSATION_ID",
		Description: "Formats: OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES (for an LLM to continue from),\n" +
			"MARKDOWN (for people), PARLEY_JSON (lossless; parley import reads it back).\n" +
			"The transcript goes to standard output; what was dropped, repaired or noted, to standard error.",
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Required: true, Usage: "OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES, MARKDOWN or PARLEY_JSON"},
			&cli.StringFlag{Name: "system", Usage: "system prompt to put first (used, never stored)"},
			&cli.IntFlag{Name: "max-tokens", Usage: "fit the history into this many tokens (estimated), dropping the oldest context first"},
			&cli.BoolFlag{Name: "repair", Usage: "close or drop tool calls without results and results without calls, instead of failing"},
			&cli.StringFlag{Name: "images", Usage: "AS_SENT (the default: as given, whether recognized or not), AS_TEXT (recognized ones as their text) or FOR_MODEL (as text unless --model sees images)"},
			&cli.StringFlag{Name: "model", Usage: "the model the transcript is for (--images FOR_MODEL)"},
			&cli.IntFlag{Name: "cache-breakpoints", Usage: "mark this many blocks (1 to 4) with Anthropic cache_control (ANTHROPIC_MESSAGES)"},
			&cli.StringFlag{Name: "after", Usage: "a message cursor (the report's end cursor): export only what follows it, without the system prompt"},
		),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			format, err := parley.ParseTranscriptFormat(cmd.String("format"))
			if err != nil {
				return userError(err)
			}
			if cmd.Args().Len() != 1 {
				return fmt.Errorf("give the id of the conversation to export")
			}
			opts := parley.TranscriptOptions{System: cmd.String("system"), Repair: cmd.Bool("repair"),
				Model: cmd.String("model"), CacheBreakpoints: cmd.Int("cache-breakpoints")}
			if cmd.IsSet("max-tokens") {
				n := cmd.Int("max-tokens")
				opts.MaxTokens = &n
			}
			if cmd.IsSet("images") {
				if opts.Images, err = parley.ParseImageExport(cmd.String("images")); err != nil {
					return userError(err)
				}
			}
			if cmd.IsSet("after") {
				pos, err := parley.ParseMessageCursor("after", cmd.String("after"))
				if err != nil {
					return userError(err)
				}
				opts.After = &pos
			}
			id := cmd.Args().First()
			c, cfg, err := clientOf(cmd)
			if err != nil {
				return err
			}
			if c != nil {
				if _, err := c.checkOwner(ctx, cfg.Process.Owner, cmd.IsSet("owner")); err != nil {
					return err
				}
				prog := newProgress(stderr, -1, "exporting "+id, unitBytes, false)
				t, err := c.transcript(ctx, id, format, opts, prog)
				prog.Finish()
				if err != nil {
					return err
				}
				if err := writeTranscript(stdout, format, t.Body); err != nil {
					return err
				}
				printTranscriptReport(stderr, &t.Report)
				return nil
			}
			return withStore(ctx, cmd, stderr, func(cfg config.Config, store *db.DB) error {
				ctx, err := withOwner(ctx, cfg)
				if err != nil {
					return err
				}
				conv, err := store.FindConversationByID(ctx, id)
				if err != nil {
					return userError(err)
				}
				prog := newProgress(stderr, int64(conv.MessageCount), "exporting "+id, unitMessages, false)
				// The command has no configuration file: the built-in table of vision models.
				svc := interop.New(store, store, countedMessages{store, prog}).WithVisionModels(func(model string) (bool, bool) {
					return recognize.SupportsVision(nil, model)
				})
				t, err := svc.Transcript(ctx, id, format, opts)
				prog.Finish()
				if err != nil {
					return userError(err)
				}
				if err := writeTranscript(stdout, format, t.Body); err != nil {
					return err
				}
				printTranscriptReport(stderr, &t.Report)
				return nil
			}, config.Owner)
		},
	}
}

// countedMessages feeds progress with the messages an export reads.
type countedMessages struct {
	parley.MessageService
	progress progress
}

func (m countedMessages) FindMessages(ctx context.Context, conv *parley.Conversation, page parley.PageRequest) (*parley.MessagePage, error) {
	p, err := m.MessageService.FindMessages(ctx, conv, page)
	if err == nil {
		m.progress.Add(len(p.Messages))
	}
	return p, err
}

func (m countedMessages) FindTreeMessages(ctx context.Context, conv *parley.Conversation, afterSeq, first, maxBytes int) (*parley.TreePage, error) {
	p, err := m.MessageService.FindTreeMessages(ctx, conv, afterSeq, first, maxBytes)
	if err == nil {
		m.progress.Add(len(p.Messages))
	}
	return p, err
}

// writeTranscript writes Markdown as text and JSON indented, each ending in a newline.
func writeTranscript(w io.Writer, format parley.TranscriptFormat, body parley.JSON) error {
	if format == parley.TranscriptMarkdown {
		var text string
		if err := json.Unmarshal(body, &text); err != nil {
			return err
		}
		_, err := io.WriteString(w, text)
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

func printTranscriptReport(w io.Writer, r *parley.TranscriptReport) {
	if r.Format.ForLLM() {
		fmt.Fprintf(w, "About %d tokens", r.EstimatedTokens)
		if r.MaxTokens != nil {
			fmt.Fprintf(w, " (budget %d)", *r.MaxTokens)
		}
		fmt.Fprintln(w, ", estimated: see the token counting rule in the docs.")
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(w, "Left out %s at position %d (%s): %s\n", d.Label, d.Position, d.MessageID, d.Reason)
	}
	for _, s := range r.Repairs {
		fmt.Fprintf(w, "Repaired: %s\n", s)
	}
	for _, s := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", s)
	}
	if r.CutPosition > 0 {
		fmt.Fprintf(w, "Cut at position %d.\n", r.CutPosition)
	}
	if c := r.EndCursor(); c != nil && r.Format.ForLLM() {
		fmt.Fprintf(w, "End cursor (export what follows with --after): %s\n", *c)
	}
}
