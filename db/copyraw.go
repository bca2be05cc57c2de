package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// An import's COPY sent through database/sql paid, for each row, database/sql's
// statement machinery (a lock, its arguments checked and converted, copied into a new
// slice twice: 110 MB of the bench's import's garbage) before lib/pq wrote the row's
// text. rawCopyIn writes that text itself, the same bytes as lib/pq's (its
// appendEncodedText: TestCopyRowIsPQs), and hands each line to lib/pq's COPY statement
// whole (its CopyData), on the transaction's own connection, reached through
// sql.Conn.Raw. The transaction holds that connection (txn.conn) and uses it for
// nothing else meanwhile: what is sent behind (sendBehind) runs alone.

// copyDataStmt is lib/pq's COPY statement's method for a line of COPY text.
type copyDataStmt interface {
	CopyData(ctx context.Context, line string) (driver.Result, error)
}

// rawCopyIn copies rows into table's columns on conn, as copyIn does through
// database/sql. Rows' values are those database/sql would hand the driver as they are:
// string, int64, bool, time.Time or nil.
func rawCopyIn(ctx context.Context, conn *sqlx.Conn, table string, columns []string, rows [][]any) error {
	err := conn.Raw(func(dc any) (err error) {
		// Neither a panic nor driver.ErrBadConn may leave this function: Raw would then
		// close conn, waiting for the transaction that holds it to end, which waits for
		// this. The transaction's rollback finds the connection bad all the same.
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("copy into %s: panic: %v", table, r)
			}
			if errors.Is(err, driver.ErrBadConn) {
				err = fmt.Errorf("copy into %s: %v", table, err)
			}
		}()
		prep, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return fmt.Errorf("copy into %s: the driver's connection (%T) prepares no statement", table, dc)
		}
		st, err := prep.PrepareContext(ctx, pq.CopyIn(table, columns...))
		if err != nil {
			return err
		}
		defer st.Close()
		cd, ok := st.(copyDataStmt)
		if !ok {
			return fmt.Errorf("copy into %s: the driver's statement (%T) takes no COPY data", table, st)
		}
		var line []byte
		var times copyTimes
		for i, r := range rows {
			// Checked every so often, as database/sql checked it for each row: lib/pq
			// watches a context's end on a goroutine of its own each time it is given one.
			if i%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			if line, err = appendCopyRow(line[:0], r, &times); err != nil {
				return fmt.Errorf("copy into %s: %w", table, err)
			}
			// CopyData copies the line before it returns: a string over line's bytes,
			// written again for the next row only then, costs no copy of its own.
			if _, err := cd.CopyData(context.Background(), unsafe.String(unsafe.SliceData(line), len(line))); err != nil {
				return err
			}
		}
		_, err = st.Exec(nil) // the end of the COPY, and its result
		return err
	})
	return err
}

// appendCopyRow appends r as a line of COPY text (without its newline), as lib/pq's
// copyin.Exec writes it: the values separated by tabs, each as appendEncodedText
// writes it. times holds the text of the times of the rows before.
func appendCopyRow(line []byte, r []any, times *copyTimes) ([]byte, error) {
	for i, v := range r {
		if i > 0 {
			line = append(line, '\t')
		}
		switch v := v.(type) {
		case string:
			line = appendCopyText(line, v)
		case int64:
			line = strconv.AppendInt(line, v, 10)
		case bool:
			line = strconv.AppendBool(line, v)
		case time.Time:
			line = append(line, times.format(i, v)...)
		case nil:
			line = append(line, `\N`...)
		default:
			return line, fmt.Errorf("a value of type %T in a row", v)
		}
	}
	return line, nil
}

// copyTimes is the COPY text of the last time written in each column: an import's rows
// share their updated_at (the import's time), and often their created_at, and
// pq.FormatTimestamp makes two allocations a time it writes.
type copyTimes struct {
	at   []time.Time
	text [][]byte
}

// format is pq.FormatTimestamp(t), t being column's.
func (c *copyTimes) format(column int, t time.Time) []byte {
	if column >= len(c.at) {
		c.at = append(c.at, make([]time.Time, column+1-len(c.at))...)
		c.text = append(c.text, make([][]byte, column+1-len(c.text))...)
	}
	// The same instant in the same location (==, not Equal) is written the same.
	if c.text[column] == nil || c.at[column] != t {
		c.at[column], c.text[column] = t, pq.FormatTimestamp(t)
	}
	return c.text[column]
}

// appendCopyText appends s as COPY text, as lib/pq's appendEscapedText does: its
// backslashes, newlines, carriage returns and tabs escaped, a run of other bytes copied
// at a time (lib/pq appends byte by byte once a line has one to escape).
func appendCopyText(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		if esc := copyEscapes[s[i]]; esc != 0 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', esc)
			start = i + 1
		}
	}
	return append(dst, s[start:]...)
}

// copyEscapes is, for each byte COPY text escapes, the letter after its backslash.
var copyEscapes = [256]byte{'\\': '\\', '\n': 'n', '\r': 'r', '\t': 't'}
