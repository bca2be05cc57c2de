package parley

import (
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Public ids are a type prefix and a UUID, so that node(id) knows what to look for.
const (
	conversationPrefix = "conv_"
	messagePrefix      = "msg_"
	toolCallPrefix     = "tc_"
)

// ConversationID returns the public id of the conversation stored under key.
func ConversationID(key string) string { return conversationPrefix + key }

// MessageID returns the public id of the message stored under key.
func MessageID(key string) string { return messagePrefix + key }

// ParseConversationID returns the storage key of a public conversation id.
func ParseConversationID(id string) (string, bool) { return parseID(conversationPrefix, id) }

// ParseMessageID returns the storage key of a public message id.
func ParseMessageID(id string) (string, bool) { return parseID(messagePrefix, id) }

// ToolCallID returns the globally unique public id of the call callID (its provider's
// id, unique within the conversation only) in the tool request message messageID (a
// public message id).
func ToolCallID(messageID, callID string) string {
	return toolCallPrefix + strings.TrimPrefix(messageID, messagePrefix) + "_" + callID
}

// ParseToolCallID returns the public message id and the call id of a public tool call
// id.
func ParseToolCallID(id string) (messageID, callID string, ok bool) {
	rest, ok := strings.CutPrefix(id, toolCallPrefix)
	if !ok || len(rest) < 38 || rest[36] != '_' {
		return "", "", false
	}
	key, ok := parseID("", rest[:36])
	if !ok || rest[37:] == "" {
		return "", "", false
	}
	return MessageID(key), rest[37:], true
}

func parseID(prefix, id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return "", false
	}
	u, err := uuid.Parse(rest)
	if err != nil || len(rest) != 36 {
		return "", false
	}
	return u.String(), true
}

// Cursors are opaque to clients: base64 of a tagged position.
var cursorEncoding = base64.RawURLEncoding

// MessageCursor returns the cursor of the message at position.
func MessageCursor(position int) string {
	// Built on the stack, one allocation for the cursor (a page writes one a message).
	var raw [2 + 20]byte
	b := strconv.AppendInt(append(raw[:0], "m:"...), int64(position), 10)
	var out [32]byte // base64 of len(raw) bytes
	n := cursorEncoding.EncodedLen(len(b))
	cursorEncoding.Encode(out[:n], b)
	return string(out[:n])
}

// MaxPosition is the largest message position: positions are stored as Postgres
// integers.
const MaxPosition = math.MaxInt32

// ParseMessageCursor returns the position a message cursor points at. A cursor past
// MaxPosition is refused (EINVALID) here, so that it never reaches the database as a
// value out of an integer's range.
func ParseMessageCursor(field, cursor string) (int, error) {
	raw, err := cursorEncoding.DecodeString(cursor)
	if err == nil {
		if rest, ok := strings.CutPrefix(string(raw), "m:"); ok {
			n, err := strconv.ParseInt(rest, 10, 64)
			switch {
			case err == nil && n >= 0 && n <= MaxPosition:
				return int(n), nil
			case err == nil && n > MaxPosition, errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(rest, "-"):
				return 0, Errorf(EINVALID, "%s: cursor %q points past the largest position, %d", field, truncateForError(cursor), MaxPosition)
			}
		}
	}
	return 0, Errorf(EINVALID, "%s: %q is not a message cursor", field, truncateForError(cursor))
}

// ConversationCursor returns the cursor of a conversation in the most-recently-updated
// order.
func ConversationCursor(updatedAt time.Time, key string) string {
	return cursorEncoding.EncodeToString([]byte("c:" + strconv.FormatInt(updatedAt.UnixMicro(), 10) + ":" + key))
}

// Conversation cursors hold times from year 1 to 9999: outside them a time would not
// reach the database as a valid timestamp.
var (
	minCursorTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxCursorTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// ParseConversationCursor returns the position a conversation cursor points at.
func ParseConversationCursor(field, cursor string) (time.Time, string, error) {
	raw, err := cursorEncoding.DecodeString(cursor)
	if err == nil {
		if rest, ok := strings.CutPrefix(string(raw), "c:"); ok {
			if ts, key, ok := strings.Cut(rest, ":"); ok {
				micros, err1 := strconv.ParseInt(ts, 10, 64)
				if _, err2 := uuid.Parse(key); err1 == nil && err2 == nil && micros >= minCursorTime && micros <= maxCursorTime {
					return time.UnixMicro(micros).UTC(), key, nil
				}
			}
		}
	}
	return time.Time{}, "", Errorf(EINVALID, "%s: %q is not a conversation cursor", field, truncateForError(cursor))
}

// ForkMessageKey returns the storage key of the message at depth of the shared part of
// the fork numbered forkNo (a conversation forked without copying its path: see
// db.ForkConversation): a UUID of version 8 holding both, which real messages (version
// 4 or 7) never have. The database computes the same (fork_message_id, migration
// 000025).
func ForkMessageKey(forkNo int64, depth int) string {
	var u uuid.UUID
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(forkNo>>40), byte(forkNo>>32), byte(forkNo>>24), byte(forkNo>>16), byte(forkNo>>8), byte(forkNo)
	d := uint32(depth)
	u[6] = 0x80 | byte(d>>28&0x0f)
	u[7] = byte(d >> 20)
	u[8] = 0x80 | byte(d>>16&0x0f)
	u[9] = byte(d >> 8)
	u[10] = byte(d)
	return u.String()
}

// ParseForkMessageKey returns the fork number and depth a key made by ForkMessageKey
// holds; ok is false for any other key.
func ParseForkMessageKey(key string) (forkNo int64, depth int, ok bool) {
	u, err := uuid.Parse(key)
	if err != nil || u.Version() != 8 || u[8]&0xf0 != 0x80 || u[11]|u[12]|u[13]|u[14]|u[15] != 0 {
		return 0, 0, false
	}
	forkNo = int64(u[0])<<40 | int64(u[1])<<32 | int64(u[2])<<24 | int64(u[3])<<16 | int64(u[4])<<8 | int64(u[5])
	d := uint32(u[6]&0x0f)<<28 | uint32(u[7])<<20 | uint32(u[8]&0x0f)<<16 | uint32(u[9])<<8 | uint32(u[10])
	if forkNo == 0 || d == 0 || d > MaxPosition {
		return 0, 0, false
	}
	return forkNo, int(d), true
}
