package parley_test

import (
	"encoding/base64"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
)

func TestIDs(t *testing.T) {
	const key = "0afe6979-3156-424a-a237-1f8bc24a5211"
	if got, ok := parley.ParseConversationID(parley.ConversationID(key)); !ok || got != key {
		t.Errorf("conversation id round trip: got %q, %v", got, ok)
	}
	if got, ok := parley.ParseMessageID(parley.MessageID(key)); !ok || got != key {
		t.Errorf("message id round trip: got %q, %v", got, ok)
	}
	for _, bad := range []string{"", key, "conv_" + key, "msg_nope", "msg_" + key + "x", "msg_0afe69793156424aa2371f8bc24a5211"} {
		if _, ok := parley.ParseMessageID(bad); ok {
			t.Errorf("ParseMessageID(%q) accepted", bad)
		}
	}
}

// TestToolCallIDs: a call's public id is unique across conversations (it holds its
// message's) and gives back the message and the provider's id.
func TestToolCallIDs(t *testing.T) {
	t.Parallel()
	m1, m2 := parley.MessageID("0afe6979-3156-424a-a237-1f8bc24a5211"), parley.MessageID("1bfe6979-3156-424a-a237-1f8bc24a5211")
	for _, call := range []string{"call_1", "toolu_01A", "a_b c/d", "x"} {
		id := parley.ToolCallID(m1, call)
		if id == parley.ToolCallID(m2, call) {
			t.Errorf("%q: the same id %q in two messages", call, id)
		}
		msg, got, ok := parley.ParseToolCallID(id)
		if !ok || msg != m1 || got != call {
			t.Errorf("ParseToolCallID(%q) = %q, %q, %v; want %q, %q, true", id, msg, got, ok, m1, call)
		}
	}
	for _, bad := range []string{"", "call_1", "tc_", "tc_0afe6979-3156-424a-a237-1f8bc24a5211", "tc_0afe6979-3156-424a-a237-1f8bc24a5211_", "tc_nope_x", m1} {
		if _, _, ok := parley.ParseToolCallID(bad); ok {
			t.Errorf("ParseToolCallID(%q) accepted", bad)
		}
	}
}

func TestCursors(t *testing.T) {
	for _, pos := range []int{0, 1, 42, 1 << 30} {
		got, err := parley.ParseMessageCursor("after", parley.MessageCursor(pos))
		if err != nil || got != pos {
			t.Errorf("message cursor %d: got %d, %v", pos, got, err)
		}
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	gotTS, gotKey, err := parley.ParseConversationCursor("after", parley.ConversationCursor(ts, "0afe6979-3156-424a-a237-1f8bc24a5211"))
	if err != nil || !gotTS.Equal(ts) || gotKey != "0afe6979-3156-424a-a237-1f8bc24a5211" {
		t.Errorf("conversation cursor: got %v %q %v", gotTS, gotKey, err)
	}
	for _, bad := range []string{"", "!!", "bTp4", "bTotMQ", parley.ConversationCursor(ts, "0afe6979-3156-424a-a237-1f8bc24a5211")} {
		if _, err := parley.ParseMessageCursor("after", bad); parley.ErrorCode(err) != parley.EINVALID {
			t.Errorf("ParseMessageCursor(%q): got %v, want EINVALID", bad, err)
		}
	}
	for _, pos := range []int{parley.MaxPosition + 1, 1 << 40, math.MaxInt} {
		if _, err := parley.ParseMessageCursor("after", parley.MessageCursor(pos)); parley.ErrorCode(err) != parley.EINVALID ||
			!strings.Contains(parley.ErrorMessage(err), "past the largest position") {
			t.Errorf("message cursor %d: got %v, want EINVALID saying it is past the largest position", pos, err)
		}
	}
	if got, err := parley.ParseMessageCursor("after", parley.MessageCursor(parley.MaxPosition)); err != nil || got != parley.MaxPosition {
		t.Errorf("message cursor %d: got %d, %v", parley.MaxPosition, got, err)
	}
	for _, at := range []time.Time{time.UnixMicro(math.MaxInt64), time.UnixMicro(math.MinInt64), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, _, err := parley.ParseConversationCursor("after", parley.ConversationCursor(at, "0afe6979-3156-424a-a237-1f8bc24a5211")); parley.ErrorCode(err) != parley.EINVALID {
			t.Errorf("conversation cursor at %v: got %v, want EINVALID", at, err)
		}
	}
	if _, _, err := parley.ParseConversationCursor("before", parley.MessageCursor(3)); parley.ErrorCode(err) != parley.EINVALID {
		t.Errorf("a message cursor parsed as a conversation cursor: %v", err)
	}
}

func TestRoleLabels(t *testing.T) {
	want := map[parley.Role]string{
		parley.RoleUser: "User", parley.RoleAssistant: "Assistant", parley.RoleSupervisor: "Supervisor",
		parley.RoleDocument: "Document", parley.RoleInvocation: "Tool Call", parley.RoleResult: "Tool Result",
	}
	for _, r := range parley.Roles {
		if got := r.Label(); got != want[r] {
			t.Errorf("%s.Label() = %q, want %q", r, got, want[r])
		}
		if got, err := parley.ParseRole(r.String()); err != nil || got != r {
			t.Errorf("ParseRole(%q) = %v, %v", r.String(), got, err)
		}
	}
	for _, bad := range []string{"system", "tool", "", "USERS"} {
		if _, err := parley.ParseRole(bad); parley.ErrorCode(err) != parley.EINVALID {
			t.Errorf("ParseRole(%q): got %v, want EINVALID", bad, err)
		}
	}
}

func TestToolOutputTruncationKeepsCharacters(t *testing.T) {
	m := &parley.ToolResultMessage{ToolCallID: "c", Status: parley.ToolSuccess,
		Body: parley.TextBody("ab€€€"), Output: parley.JSON(`"` + "€€€€" + `"`)}
	if err := parley.Prepare(m, parley.Limits{MaxToolOutputBytes: 6, MaxImageBytes: 1}); err != nil {
		t.Fatal(err)
	}
	if !m.Truncated || m.OriginalSize == nil || *m.OriginalSize != 11+14 {
		t.Fatalf("truncated %v, originalSize %v; want true, 25", m.Truncated, m.OriginalSize)
	}
	if got := m.Text(); got != "ab€" {
		t.Errorf("text: got %q, want %q (cut at a character boundary)", got, "ab€")
	}
	if string(m.Output) != `"\"€"` {
		t.Errorf("output: got %s, want the first 6 bytes of the JSON as a JSON string", m.Output)
	}
}

func TestConversationListCursor(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 1, 1 << 40} {
		got, err := parley.ParseConversationListCursor("after", parley.ConversationListCursor(n))
		if err != nil || got != n {
			t.Errorf("round trip of %d: got %d, %v", n, got, err)
		}
	}
	enc := base64.RawURLEncoding.EncodeToString
	for _, bad := range []string{"", "x", parley.MessageCursor(3), enc([]byte("l:-1")), enc([]byte("l:1x"))} {
		if _, err := parley.ParseConversationListCursor("after", bad); parley.ErrorCode(err) != parley.EINVALID || !strings.Contains(parley.ErrorMessage(err), "after") {
			t.Errorf("%q: got %v, want EINVALID naming after", bad, err)
		}
	}
}
