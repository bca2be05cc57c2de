package parley

import (
	"context"
	"slices"
)

// Conversations are trees of messages. A message is added as a child of an earlier
// message (its parent), and a second child of a message starts a new branch: editing a
// message or regenerating a reply adds a sibling, never rewrites. A branch is the path
// from a root to a leaf; a conversation has one active branch, which reads follow unless
// they name another, and which new messages without a parent continue. A message's
// position is its depth along its branch: 1, 2, 3... without gaps on every branch.

// Placement says where a new message goes in its conversation's tree. The zero value
// continues the active branch. At most one of the fields may be set.
type Placement struct {
	// ParentID adds the message as a child of this message.
	ParentID string
	// SiblingOf adds the message beside this one, under the same parent (a root beside
	// a root): an edit of a prompt, or another reply.
	SiblingOf string
}

// IsZero reports whether the placement continues the active branch.
func (p Placement) IsZero() bool { return p.ParentID == "" && p.SiblingOf == "" }

// CheckPlacement returns EINVALID when both a parent and a sibling are given.
func CheckPlacement(p Placement) error {
	if p.ParentID != "" && p.SiblingOf != "" {
		return Errorf(EINVALID, "parentId and siblingOf: give one, not both")
	}
	return nil
}

// TreeInfo is where a stored message sits in its tree.
type TreeInfo struct {
	// ParentID is the message's parent, "" for a root.
	ParentID string
	// SiblingIDs are the children of the message's parent (the roots, for a root), the
	// message among them, oldest first.
	SiblingIDs []string
}

// SiblingIndex is the message's 0-based index among its siblings, -1 if absent.
func (t *TreeInfo) SiblingIndex(id string) int { return slices.Index(t.SiblingIDs, id) }

// Branch is one path of a conversation's tree, named by its leaf.
type Branch struct {
	// Leaf is the branch's last message.
	Leaf Message
	// ForkID is the message the branch leaves another at (the parent of its first
	// message not shared with an older branch), "" for the conversation's first branch.
	ForkID string
	// ForkPosition is the fork's position, 0 for none.
	ForkPosition int
	// Length is how many messages the branch has: its leaf's position.
	Length int
	// Active says whether it is the conversation's active branch.
	Active bool
}

// TreeService reads and changes conversations' trees.
type TreeService interface {
	// FindTreeInfo returns where each message sits in its tree, by message id; ids
	// that name no message of the caller's are left out.
	FindTreeInfo(ctx context.Context, messageIDs []string) (map[string]*TreeInfo, error)
	// SwitchBranch makes the branch through messageID the active branch of its
	// conversation (continued past messageID along its first children to a leaf) and
	// records the switch as a SystemControl BRANCH_SWITCH message at its end, which it
	// returns; switching to the active branch records nothing and returns nil. by says
	// who switched. Returns ENOTFOUND for a missing conversation or message, EINVALID
	// for a message of another conversation.
	SwitchBranch(ctx context.Context, conversationID, messageID, by string) (*SystemControlMessage, error)
	// BranchHead reads, in one snapshot, the conversation's last Seq and the leaf of the
	// active branch (or of the branch through the message branch): a subscriber
	// following the branch replays it up to the leaf and then takes every message
	// stored after that Seq whose parent is the branch's tip. The leaf is nil for an
	// empty conversation. Returns ENOTFOUND for a missing conversation or message.
	BranchHead(ctx context.Context, conversationID, branch string) (seq int, leaf Message, err error)
	// SetMessageHidden hides a message from what is sent to an LLM, or shows it again;
	// it stays in the history either way. Returns ENOTFOUND for a missing message.
	SetMessageHidden(ctx context.Context, messageID string, hidden bool) (Message, error)
	// DeleteMessage erases a message's content and leaves a tombstone in its place,
	// so that the tree and positions stay as they are; deleting it again changes
	// nothing. Returns ENOTFOUND for a missing message, ECONFLICT for one streaming.
	DeleteMessage(ctx context.Context, messageID string) (Message, error)
	// ForkConversation makes a new conversation of the owner's whose history is the
	// path to messageID (copied: the new one lives on if the source goes), titled title
	// (the source's title when ""), linked back to messageID. Returns ENOTFOUND for a
	// missing message, ECONFLICT when a message on the path is still streaming.
	ForkConversation(ctx context.Context, messageID, title string) (*Conversation, error)
	// BranchContains reports whether messageID is on the branch through the message
	// branch (continued along first children to its end, as it is now), or on the
	// active branch for "". A message of no branch of the conversation is not.
	// Returns ENOTFOUND for a missing conversation or branch message.
	BranchContains(ctx context.Context, conversationID, branch, messageID string) (bool, error)
	// FindBranches lists up to limit of a conversation's branches, those with the
	// newest leaves first. Returns ENOTFOUND for a missing conversation.
	FindBranches(ctx context.Context, conversationID string, limit int) ([]*Branch, error)
}

// Erase empties a message's content for a tombstone: its text, thinking, arguments,
// outputs, sources and parameters. What places it stays: its role, its variant, the ids
// and names of its tool calls (their results keep answering them).
func Erase(m Message) {
	switch m := m.(type) {
	case *TextMessage:
		m.Body = Body{}
	case *ImageMessage:
		m.Source = ImageSource{Kind: m.Source.Kind}
		m.Recognition = nil
	case *FileReferenceMessage:
		m.Resolution = nil
	case *ToolRequestMessage:
		m.Body = Body{}
		for i := range m.ToolCalls {
			m.ToolCalls[i].Arguments = JSON(`{}`)
		}
	case *ToolResultMessage:
		m.Body = Body{}
		m.Output, m.Error = nil, nil
	case *SystemControlMessage:
		m.From, m.To, m.Params = "", "", nil
	case *MCPResourceMessage:
		m.Body = Body{}
	case *CompactionMessage:
		m.Body, m.Data = Body{}, nil
	case *UnknownMessage:
		m.Raw = JSON(`{}`)
	}
}
