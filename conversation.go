package parley

import "time"

// Conversation is a history of messages.
type Conversation struct {
	ID        string
	Title     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// MessageCount is how many messages its active branch has; LastPosition is the
	// position of that branch's leaf (the two are equal: positions are depths).
	MessageCount int
	LastPosition int
	// ForkedFrom is the message of another conversation this one was forked at, ""
	// for none (or when that message is gone).
	ForkedFrom string
}

// NodeID implements Node.
func (c *Conversation) NodeID() string { return c.ID }
