package parley

import (
	"errors"
	"fmt"
)

// Error codes. Each maps to one extensions.code in the API.
const (
	ECONFLICT      = "conflict"       // the request contradicts the stored state
	EINTERNAL      = "internal"       // a fault of ours; details are logged, not shown
	EINVALID       = "invalid"        // the input breaks a rule; the message says which
	ENOTFOUND      = "not_found"      // no such thing (or not visible to the caller)
	EUNAUTHORIZED  = "unauthorized"   // no valid credentials
	EFORBIDDEN     = "forbidden"      // valid credentials, action not allowed
	EUNAVAILABLE   = "unavailable"    // a dependency is down; retrying later can help
	ERESOURCELIMIT = "resource_limit" // a configured limit was exceeded

	// Limits on what one request may store or process, each with its own code so that
	// a client can tell which it hit (and that trying again will not help).
	EMESSAGETOOLARGE   = "message_too_large"        // a message's text is over MaxMessageTextBytes
	ETOOMANYTOOLCALLS  = "too_many_tool_calls"      // a tool request has over MaxToolCallsPerMessage calls
	EARGUMENTSTOOLARGE = "tool_arguments_too_large" // a tool call's arguments are over MaxToolArgumentsBytes
	EIMAGETOOLARGE     = "image_too_large"          // an image has more pixels than allowed
	// ETRANSCRIPTTOOLARGE refuses a transcript whose history holds more stored bytes
	// than the server's transcript limit (DefaultMaxTranscriptBytes unless configured).
	ETRANSCRIPTTOOLARGE = "transcript_too_large"
	// ENODESTOOLARGE refuses nodes(ids:) whose messages hold more stored bytes than
	// what is left of the response's page byte budget.
	ENODESTOOLARGE = "nodes_too_large"

	// ECLAIMED refuses a tool result for a call another worker holds a live claim on.
	ECLAIMED = "tool_call_claimed"
)

// Error is an error meant for the user: a code and a message that says what to fix.
// Errors without this type are internal and their text never reaches a client.
type Error struct {
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("parley error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code string, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err's *Error, EINTERNAL for any other non-nil error,
// and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of err: its *Error's message, or a
// generic text for internal errors.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}
