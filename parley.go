// Package parley is the domain of Parley, a store of LLM conversation history: the
// conversation and its typed messages, the rules that keep them valid and safe to
// display, the error type, and the services that the adapters (db, graph) implement
// or call. It imports no adapter and no driver.
package parley

import "context"

// Node is anything with a globally unique, opaque id: conversations and messages.
type Node interface {
	NodeID() string
}

// ConversationService stores conversations.
type ConversationService interface {
	// FindConversationByID returns ENOTFOUND when no such conversation exists.
	FindConversationByID(ctx context.Context, id string) (*Conversation, error)
	// FindConversations pages through conversations, most recently updated first.
	// Returns EINVALID for a malformed cursor or page size.
	FindConversations(ctx context.Context, page PageRequest) (*ConversationPage, error)
	// CountConversations returns how many conversations there are.
	CountConversations(ctx context.Context) (int, error)
	// CreateConversation returns EINVALID for an unusable title.
	CreateConversation(ctx context.Context, title string) (*Conversation, error)
	// RenameConversation returns ENOTFOUND or EINVALID.
	RenameConversation(ctx context.Context, id, title string) (*Conversation, error)
	// DeleteConversation deletes the conversation and its messages; ENOTFOUND when absent.
	DeleteConversation(ctx context.Context, id string) error
}

// MessageService stores messages.
type MessageService interface {
	// FindMessageByID returns ENOTFOUND when no such message exists.
	FindMessageByID(ctx context.Context, id string) (Message, error)
	// FindMessages pages through a conversation's messages in ascending position.
	// Returns EINVALID for a malformed cursor or page size.
	FindMessages(ctx context.Context, conv *Conversation, page PageRequest) (*MessagePage, error)
	// FindMessagePages reads the same page of several conversations at once, in the
	// order given. Returns EINVALID as FindMessages does.
	FindMessagePages(ctx context.Context, convs []*Conversation, page PageRequest) ([]*MessagePage, error)
	// FindConversationPage reads a conversation and a page of its messages together, as
	// FindConversationByID and FindMessages would one after the other (in one statement
	// where it can). Returns ENOTFOUND for a missing conversation, EINVALID as
	// FindMessages does.
	FindConversationPage(ctx context.Context, id string, page PageRequest) (*Conversation, *MessagePage, error)
	// AddMessage validates and sanitizes m, stores it as the conversation's next
	// message and returns it as stored. Returns ENOTFOUND for a missing conversation,
	// EINVALID for a message that breaks a rule (nothing is written), ECONFLICT for a
	// tool result whose call already has one.
	AddMessage(ctx context.Context, conversationID string, m Message) (Message, error)
	// SetToolCallApproval decides a pending tool call. Returns ENOTFOUND for a missing
	// message or call, EINVALID for a status that is not a decision, ECONFLICT when the
	// call was already decided.
	SetToolCallApproval(ctx context.Context, messageID, toolCallID string, d ApprovalDecision) (*ToolRequestMessage, error)
	// FindTreeMessages reads the messages of every branch of a conversation in the
	// order they were stored, each after its parent: up to first of those stored after
	// the number afterSeq (a message's Seq), within maxBytes of stored messages (0: no
	// bound; the first message always fits). Each message's Tree has its ParentID.
	// Returns ENOTFOUND for a missing conversation.
	FindTreeMessages(ctx context.Context, conv *Conversation, afterSeq, first, maxBytes int) (*TreePage, error)
}

// TreePage is a page of the messages of every branch of a conversation.
type TreePage struct {
	Messages []Message
	// Bytes is what the page's messages hold, as MessagePage counts it.
	Bytes       int
	HasNextPage bool
	// ActiveLeafID is the conversation's active leaf, "" while it is empty.
	ActiveLeafID string
}

// PageRequest selects a page of a connection, in Relay's terms. Cursors are opaque
// strings made by this package; nil fields are absent arguments.
type PageRequest struct {
	First  *int
	After  *string
	Last   *int
	Before *string
	// MaxBytes bounds the bytes of the stored messages a page (or all the pages of one
	// read of several conversations) holds, 0 for no bound: a page that would pass it
	// ends early (FitsBudget), saying there is more.
	MaxBytes int
	// Branch names the branch to read by a message on it (the branch through it,
	// continued along first children to a leaf); "" reads the active branch.
	Branch string
	// Tree asks for each message's TreeInfo.
	Tree bool
	// ForLLM reads only what an LLM export uses: each message's CreatedAt, UpdatedAt and
	// SourceID are left zero (parsing the times alone is a tenth of reading a page).
	ForLLM bool
}

// FitsBudget reports whether a message of size bytes may join a page that holds held
// messages already, when used of the budget's bytes are spent (budget 0: no bound). The
// first message of a page always fits, so that paging always moves on.
func FitsBudget(budget, used, size, held int) bool {
	return budget <= 0 || held == 0 || used+size <= budget
}

// DefaultPageSize is the page size when neither first nor last is given.
const DefaultPageSize = 50

// MaxPageSize bounds first and last, so one request cannot load a whole history.
const MaxPageSize = 1000

// CheckPage checks a page's sizes and returns it with the default applied: first and
// last may not be negative or above MaxPageSize, and a request with neither reads the
// first DefaultPageSize. Returns EINVALID naming the argument at fault. (Cursors are
// checked where they are parsed.)
func CheckPage(page PageRequest) (PageRequest, error) {
	for _, arg := range []struct {
		name string
		n    *int
	}{{"first", page.First}, {"last", page.Last}} {
		if arg.n == nil {
			continue
		}
		if *arg.n < 0 {
			return page, Errorf(EINVALID, "%s: %d is negative", arg.name, *arg.n)
		}
		if *arg.n > MaxPageSize {
			return page, Errorf(EINVALID, "%s: %d is more than the maximum page size %d", arg.name, *arg.n, MaxPageSize)
		}
	}
	if page.First == nil && page.Last == nil {
		n := DefaultPageSize
		page.First = &n
	}
	return page, nil
}

// PageInfo says where a page sits in its connection.
type PageInfo struct {
	HasNextPage     bool
	HasPreviousPage bool
}

// ConversationPage is a page of conversations with their cursors.
type ConversationPage struct {
	Conversations []*Conversation
	Cursors       []string
	PageInfo
	TotalCount int
}

// MessagePage is a page of one conversation's messages along one branch, in ascending
// position.
type MessagePage struct {
	Messages []Message
	PageInfo
	// TotalCount is the branch's length.
	TotalCount int
	// Bytes is what the page's messages take as stored: what it spent of a budget.
	Bytes int
}
