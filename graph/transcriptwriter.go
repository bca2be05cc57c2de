package graph

import (
	"context"
	"io"

	"github.com/99designs/gqlgen/graphql"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/transport"
	"github.com/parley-dev/parley/internal/bufpool"
)

// placeTranscripts returns a field middleware (handler.Server.AroundFields) that hands
// a transcript's body over HTTP to the transport in the final form of the response's
// data (transport.Final), as the page writer does a page: gqlgen would copy the body,
// megabytes for a long conversation, into its response's buffer, growing it as it
// went, for the transport to scan it there and copy it again; now the body is scanned
// once (transport.IsFinal: the exporters escape strings as the final form does, so it
// is already in that form, or else it is copied into it) and the transport writes it as
// it is (transport.bigPiece). The bytes sent are the same.
func placeTranscripts() graphql.FieldMiddleware {
	return func(ctx context.Context, next graphql.Resolver) (any, error) {
		fc := graphql.GetFieldContext(ctx)
		if fc == nil || fc.Object != "Conversation" || fc.Field.Field == nil || fc.Field.Name != "transcript" {
			return next(ctx)
		}
		res, err := next(ctx)
		body, ok := res.(parley.JSON)
		final := transport.FinalOf(ctx)
		if err != nil || !ok || len(body) == 0 || final == nil {
			return res, err
		}
		piece := []byte(body)
		if !transport.IsFinal(body) {
			// The exporters escape as the final form does, so this is rare. The final
			// form is about as long as the body (< > & are escaped, six bytes for one).
			buf := bufpool.Get()
			if need := len(body) + len(body)/32 + 64; cap(buf) < need {
				bufpool.Put(buf)
				buf = make([]byte, 0, need)
			}
			if piece, ok = transport.AppendFinal(buf, body); !ok {
				bufpool.Put(buf)
				return res, err // not JSON: left to gqlgen and the transport, as before
			}
		}
		// The response puts the piece in the pool once written (Final.Place): the body
		// is this response's alone, made by the exporter for it.
		return graphql.WriterFunc(func(out io.Writer) {
			if piece == nil {
				panic("graph: a transcript was written twice")
			}
			final.Place(out, piece)
			piece = nil
		}), nil
	}
}
