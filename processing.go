package parley

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Processing turns a stored message into what an LLM can use: a file reference into the
// file's lines, an image into its recognized text or a vision model's analysis, an MCP
// resource into context. Each step is a mutation whose outcome, success or failure, is
// stored on the message and streamed to subscribers, so any client can drive it and
// retry it.

// AgentRole is the role an agent acting through the API claims (seed 003's agent
// permissions). Which role may do what is configuration: see AgentPermissions.
type AgentRole string

// The agent roles.
const (
	AgentPlanner  AgentRole = "PLANNER"
	AgentExecutor AgentRole = "EXECUTOR"
	AgentReviewer AgentRole = "REVIEWER"
)

// AgentRoles lists every agent role.
var AgentRoles = []AgentRole{AgentPlanner, AgentExecutor, AgentReviewer}

// Permission is something an agent role may be allowed to do.
type Permission string

// The permissions.
const (
	// PermReadFiles allows resolving file references (and reading image files).
	PermReadFiles Permission = "read_files"
	// PermRecognizeImages allows recognizing images (OCR, vision).
	PermRecognizeImages Permission = "recognize_images"
	// PermReadResources allows injecting MCP resources.
	PermReadResources Permission = "read_resources"
)

// Permissions lists every permission.
var Permissions = []Permission{PermReadFiles, PermRecognizeImages, PermReadResources}

// AgentPermissions is the table of what each agent role may do.
type AgentPermissions map[AgentRole][]Permission

// DefaultAgentPermissions lets every role read files, recognize images and read MCP
// resources; a deployment narrows it in its configuration.
var DefaultAgentPermissions = AgentPermissions{
	AgentPlanner:  {PermReadFiles, PermRecognizeImages, PermReadResources},
	AgentExecutor: {PermReadFiles, PermRecognizeImages, PermReadResources},
	AgentReviewer: {PermReadFiles, PermRecognizeImages, PermReadResources},
}

// Check returns EFORBIDDEN when role may not do p. A nil role is a request made on
// nobody's behalf (a person's client), which the table does not restrict.
func (t AgentPermissions) Check(role *AgentRole, p Permission) error {
	if role == nil {
		return nil
	}
	if slices.Contains(t[*role], p) {
		return nil
	}
	return Errorf(EFORBIDDEN, "agent role %s may not %s; the agents table of the configuration says what each role may do",
		*role, strings.ReplaceAll(string(p), "_", " "))
}

// ToolPolicy says what happens to a tool call when its request is stored.
type ToolPolicy string

// The tool policies.
const (
	PolicyAutoApprove     ToolPolicy = "AUTO_APPROVE"
	PolicyRequireApproval ToolPolicy = "REQUIRE_APPROVAL"
	PolicyDeny            ToolPolicy = "DENY"
)

// ToolPolicyValues lists every tool policy.
var ToolPolicyValues = []ToolPolicy{PolicyAutoApprove, PolicyRequireApproval, PolicyDeny}

// ParseToolPolicy accepts a policy in the API's spelling or in lower case.
func ParseToolPolicy(s string) (ToolPolicy, error) {
	p := ToolPolicy(strings.ToUpper(strings.ReplaceAll(s, "-", "_")))
	if !slices.Contains(ToolPolicyValues, p) {
		return "", Errorf(EINVALID, "%q is not a tool policy; use AUTO_APPROVE, REQUIRE_APPROVAL or DENY", s)
	}
	return p, nil
}

// ToolPolicies decides, per tool name, what happens to a call when its request is
// stored. Names are matched exactly first, then against glob patterns (path.Match
// syntax: "mcp__github__*"), the longest matching pattern winning; a name matching
// nothing gets Default.
type ToolPolicies struct {
	Default ToolPolicy
	Rules   map[string]ToolPolicy
}

// PolicyDecidedBy is the decidedBy of a decision a policy made.
const PolicyDecidedBy = "policy"

// PolicyFor returns the policy for a tool and the rule that gave it ("" for the default).
func (p ToolPolicies) PolicyFor(name string) (ToolPolicy, string) {
	if pol, ok := p.Rules[name]; ok {
		return pol, name
	}
	best := ""
	for pattern := range p.Rules {
		if !strings.ContainsAny(pattern, "*?[") || len(pattern) < len(best) {
			continue
		}
		if ok, _ := path.Match(pattern, name); ok && (len(pattern) > len(best) || pattern < best) {
			best = pattern
		}
	}
	if best != "" {
		return p.Rules[best], best
	}
	if p.Default == "" {
		return PolicyRequireApproval, ""
	}
	return p.Default, ""
}

// Apply decides the pending, undecided calls of a request being stored, at time now:
// AUTO_APPROVE approves, DENY denies (decidedBy "policy", with the rule as reason),
// REQUIRE_APPROVAL leaves them pending for a person or agent to decide.
func (p ToolPolicies) Apply(calls []ToolCall, now time.Time) {
	for i := range calls {
		c := &calls[i]
		if c.ApprovalStatus != ApprovalPending || c.Decision != nil {
			continue
		}
		pol, rule := p.PolicyFor(c.Name)
		var status ApprovalStatus
		switch pol {
		case PolicyAutoApprove:
			status = ApprovalApproved
		case PolicyDeny:
			status = ApprovalDenied
		default:
			continue
		}
		c.ApprovalStatus = status
		c.Decision = &ApprovalDecision{Status: status, DecidedBy: PolicyDecidedBy, Reason: policyReason(pol, rule), DecidedAt: now}
	}
}

// policyReason names a policy and the rule that gave it ("" for the default).
func policyReason(pol ToolPolicy, rule string) string {
	if rule == "" {
		return fmt.Sprintf("tool policy %s (default)", pol)
	}
	return fmt.Sprintf("tool policy %s for %q", pol, rule)
}

// AwaitingToolCall is an approved tool call that has no result yet: work for the client
// that owns the tool.
type AwaitingToolCall struct {
	ConversationID string
	// Message is the tool request that holds the call.
	Message *ToolRequestMessage
	Call    ToolCall
	// ClaimedBy and ClaimExpiresAt name the worker running the call, if one claimed it.
	ClaimedBy      *string
	ClaimExpiresAt *time.Time
	// ClaimLapsed says the claim had expired when the call was read, by the database's
	// clock (the one claims are checked against): the call is free to claim again.
	ClaimLapsed bool
}

// AwaitingFilter selects awaiting tool calls.
type AwaitingFilter struct {
	// ConversationID limits the calls to one conversation ("" for all).
	ConversationID string
	// Names limits the calls to these tools (empty for all).
	Names []string
	// Unclaimed leaves out calls whose claim has not expired.
	Unclaimed bool
	// Limit bounds how many are returned (DefaultPageSize when zero).
	Limit int
	// MaxBytes bounds the stored bytes of the tool request messages the calls returned
	// hold, each counted once (0: no bound): the list ends early, as a page does
	// (FitsBudget), and always holds a call. Bytes is what the calls returned hold.
	MaxBytes int
}

// ToolCallClaim is a worker's claim on an awaiting call.
type ToolCallClaim struct {
	MessageID  string
	ToolCallID string
	Worker     string
	// Lease is how long the claim lasts: nil for DefaultToolCallLease.
	Lease *time.Duration
}

// ToolWorkService lets the clients that own tools find and claim approved calls.
type ToolWorkService interface {
	// FindAwaitingToolCalls returns approved calls without a result, oldest decision
	// first. Returns ENOTFOUND for a missing conversation, EINVALID for a bad limit.
	FindAwaitingToolCalls(ctx context.Context, f AwaitingFilter) ([]*AwaitingToolCall, error)
	// ClaimToolCall gives a worker an approved, unanswered call for a lease, so other
	// workers leave it alone. Returns ENOTFOUND for a missing message or call, ECONFLICT
	// when the call is not approved, has a result, or is claimed by another worker whose
	// lease has not expired; the same worker may renew its claim.
	ClaimToolCall(ctx context.Context, c ToolCallClaim) (*AwaitingToolCall, error)
}

// ProcessingService runs the processing steps. Every step stores its outcome on the
// message, success or failure (status FAILED with a reason and whether a retry can
// help), and announces the change to messageUpdated subscribers; a step may be run
// again, which replaces the stored outcome.
type ProcessingService interface {
	// ResolveFileReference reads the referenced file (or its line range) under the
	// workspace root. Returns ENOTFOUND for a missing message, EINVALID for a message
	// that is not a file reference, EFORBIDDEN when agent may not read files (nothing
	// is read or stored). A file that cannot be read is a stored failure, not an error.
	ResolveFileReference(ctx context.Context, messageID string, agent *AgentRole) (*FileReferenceMessage, error)
	// RecognizeImage recognizes an image by OCR, vision or AUTO (mode nil: the
	// message's own mode). Returns ENOTFOUND, EINVALID for a message that is not an
	// image, EFORBIDDEN as above. Recognition failures are stored.
	RecognizeImage(ctx context.Context, messageID string, mode *RecognitionMode, agent *AgentRole) (*ImageMessage, error)
	// InjectMCPResource adds an MCPResourceMessage holding the resource uri of the named
	// MCP server as the conversation's next message; the content of the latest such
	// message of the conversation is reused while fresh (its retrievedAt is kept).
	// Returns ENOTFOUND for a missing conversation or resource, EINVALID for an unknown
	// server or a bad uri, EUNAVAILABLE when the server cannot be reached, EFORBIDDEN.
	InjectMCPResource(ctx context.Context, conversationID, server, uri string, agent *AgentRole) (*MCPResourceMessage, error)
	// SubscribeAwaitingToolCalls streams approved calls without a result matching f:
	// first those awaiting now, then each as it is approved (or added already
	// approved), each once. The stream ends when ctx ends.
	SubscribeAwaitingToolCalls(ctx context.Context, f AwaitingFilter) (<-chan *AwaitingToolCall, error)
}

// ProcessingStore is what processing needs from storage.
type ProcessingStore interface {
	FindMessageByID(ctx context.Context, id string) (Message, error)
	// SetFileResolution stores the outcome of reading a file reference. ENOTFOUND,
	// EINVALID for a message of another kind.
	SetFileResolution(ctx context.Context, messageID string, r FileResolution) (*FileReferenceMessage, error)
	// SetImageRecognition stores the outcome of recognizing an image. ENOTFOUND,
	// EINVALID for a message of another kind.
	SetImageRecognition(ctx context.Context, messageID string, r ImageRecognition) (*ImageMessage, error)
	// AddCachedMCPResource adds a copy of the conversation's latest MCPResourceMessage
	// for server and uri if it was retrieved less than maxAge ago, and reports whether
	// it found one. ENOTFOUND for a missing conversation.
	AddCachedMCPResource(ctx context.Context, conversationID, server, uri string, maxAge time.Duration) (*MCPResourceMessage, bool, error)
	// AddMessage stores a message (see MessageService).
	AddMessage(ctx context.Context, conversationID string, m Message) (Message, error)
	// FindAwaitingToolCalls: see ToolWorkService.
	FindAwaitingToolCalls(ctx context.Context, f AwaitingFilter) ([]*AwaitingToolCall, error)
}

// FileContent is what reading a file reference found.
type FileContent struct {
	Content      string
	Truncated    bool
	OriginalSize int
}

// FileReader reads files under the workspace root.
type FileReader interface {
	// ReadReference reads a file, or the lines start..end of it (1-indexed, inclusive;
	// nil for the file's first or last line), numbering each line when a range is given.
	// Its errors are *ProcessingError for outcomes to store (no such file, binary,
	// outside the workspace, bad range), anything else for faults.
	ReadReference(ctx context.Context, path string, start, end *int) (FileContent, error)
	// ReadFile returns the bytes of a file under the workspace root, at most max bytes
	// (a larger file is a *ProcessingError).
	ReadFile(ctx context.Context, path string, max int64) ([]byte, error)
}

// Error implements error, so that a reader can return the failure to store.
func (e *ProcessingError) Error() string { return e.Message }

// ImageData is an image's bytes and its media type, checked by content.
type ImageData struct {
	Bytes     []byte
	MediaType string
}

// ImageFetcher fetches images given by URL.
type ImageFetcher interface {
	// FetchImage downloads url within the configured size and time limits, refusing
	// private addresses unless allowed. Failures are *ProcessingError.
	FetchImage(ctx context.Context, url string) (ImageData, error)
}

// OCRResult is what OCR found in an image.
type OCRResult struct {
	Text string
	// Confidence is the mean word confidence, from 0 to 1.
	Confidence *float64
	// Language is the OCR language model(s) used (Tesseract's codes, e.g. "eng").
	Language string
	// Script is the detected script (e.g. "Latin"), "" when it could not be told.
	Script string
}

// OCR reads text in images.
type OCR interface {
	// Recognize returns the text in img. Failures are *ProcessingError.
	Recognize(ctx context.Context, img ImageData) (OCRResult, error)
}

// VisionResult is what a vision model said about an image.
type VisionResult struct {
	// Analysis is the model's description of the image; Text the text it read in it.
	Analysis string
	Text     string
	Model    string
}

// Vision asks a vision-capable model about images.
type Vision interface {
	// Available says whether the configured model can see images, and why not.
	Available() (bool, string)
	// Analyze describes img and extracts its text. Failures are *ProcessingError.
	Analyze(ctx context.Context, img ImageData) (VisionResult, error)
}

// MCPResource is a resource read from an MCP server.
type MCPResource struct {
	Text      string
	MimeType  string
	Truncated bool
}

// ResourceReader reads resources from the configured MCP servers.
type ResourceReader interface {
	// ReadResource reads uri from the named server. Returns EINVALID for an unknown
	// server, ENOTFOUND for a resource the server does not have, EUNAVAILABLE when the
	// server cannot be reached.
	ReadResource(ctx context.Context, server, uri string) (MCPResource, error)
	// TTL is how long content read from the server stays fresh.
	TTL(server string) time.Duration
}
