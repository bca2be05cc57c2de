package db

import (
	"context"
	"errors"

	"github.com/parley-dev/parley"
)

// Every read and write of conversations and messages is scoped by the owner in its
// context: conversations by their owner column, messages through their conversation,
// in the same statement or under the conversation's lock in the same transaction. A
// conversation of another owner gives the same ENOTFOUND, with the same message, as one
// that does not exist.

// errNoOwner is what a call without an owner gets: a wiring mistake, never the caller's.
var errNoOwner = errors.New("db: the context carries no owner (parley.WithOwner)")

// ownerOf returns the owner ctx acts for.
func ownerOf(ctx context.Context) (string, error) {
	if o, ok := parley.OwnerFrom(ctx); ok {
		return o, nil
	}
	return "", errNoOwner
}

// ownedMessage is a condition on a row of messages (its columns unqualified) that its
// conversation belongs to the owner in parameter $owner.
func ownedMessage(owner string) string {
	return `EXISTS (SELECT 1 FROM conversations own WHERE own.id = messages.conversation_id AND own.owner = $` + owner + `)`
}

// ownedConversation is a condition that the conversation in parameter $conv belongs to
// the owner in parameter $owner. It does not depend on the row, so Postgres checks it
// once per statement.
func ownedConversation(conv, owner string) string {
	return `EXISTS (SELECT 1 FROM conversations own WHERE own.id = $` + conv + ` AND own.owner = $` + owner + `)`
}
