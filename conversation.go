package parley

import "time"

// Conversation is a history of messages.
type Conversation struct {
	ID        string
	Title     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// MessageCount is how many messages it has; LastPosition is the position of its
	// newest message (equal while messages are never removed singly).
	MessageCount int
	LastPosition int
}

// NodeID implements Node.
func (c *Conversation) NodeID() string { return c.ID }
