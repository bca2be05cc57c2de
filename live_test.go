package parley_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/parley-dev/parley"
)

func TestCheckAppend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		status    parley.MessageStatus
		last, seq int
		dup       bool
		code, msg string
	}{
		{name: "next", status: parley.StatusStreaming, last: 4, seq: 5},
		{name: "first", status: parley.StatusStreaming, last: 0, seq: 1},
		{name: "retry of the last", status: parley.StatusStreaming, last: 4, seq: 4, dup: true},
		{name: "retry of an older one", status: parley.StatusStreaming, last: 4, seq: 1, dup: true},
		{name: "retry after the end", status: parley.StatusCompleted, last: 4, seq: 4, dup: true},
		{name: "gap", status: parley.StatusStreaming, last: 4, seq: 6, code: parley.EINVALID,
			msg: "seq: 6, but the last append of message m is 4; send 5 next (an append is missing)"},
		{name: "zero", status: parley.StatusStreaming, last: 0, seq: 0, code: parley.EINVALID, msg: "seq: 0; appends are numbered from 1"},
		{name: "after the end", status: parley.StatusAborted, last: 4, seq: 5, code: parley.ECONFLICT,
			msg: "message m is ABORTED, no longer streaming: nothing can be appended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dup, err := parley.CheckAppend("m", tc.status, tc.last, tc.seq)
			if tc.code != "" {
				checkError(t, err, tc.code, tc.msg)
				return
			}
			if err != nil || dup != tc.dup {
				t.Fatalf("got %v, %v; want %v, nil", dup, err, tc.dup)
			}
		})
	}
}

func TestCheckEnding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status parley.MessageStatus
		end    parley.MessageStatus
		again  bool
		code   string
	}{
		{"streaming completes", parley.StatusStreaming, parley.StatusCompleted, false, ""},
		{"streaming aborts", parley.StatusStreaming, parley.StatusAborted, false, ""},
		{"completed again", parley.StatusCompleted, parley.StatusCompleted, true, ""},
		{"a whole message is completed", "", parley.StatusCompleted, true, ""},
		{"aborted, then completed", parley.StatusAborted, parley.StatusCompleted, false, parley.ECONFLICT},
		{"interrupted, then aborted", parley.StatusInterrupted, parley.StatusAborted, false, parley.ECONFLICT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			again, err := parley.CheckEnding("m", tc.status, parley.End{Status: tc.end})
			if parley.ErrorCode(err) != tc.code || (err == nil && again != tc.again) {
				t.Fatalf("got %v, %v; want again %v, code %q", again, err, tc.again, tc.code)
			}
		})
	}
}

func TestCleanStart(t *testing.T) {
	t.Parallel()
	s, err := parley.CleanStart(parley.StartMessage{})
	if err != nil || s.Role != parley.RoleAssistant || s.Lease != parley.DefaultLease {
		t.Fatalf("defaults: got %+v, %v", s, err)
	}
	for _, tc := range []struct {
		name string
		in   parley.StartMessage
		msg  string
	}{
		{"tool role", parley.StartMessage{Role: parley.RoleResult}, "input.role: RESULT; a streaming message is ASSISTANT or USER"},
		{"short lease", parley.StartMessage{Lease: time.Millisecond}, "input.leaseSeconds: 0.001; between 1 and 600"},
		{"blank client id", parley.StartMessage{ClientID: "  "}, "clientMessageId: blank; leave it out or give an id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parley.CleanStart(tc.in)
			checkError(t, err, parley.EINVALID, tc.msg)
		})
	}
}

func TestStreamCursorRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []parley.StreamCursor{
		{Position: 0},
		{Position: 7},
		{Position: 9, Open: []parley.OpenMessage{{Position: 3, Seq: 0}, {Position: 9, Seq: 412}}},
	} {
		got, err := parley.ParseStreamCursor("after", c.String())
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("%+v: got %+v, %v", c, got, err)
		}
	}
	if got, err := parley.ParseStreamCursor("after", parley.MessageCursor(12)); err != nil || got.Position != 12 || got.Open != nil {
		t.Errorf("a message cursor: got %+v, %v", got, err)
	}
	for _, bad := range []string{"", "nope", parley.StreamCursor{Position: 2, Open: []parley.OpenMessage{{Position: 5}}}.String()} {
		if _, err := parley.ParseStreamCursor("after", bad); parley.ErrorCode(err) != parley.EINVALID {
			t.Errorf("%q: got %v, want EINVALID", bad, err)
		}
	}
}

func streaming(pos, seq int, text string) parley.Message {
	m := &parley.TextMessage{Body: parley.TextBody(text)}
	m.Position, m.Seq, m.Live = pos, pos, parley.Live{Status: parley.StatusStreaming, Seq: seq}
	return m
}

func ended(pos int, text string) parley.Message {
	m := &parley.TextMessage{Body: parley.TextBody(text)}
	m.Position, m.Seq, m.Live = pos, pos, parley.Live{Status: parley.StatusCompleted}
	return m
}

func batch(pos, seq int) parley.DeltaBatch {
	return parley.DeltaBatch{Position: pos, Seq: seq, Deltas: []parley.Delta{{Kind: parley.DeltaText}}}
}

// TestStreamCursorAdvance: the events a subscriber gets from a read, and its cursor
// after each.
func TestStreamCursorAdvance(t *testing.T) {
	t.Parallel()
	type ev struct {
		pos, seq int // seq 0: a whole message
		cursor   parley.StreamCursor
	}
	for _, tc := range []struct {
		name string
		at   parley.StreamCursor
		read parley.StreamRead
		want []ev
	}{
		{
			name: "a new streaming message opens at the number it was read at",
			at:   parley.StreamCursor{Position: 1},
			read: parley.StreamRead{New: []parley.Message{ended(2, "a"), streaming(3, 4, "b")}},
			want: []ev{
				{2, 0, parley.StreamCursor{Position: 2}},
				{3, 0, parley.StreamCursor{Position: 3, Open: []parley.OpenMessage{{3, 4}}}},
			},
		},
		{
			name: "appends after the open number, once each",
			at:   parley.StreamCursor{Position: 3, Open: []parley.OpenMessage{{3, 4}}},
			read: parley.StreamRead{Open: []parley.Message{streaming(3, 6, "")}, Batches: []parley.DeltaBatch{batch(3, 4), batch(3, 5), batch(3, 6)}},
			want: []ev{
				{3, 5, parley.StreamCursor{Position: 3, Open: []parley.OpenMessage{{3, 5}}}},
				{3, 6, parley.StreamCursor{Position: 3, Open: []parley.OpenMessage{{3, 6}}}},
			},
		},
		{
			name: "an ended message comes whole and closes; then what is new",
			at:   parley.StreamCursor{Position: 3, Open: []parley.OpenMessage{{2, 1}, {3, 6}}},
			read: parley.StreamRead{Open: []parley.Message{streaming(2, 2, ""), ended(3, "done")}, Batches: []parley.DeltaBatch{batch(2, 2)},
				New: []parley.Message{ended(4, "next")}},
			want: []ev{
				{2, 2, parley.StreamCursor{Position: 3, Open: []parley.OpenMessage{{2, 2}, {3, 6}}}},
				{3, 0, parley.StreamCursor{Position: 3, Open: []parley.OpenMessage{{2, 2}}}},
				{4, 0, parley.StreamCursor{Position: 4, Open: []parley.OpenMessage{{2, 2}}}},
			},
		},
		{
			name: "nothing new",
			at:   parley.StreamCursor{Position: 3, Open: []parley.OpenMessage{{3, 6}}},
			read: parley.StreamRead{Open: []parley.Message{streaming(3, 6, "")}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.read.Open
			var got []ev
			for _, e := range tc.at.Advance(tc.read) {
				g := ev{cursor: e.Cursor}
				if e.Delta != nil {
					g.pos, g.seq = e.Delta.Position, e.Delta.Seq
				} else {
					g.pos = e.Message.Meta().Position
				}
				got = append(got, g)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if !reflect.DeepEqual(before, tc.read.Open) {
				t.Errorf("the read was changed")
			}
		})
	}
}
