package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/lib/pq"

	"github.com/parley-dev/parley"
)

// TestClassify covers every shape a lost or refused database connection takes in
// lib/pq and database/sql (each seen while Postgres stopped, restarted or was
// unreachable), and the SQLSTATE classes that have a meaning for the user.
func TestClassify(t *testing.T) {
	t.Parallel()
	dialErr := &net.OpError{Op: "dial", Net: "unix", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ENOENT}}
	tests := []struct {
		name string
		err  error
		code string // "" for an error passed through unchanged
	}{
		{"shutting down (57P03)", &pq.Error{Code: "57P03", Message: "the database system is shutting down"}, parley.EUNAVAILABLE},
		{"starting up (57P03)", &pq.Error{Code: "57P03", Message: "the database system is starting up"}, parley.EUNAVAILABLE},
		{"terminated by administrator (57P01)", &pq.Error{Code: "57P01"}, parley.EUNAVAILABLE},
		{"connection failure (08006)", &pq.Error{Code: "08006"}, parley.EUNAVAILABLE},
		{"too many connections (53300)", &pq.Error{Code: "53300"}, parley.EUNAVAILABLE},
		{"serialization failure (40001)", &pq.Error{Code: "40001"}, parley.EUNAVAILABLE},
		{"jsonb too deep (54001)", &pq.Error{Code: "54001", Message: "stack depth limit exceeded"}, parley.ERESOURCELIMIT},
		{"bad value (22P02)", &pq.Error{Code: "22P02"}, parley.EINVALID},
		{"bad connection", driver.ErrBadConn, parley.EUNAVAILABLE},
		{"bad connection, wrapped", fmt.Errorf("add message: %w", driver.ErrBadConn), parley.EUNAVAILABLE},
		{"no socket file", dialErr, parley.EUNAVAILABLE},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}, parley.EUNAVAILABLE},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}, parley.EUNAVAILABLE},
		{"connect timeout", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, parley.EUNAVAILABLE},
		{"unexpected EOF", fmt.Errorf("read head: %w", io.ErrUnexpectedEOF), parley.EUNAVAILABLE},
		{"EOF", io.EOF, parley.EUNAVAILABLE},
		{"connection done", sql.ErrConnDone, parley.EUNAVAILABLE},
		{"cancelled", context.Canceled, ""},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), ""},
		{"unique violation (23505)", &pq.Error{Code: "23505"}, ""},
		{"anything else", errors.New("boom"), ""},
	}
	for _, err := range []error{&pq.Error{Code: "57014"}, fmt.Errorf("x: %w", &pq.Error{Code: "57014"})} {
		if got := classify(err); !errors.Is(got, context.Canceled) || !errors.Is(got, err) {
			t.Errorf("query cancelled (57014): got %v, want context.Canceled wrapping %v", got, err)
		}
	}
	// Postgres's own text stays out of what a client sees, and in the wrapped error.
	for _, pe := range []*pq.Error{
		{Code: "54001", Message: "stack depth limit exceeded", Detail: "secret_table"},
		{Code: "22P05", Message: "unsupported Unicode escape sequence", Detail: "secret_table"},
		{Code: "22999", Message: "some data exception", Detail: "secret_table"},
		{Code: "40001", Message: "could not serialize access"},
	} {
		got := classify(fmt.Errorf("insert message: %w", pe))
		msg := parley.ErrorMessage(got)
		if parley.ErrorCode(got) == parley.EINTERNAL || strings.Contains(msg, pe.Message) || strings.Contains(msg, "secret") {
			t.Errorf("%s: got %q (%s), want a classified message without the driver's text", pe.Code, msg, parley.ErrorCode(got))
		}
		var wrapped *pq.Error
		if !errors.As(got, &wrapped) || wrapped != pe {
			t.Errorf("%s: got %v, want the driver error wrapped, for the log", pe.Code, got)
		}
	}
	for _, tt := range []struct {
		code pq.ErrorCode
		want string
	}{
		{"54001", "a value is too deeply nested to be stored"},
		{"54000", "a value is too large to be stored"},
		{"22P05", "a value could not be stored: a text holds a character Postgres cannot store (such as \\u0000)"},
		{"22021", "a value could not be stored: a text holds a byte sequence that is not valid UTF-8"},
		{"22999", "a value could not be stored: it is not valid for its column"},
	} {
		if got := parley.ErrorMessage(classify(&pq.Error{Code: tt.code, Message: "driver text"})); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.code, got, tt.want)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.err)
			if tt.code == "" {
				if got != tt.err {
					t.Errorf("got %v, want %v unchanged", got, tt.err)
				}
				return
			}
			if code := parley.ErrorCode(got); code != tt.code {
				t.Errorf("code: got %s, want %s (%v)", code, tt.code, got)
			}
		})
	}
}
