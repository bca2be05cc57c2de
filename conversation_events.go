package parley

import (
	"context"
	"strconv"
	"strings"
)

// ConversationChangeKind says how an owner's list of conversations changed.
type ConversationChangeKind string

// The kinds of list changes, as the conversation's latest change says.
const (
	ConversationCreated ConversationChangeKind = "created"
	ConversationRenamed ConversationChangeKind = "renamed"
	// ConversationBumped: its updatedAt moved (a message added or changed), so it moved
	// to the top of the most-recently-updated list.
	ConversationBumped ConversationChangeKind = "bumped"
	ConversationGone   ConversationChangeKind = "deleted"
)

// ConversationChange is one change of an owner's list of conversations: a conversation
// as it is after its latest change, or the id of one deleted. Changes are numbered per
// owner (Seq), in commit order: a reader that has seen number n has seen every change
// below it. A conversation changed several times between two reads is read once, with
// its latest change.
type ConversationChange struct {
	Seq            int64
	Kind           ConversationChangeKind
	ConversationID string
	// Conversation is nil when Kind is ConversationGone.
	Conversation *Conversation
}

// ConversationEventService streams an owner's list of conversations to subscribers as
// conversations are created, renamed, bumped and deleted, whichever replica made the
// change.
type ConversationEventService interface {
	// SubscribeConversations registers for the changes of ctx's owner's conversations
	// numbered above after, first those already made, then each one as it is made, in
	// ascending number; a negative after means only changes from now on. The
	// registration is released when ctx ends.
	SubscribeConversations(ctx context.Context, after int64) (ConversationStream, error)
	// ConversationListHead returns the number of the owner's latest list change (0 when
	// there is none): a cursor from which a subscription misses nothing made after it.
	ConversationListHead(ctx context.Context) (int64, error)
}

// ConversationStream is a registered subscription to an owner's list: its changes, in
// order.
type ConversationStream interface {
	// Next waits for the next change and returns it, reading the database at the
	// caller's pace. It returns ctx's error when ctx ends, and EUNAVAILABLE when the
	// database cannot be read for a while; after an error the stream is over.
	Next(ctx context.Context) (ConversationChange, error)
}

// ConversationListCursor returns the cursor of the owner's list after change seq.
func ConversationListCursor(seq int64) string {
	return cursorEncoding.EncodeToString([]byte("l:" + strconv.FormatInt(seq, 10)))
}

// ParseConversationListCursor returns the change number a list cursor holds; field
// names the argument in the error (EINVALID).
func ParseConversationListCursor(field, cursor string) (int64, error) {
	raw, err := cursorEncoding.DecodeString(cursor)
	if err == nil {
		if rest, ok := strings.CutPrefix(string(raw), "l:"); ok {
			if n, err := strconv.ParseInt(rest, 10, 64); err == nil && n >= 0 {
				return n, nil
			}
		}
	}
	return 0, Errorf(EINVALID, "%s: %q is not a conversationsChanged cursor (take one from an event, or from conversations' changesCursor)",
		field, truncateForError(cursor))
}
