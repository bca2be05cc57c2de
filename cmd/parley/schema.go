package main

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v3"

	"github.com/parley-dev/parley/graph"
)

// schemaCommand prints what client tooling needs from the schema: the whole SDL in one
// document, or the possibleTypes map of its interfaces and unions.
func schemaCommand(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "schema",
		Usage: "print the GraphQL schema as one SDL document (with @oneOf), or with --possible-types the possibleTypes map (JSON) for Apollo Client and urql",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "possible-types", Usage: "print the possibleTypes map of every interface and union as JSON instead"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return fmt.Errorf("schema takes no arguments, got %q", cmd.Args().First())
			}
			if cmd.Bool("possible-types") {
				_, err := stdout.Write(graph.PossibleTypesJSON())
				return err
			}
			_, err := io.WriteString(stdout, graph.SDL())
			return err
		},
	}
}
