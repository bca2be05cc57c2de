package parley

import (
	"slices"
	"strings"
	"time"
)

// The rules of deciding, claiming and reusing stored things. Each is a pure function of
// the facts the store read inside its transaction (the stored message, the claim, the
// transaction's time): the store supplies the facts, applies the rule, and persists
// what it returns, all in that one transaction.

// maxNameBytes bounds the names people and workers give themselves (decidedBy, worker).
const maxNameBytes = 200

// CleanApprovalDecision checks a decision on a tool call as a client sends it, before
// anything is read: the status must be a decision, and the reason and who decided are
// cleaned as any text is. Returns EINVALID naming the field at fault.
func CleanApprovalDecision(d ApprovalDecision) (ApprovalDecision, error) {
	if d.Status != ApprovalApproved && d.Status != ApprovalDenied {
		return d, Errorf(EINVALID, "status: %s is not a decision; use APPROVED or DENIED", d.Status)
	}
	var err error
	if d.Reason, err = CleanText("reason", d.Reason); err != nil {
		return d, err
	}
	if d.DecidedBy, err = CleanText("decidedBy", strings.TrimSpace(d.DecidedBy)); err != nil {
		return d, err
	} else if len(d.DecidedBy) > maxNameBytes {
		return d, Errorf(EINVALID, "decidedBy: %d bytes, at most %d allowed", len(d.DecidedBy), maxNameBytes)
	}
	return d, nil
}

// DecideToolCall applies a cleaned decision, made at now, to the call toolCallID of the
// stored message m (whose id is messageID), and returns the request with the call
// decided, for the store to write back. Deciding an imported call here makes it this
// server's request again (no longer Imported), so approving it must pass policies (nil:
// none configured) as a new request would: a call its tool's policy denies cannot be
// approved. Returns EINVALID when m is not a tool request, ENOTFOUND when it has no such
// call, ECONFLICT when the call was already decided, EFORBIDDEN when a policy denies it.
func DecideToolCall(m Message, messageID, toolCallID string, d ApprovalDecision, now time.Time, policies *ToolPolicies) (*ToolRequestMessage, *ToolCall, error) {
	req, ok := m.(*ToolRequestMessage)
	if !ok {
		return nil, nil, Errorf(EINVALID, "messageId: message %s is a %s, not a tool request", messageID, m.Kind())
	}
	call := req.ToolCall(toolCallID)
	if call == nil {
		return nil, nil, Errorf(ENOTFOUND, "toolCallId: message %s has no tool call %q", messageID, toolCallID)
	}
	if call.ApprovalStatus != ApprovalPending {
		return nil, nil, Errorf(ECONFLICT, "tool call %q was already decided: %s", toolCallID, call.ApprovalStatus)
	}
	if call.Imported && d.Status == ApprovalApproved && policies != nil {
		if pol, rule := policies.PolicyFor(call.Name); pol == PolicyDeny {
			return nil, nil, Errorf(EFORBIDDEN, "toolCallId: tool call %q was imported, and %s: it cannot be approved here",
				toolCallID, policyReason(pol, rule))
		}
	}
	d.DecidedAt = now
	call.ApprovalStatus, call.Decision, call.Imported = d.Status, &d, false
	return req, call, nil
}

// DefaultToolCallLease is how long a claim on a tool call lasts when the worker does not
// say; MaxToolCallLease is the longest it may ask for.
const (
	DefaultToolCallLease = 5 * time.Minute
	MaxToolCallLease     = 24 * time.Hour
)

// CleanToolCallClaim checks a worker's claim as it sends it: a worker name of 1 to 200
// bytes, and a lease of whole seconds between 1 s and MaxToolCallLease
// (DefaultToolCallLease when it gives none). Returns EINVALID naming the field at fault.
func CleanToolCallClaim(c ToolCallClaim) (ToolCallClaim, error) {
	worker, err := CleanText("worker", c.Worker)
	if err != nil {
		return c, err
	}
	if worker == "" || len(worker) > maxNameBytes {
		return c, Errorf(EINVALID, "worker: give a name of 1 to %d bytes", maxNameBytes)
	}
	c.Worker = worker
	if c.Lease == nil {
		lease := DefaultToolCallLease
		c.Lease = &lease
	}
	if *c.Lease <= 0 || *c.Lease > MaxToolCallLease {
		return c, Errorf(EINVALID, "leaseSeconds: must be between 1 and %d", int(MaxToolCallLease/time.Second))
	}
	return c, nil
}

// ToolCallState is what the store knows of a tool call when a worker claims it.
type ToolCallState struct {
	ApprovalStatus ApprovalStatus
	// Answered says the call has a result.
	Answered bool
	// ClaimedBy and ClaimExpiresAt are the current claim, if any.
	ClaimedBy      *string
	ClaimExpiresAt *time.Time
	// Imported says the call came with an import and was not decided here since.
	Imported bool
}

// CheckClaim decides whether worker may claim (or renew its claim on) the call toolCallID
// in state st at now: only an approved call without a result, and not while another
// worker's lease lasts. Returns ECONFLICT saying why not.
func CheckClaim(toolCallID string, st ToolCallState, worker string, now time.Time) error {
	switch {
	case st.Answered:
		return Errorf(ECONFLICT, "tool call %q already has a result", toolCallID)
	case st.Imported:
		return Errorf(ECONFLICT, "tool call %q was imported: it is history, not a request (a person may approve it here with setToolCallApproval while it is PENDING)", toolCallID)
	case st.ApprovalStatus != ApprovalApproved:
		return Errorf(ECONFLICT, "tool call %q is %s, not APPROVED", toolCallID, st.ApprovalStatus)
	case st.ClaimedBy != nil && *st.ClaimedBy != worker && st.ClaimExpiresAt != nil && st.ClaimExpiresAt.After(now):
		return Errorf(ECONFLICT, "tool call %q is claimed by %q until %s", toolCallID,
			*st.ClaimedBy, st.ClaimExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// ResourceFresh reports whether an MCP resource retrieved at retrievedAt may still be
// reused at now, when its server's content stays fresh for maxAge.
func ResourceFresh(retrievedAt, now time.Time, maxAge time.Duration) bool {
	// Postgres counted in microseconds, and so does this.
	return retrievedAt.After(now.Add(-maxAge.Truncate(time.Microsecond)))
}

// CachedResourceCopy is the message that reuses a cached MCP resource: a new message,
// placed where it is asked for, with the content and retrieval time of the cached one
// (retrievedAt before createdAt says it came from the cache).
func CachedResourceCopy(cached *MCPResourceMessage) *MCPResourceMessage {
	return &MCPResourceMessage{
		MessageMeta: MessageMeta{Role: RoleDocument},
		Body:        cached.Body, ServerName: cached.ServerName, ResourceURI: cached.ResourceURI,
		MimeType: cached.MimeType, RetrievedAt: cached.RetrievedAt, Truncated: cached.Truncated,
	}
}

// CheckResultCall decides whether a result may answer the call callID of a conversation,
// from what the store found: whether the conversation has the call, and the id of the
// result message it already has ("" for none). Returns EINVALID for an unknown call,
// ECONFLICT for one already answered.
func CheckResultCall(callID string, found bool, answeredBy string) error {
	if !found {
		return Errorf(EINVALID, "toolResult.toolCallId: no tool call %q in this conversation; add the tool request first", callID)
	}
	if answeredBy != "" {
		return Errorf(ECONFLICT, "toolResult.toolCallId: tool call %q already has a result (message %s)", callID, answeredBy)
	}
	return nil
}

// CheckNewToolCalls refuses a request whose calls reuse an id the conversation already
// has: taken are those of its ids the store found. Returns EINVALID naming the first
// such call.
func CheckNewToolCalls(calls []ToolCall, taken []string) error {
	if len(taken) == 0 {
		return nil
	}
	for i, c := range calls {
		if slices.Contains(taken, c.ID) {
			return Errorf(EINVALID, "toolRequest.toolCalls[%d].id: %q is already used in this conversation", i, c.ID)
		}
	}
	return nil
}

// DenialText is what an LLM is told in place of the result of a call denied by d: a
// denial by a tool policy is worded as the policy's, naming it (its reason), never as a
// person's; a person's (or an agent's) denial says so, with the reason given.
func DenialText(d *ApprovalDecision) string {
	reason := ""
	if d != nil {
		reason = strings.TrimSpace(d.Reason)
	}
	if d != nil && d.DecidedBy == PolicyDecidedBy {
		if reason == "" {
			return "A tool policy denied this tool call."
		}
		return "A tool policy denied this tool call: " + reason + "."
	}
	if reason == "" {
		return "The user denied this tool call."
	}
	return "The user denied this tool call. Reason: " + reason
}

// CheckResultClaim decides whether a result sent by worker ("" when it names none) may
// answer the call callID, claimed by claimedBy until expiresAt (nil for no claim), at
// now: while a claim lasts, only its claimant's result is accepted, so that a second
// worker running the call by mistake cannot answer it under the first. A lapsed claim
// holds nobody off. Returns ECLAIMED naming the claimant and the claim's end.
func CheckResultClaim(callID string, claimedBy *string, expiresAt *time.Time, worker string, now time.Time) error {
	if claimedBy == nil || expiresAt == nil || !expiresAt.After(now) || *claimedBy == worker {
		return nil
	}
	if worker == "" {
		return Errorf(ECLAIMED, "toolResult.worker: tool call %q is claimed by %q until %s; only its claimant may add the result while the claim lasts (name it in worker)",
			callID, *claimedBy, expiresAt.UTC().Format(time.RFC3339))
	}
	return Errorf(ECLAIMED, "toolResult.worker: tool call %q is claimed by %q until %s, not by %q; only its claimant may add the result while the claim lasts",
		callID, *claimedBy, expiresAt.UTC().Format(time.RFC3339), worker)
}
