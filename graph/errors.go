package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/graph/transport"
)

// extensionCodes maps the domain's error codes to the API's extensions.code.
var extensionCodes = map[string]string{
	parley.EINVALID:       "BAD_USER_INPUT",
	parley.ENOTFOUND:      "NOT_FOUND",
	parley.ECONFLICT:      "CONFLICT",
	parley.EUNAUTHORIZED:  "UNAUTHENTICATED",
	parley.EFORBIDDEN:     "FORBIDDEN",
	parley.EUNAVAILABLE:   "SERVICE_UNAVAILABLE",
	parley.ERESOURCELIMIT: "LIMIT_EXCEEDED",
	parley.EINTERNAL:      "INTERNAL_SERVER_ERROR",

	parley.EMESSAGETOOLARGE:    "MESSAGE_TOO_LARGE",
	parley.ETOOMANYTOOLCALLS:   "TOO_MANY_TOOL_CALLS",
	parley.EARGUMENTSTOOLARGE:  "TOOL_ARGUMENTS_TOO_LARGE",
	parley.EIMAGETOOLARGE:      "IMAGE_TOO_LARGE",
	parley.ETRANSCRIPTTOOLARGE: "TRANSCRIPT_TOO_LARGE",
	parley.ENODESTOOLARGE:      "NODES_TOO_LARGE",
	parley.ECLAIMED:            "TOOL_CALL_CLAIMED",
	parley.ESEARCHQUERYEMPTY:   "SEARCH_QUERY_EMPTY",
	parley.ESEARCHQUERYTOOLONG: "SEARCH_QUERY_TOO_LONG",
}

// ExtensionCode is the API's extensions.code of a domain error code: the one mapping,
// shared by the endpoints beside GraphQL (POST /api/import). An unknown code is
// INTERNAL_SERVER_ERROR.
func ExtensionCode(code string) string {
	if c, ok := extensionCodes[code]; ok {
		return c
	}
	return "INTERNAL_SERVER_ERROR"
}

// errorPresenter is the one place errors become what a client sees. Domain errors keep
// their message and get their code; errors gqlgen made itself (parsing, validation,
// argument coercion) are about the request and are shown; anything else is internal:
// logged with the request id, shown as a generic message.
func errorPresenter(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		gqlErr := graphql.DefaultErrorPresenter(ctx, err)
		if gqlErr.Extensions == nil {
			gqlErr.Extensions = map[string]any{}
		}
		if id := transport.RequestID(ctx); id != "" {
			gqlErr.Extensions["requestId"] = id
		}
		var perr *parley.Error
		switch {
		case errors.As(err, &perr) && perr.Code != parley.EINTERNAL:
			gqlErr.Message = perr.Message
			gqlErr.Extensions["code"] = extensionCodes[perr.Code]
			if perr.Code == parley.EUNAVAILABLE {
				gqlErr.Extensions["retryable"] = true
			}
			return gqlErr
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			gqlErr.Message = "The request was cancelled or timed out."
			gqlErr.Extensions["code"] = "REQUEST_CANCELLED"
			return gqlErr
		case isRequestError(err):
			// gqlgen's own verdict on the request: syntax, validation, argument coercion.
			if _, ok := gqlErr.Extensions["code"]; !ok {
				gqlErr.Extensions["code"] = "BAD_USER_INPUT"
			}
			return gqlErr
		}
		log.ErrorContext(ctx, "internal error", "err", err, "path", gqlErr.Path.String(), "requestId", transport.RequestID(ctx))
		gqlErr.Message = "Internal server error."
		gqlErr.Extensions["code"] = "INTERNAL_SERVER_ERROR"
		return gqlErr
	}
}

// isRequestError reports whether err is gqlgen's own error about the request, a
// *gqlerror.Error that wraps no other error. gqlgen wraps every error a resolver returns
// in a *gqlerror.Error too (graphql.ErrorOnPath), keeping it as Err: such an error is
// internal unless it is a *parley.Error, and its text (a driver's message, a table
// name) must not reach the client.
func isRequestError(err error) bool {
	gqlErr, ok := err.(*gqlerror.Error)
	for ok && gqlErr.Err != nil {
		gqlErr, ok = gqlErr.Err.(*gqlerror.Error)
	}
	return ok
}

// recoverFunc turns a panic in a resolver into an internal error, logged with its value.
func recoverFunc(log *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, v any) error {
		log.ErrorContext(ctx, "panic in resolver", "panic", v, "requestId", transport.RequestID(ctx))
		return fmt.Errorf("panic: %v", v)
	}
}
