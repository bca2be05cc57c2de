package db

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/parley-dev/parley"
)

// An import's search vectors are a good part of what its transaction's backend does
// (1.4 s of its 5.0 s for the bench's 100,000 messages: docs/performance.md, the
// import's rounds), and that backend is the import's bound: one core, while the machine
// has more. So from its second batch on, an import has a batch's vectors computed on a
// second connection of the pool, outside its transaction, while the transaction's
// backend stores the batch before it; the vectors then come in the staging COPY, and
// the insert only reads them. The second connection runs the insert's own function
// (message_search_vectors) with the same configuration (search_config), so the vectors
// are those the insert, and the trigger, would compute (interop's
// TestImportedVectorsAreTheTriggers). It reads nothing of the transaction: everything
// it needs is sent with the query. It costs CPU in all (the text sent twice, the
// vectors printed and parsed again): it pays while a core has room for it.

// vectorsReserveWait is how long an import waits for the pool to lend it a second
// connection. A pool of one connection (the transaction holds it) or a pool busy with
// other requests does not lend one in time: the import then computes its vectors in
// the insert, as for its first batch, rather than wait for one or hold another request up.
const vectorsReserveWait = 50 * time.Millisecond

// searchVectorsSQL computes the search vectors of a batch's messages sent as arrays,
// one row each, numbered as sent.
const searchVectorsSQL = `SELECT s.n, v::text
	FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::jsonb[], $5::jsonb[]) WITH ORDINALITY
		AS s(kind, content, payload, tool_calls, tool_results, n)
	CROSS JOIN (SELECT config FROM search_config LIMIT 1) k
	CROSS JOIN LATERAL message_search_vectors(k.config, s.kind, s.content, s.payload, s.tool_calls, s.tool_results) v`

// vectorConn is the second connection an import computes its vectors on, reserved at
// its second batch and held until it ends.
type vectorConn struct {
	pool     *sqlx.DB
	conn     *sqlx.Conn
	reserved bool // a reservation was tried: conn is nil when none was lent
	// ctx is the import's, for the connection's queries; release cancels it (stop).
	ctx  context.Context
	stop context.CancelFunc
	// last is the batch whose vectors were asked for last: the next batch's query waits
	// for it, the connection running one at a time.
	last *batchVectors
	// q is the query being written, of the batch whose vectors are being computed.
	q vectorsQuery
}

// reserve asks the pool for the connection once; it reports whether there is one.
func (v *vectorConn) reserve(ctx context.Context) bool {
	if !v.reserved {
		v.reserved = true
		wait, cancel := context.WithTimeout(ctx, vectorsReserveWait)
		conn, err := v.pool.Connx(wait)
		cancel()
		if err == nil {
			v.conn = conn
			v.ctx, v.stop = context.WithCancel(ctx)
		}
	}
	return v.conn != nil
}

// release gives the connection back to the pool once no query of the import runs on
// it. An import that ends early (an error, a cancellation) may still be computing the
// vectors of a batch it will never store: those are cancelled and waited for, so that
// the connection goes back between queries and the goroutines computing them never see
// it released (the last batch's ends after every one before it).
func (v *vectorConn) release() {
	if v.conn == nil {
		return
	}
	v.stop()
	if v.last != nil {
		<-v.last.done
	}
	v.conn.Close()
	v.conn = nil
}

// batchVectors are a batch's search vectors as text, by row, being computed.
type batchVectors struct {
	done    chan struct{}
	vectors []any // a row's vector, nil for a deleted message
	err     error
}

// compute starts computing the vectors of rows (messageCopyColumns' values) on the
// connection, on a goroutine of its own, once the last batch's are.
func (v *vectorConn) compute(rows [][]any) *batchVectors {
	bv := &batchVectors{done: make(chan struct{}), vectors: make([]any, len(rows))}
	last := v.last
	v.last = bv
	go func() {
		defer close(bv.done)
		if last != nil {
			<-last.done
		}
		bv.err = recovered("", func() error { return v.query(rows, bv.vectors) })
	}()
	return bv
}

// The columns of messageCopyColumns the vectors are computed from.
var (
	colKind        = copyColumn("kind")
	colContent     = copyColumn("content")
	colToolCalls   = copyColumn("tool_calls")
	colToolResults = copyColumn("tool_results")
	colPayload     = copyColumn("payload")
	colDeletedAt   = copyColumn("deleted_at")
)

// copyColumn is the place of column in messageCopyColumns, the rows' layout.
func copyColumn(column string) int {
	i := slices.Index(messageCopyColumns, column)
	if i < 0 {
		panic("db: messageCopyColumns has no " + column)
	}
	return i
}

// vectorsQueryBytes bounds the text sent with one query: the arrays it is sent as are
// copies of it, made twice over (lib/pq's encoding and its buffer). A batch of large
// messages (flushBytes, 16 MiB) sent whole took the peak memory of a 200 MB import
// (cmd/parley's TestImportLargeSessionBoundedMemory) from main's 174 MiB to 389 MiB;
// sent 2 MiB at a time, 238 MiB; 256 KiB at a time, 214 MiB.
const vectorsQueryBytes = 256 << 10

// query fills vectors with those of rows that are not deleted (a deleted message has no
// vector, as the trigger would give it), with as many queries as vectorsQueryBytes
// takes.
func (v *vectorConn) query(rows [][]any, vectors []any) error {
	q := &v.q
	q.reset() // what a failed query left
	for i, r := range rows {
		if r[colDeletedAt] != nil {
			continue
		}
		q.add(i, r)
		if q.bytes >= vectorsQueryBytes {
			if err := q.send(v, vectors); err != nil {
				return err
			}
		}
	}
	return q.send(v, vectors)
}

// vectorsQuery is the messages of a query of searchVectorsSQL, and where their vectors go.
// Its five arrays are written as Postgres's array text as the messages are added (as
// lib/pq's pq.Array writes them: every element quoted, NULL for a missing one), rather
// than kept as slices for pq.Array, which copied each element once more and read the
// nullable ones by reflection.
type vectorsQuery struct {
	kinds, contents, payloads, calls, results []byte
	index                                     []int // the rows' places in the batch
	bytes                                     int
}

// add adds the row r, the batch's i-th.
func (q *vectorsQuery) add(i int, r []any) {
	kind, _ := r[colKind].(string)
	content, payload := r[colContent].(string), vectorPayload(kind, r[colPayload].(string))
	q.index = append(q.index, i)
	q.kinds = appendArrayElement(q.kinds, kind, true)
	q.contents = appendArrayElement(q.contents, content, true)
	q.payloads = appendArrayElement(q.payloads, payload, true)
	calls, callsOK := r[colToolCalls].(string)
	results, resultsOK := r[colToolResults].(string)
	q.calls = appendArrayElement(q.calls, calls, callsOK)
	q.results = appendArrayElement(q.results, results, resultsOK)
	q.bytes += len(content) + len(payload) + len(calls) + len(results)
}

// appendArrayElement appends s (NULL unless valid) to the elements of an array's text
// in a, as lib/pq's pq.Array does: quoted, with its double quotes and backslashes
// escaped.
func appendArrayElement(a []byte, s string, valid bool) []byte {
	if len(a) == 0 {
		a = append(a, '{')
	} else {
		a = append(a, ',')
	}
	if !valid {
		return append(a, "NULL"...)
	}
	a = append(a, '"')
	for {
		i := strings.IndexAny(s, `"\`)
		if i < 0 {
			break
		}
		a = append(a, s[:i]...)
		a = append(a, '\\', s[i])
		s = s[i+1:]
	}
	a = append(a, s...)
	return append(a, '"')
}

// array is the text of the array whose elements appendArrayElement appended to a, in
// a's room: a query's parameter as bytes, which lib/pq sends as they are (a string it
// copies), so that a query's text is not copied twice more (170 MB an import of the
// bench's session). It is the query's until a is appended to again (reset).
func array(a []byte) []byte {
	if len(a) == 0 {
		return []byte("{}")
	}
	return append(a, '}')
}

// send runs the query on v's connection, puts the vectors in their rows' places, and
// empties q.
func (q *vectorsQuery) send(v *vectorConn, vectors []any) error {
	if len(q.index) == 0 {
		return nil
	}
	got, err := v.conn.QueryContext(v.ctx, searchVectorsSQL, array(q.kinds), array(q.contents), array(q.payloads),
		array(q.calls), array(q.results))
	if err != nil {
		return err
	}
	defer got.Close()
	n := 0
	var at int // outside the loop: Scan's pointers made each a row's allocation
	var vec string
	for got.Next() {
		if err := got.Scan(&at, &vec); err != nil {
			return err
		}
		if at < 1 || at > len(q.index) {
			return fmt.Errorf("a vector for message %d of %d", at, len(q.index))
		}
		vectors[q.index[at-1]] = vec
		n++
	}
	if err := got.Err(); err != nil {
		return err
	}
	if n != len(q.index) {
		return fmt.Errorf("%d vectors for %d messages", n, len(q.index))
	}
	q.reset()
	return nil
}

// reset empties q, keeping its arrays' room for the next query: grown anew for each
// one, they were the import's largest garbage (a tenth of its allocated bytes).
func (q *vectorsQuery) reset() {
	*q = vectorsQuery{kinds: q.kinds[:0], contents: q.contents[:0], payloads: q.payloads[:0], calls: q.calls[:0],
		results: q.results[:0], index: q.index[:0]}
}

// wait returns the vectors once computed.
func (bv *batchVectors) wait() ([]any, error) {
	<-bv.done
	if bv.err != nil {
		return nil, fmt.Errorf("compute search vectors on a second connection: %w", bv.err)
	}
	return bv.vectors, nil
}

// thinkingKind is how a thinking part's kind is written in a payload (encoding/json
// escapes none of its letters).
var thinkingKind = `"` + string(parley.PartThinking) + `"`

// vectorPayload is payload as message_search_vectors needs it. For a text message, a
// tool request or a tool result, whose payload Parley encodes (encodeMessage) and from
// which the vector takes only thinking parts: {}, which gives the same vector, when
// the payload has no thinking part, for a payload repeats its message's content, part
// by part, and would be half of the text sent. Whole for every other kind.
func vectorPayload(kind, payload string) string {
	switch parley.MessageKind(kind) {
	case parley.KindText, parley.KindToolRequest, parley.KindToolResult:
		if !strings.Contains(payload, thinkingKind) {
			return "{}"
		}
	}
	return payload
}
