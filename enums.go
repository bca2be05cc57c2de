package parley

import (
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
)

// Role says who a message speaks for: the six roles of seed 002. Its Go value is the
// lower-case word stored in the database; the API spells it in upper case.
type Role string

// The roles.
const (
	RoleUser       Role = "user"
	RoleAssistant  Role = "assistant"
	RoleSupervisor Role = "supervisor"
	RoleDocument   Role = "document"
	RoleInvocation Role = "invocation"
	RoleResult     Role = "result"
)

// Roles lists every role, in the API's order.
var Roles = []Role{RoleUser, RoleAssistant, RoleSupervisor, RoleDocument, RoleInvocation, RoleResult}

// Valid reports whether r is one of the six roles.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// ParseRole accepts a role in the API's spelling (USER) or the stored one (user).
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(s))
	if !r.Valid() {
		return "", Errorf(EINVALID, "%q is not a role; use one of USER, ASSISTANT, SUPERVISOR, DOCUMENT, INVOCATION, RESULT", s)
	}
	return r, nil
}

// String returns the API spelling.
func (r Role) String() string { return strings.ToUpper(string(r)) }

// Label is the role's display label (seed 004): a tool request reads "Tool Call".
func (r Role) Label() string {
	switch r {
	case RoleUser:
		return "User" // the roles' labels as constants: a page writes one a message
	case RoleAssistant:
		return "Assistant"
	case RoleSupervisor:
		return "Supervisor"
	case RoleDocument:
		return "Document"
	case RoleInvocation:
		return "Tool Call"
	case RoleResult:
		return "Tool Result"
	case "":
		return ""
	}
	return strings.ToUpper(string(r[:1])) + string(r[1:])
}

// Value stores the role as its lower-case word.
func (r Role) Value() (driver.Value, error) { return string(r), nil }

// Scan reads a stored role.
func (r *Role) Scan(src any) error {
	switch v := src.(type) {
	case string:
		*r = Role(v)
	case []byte:
		*r = Role(v)
	default:
		return fmt.Errorf("scan role from %T", src)
	}
	return nil
}

// PartKind tells a text part meant for the reader from the model's reasoning.
type PartKind string

// The part kinds.
const (
	PartText     PartKind = "TEXT"
	PartThinking PartKind = "THINKING"
	// PartRedactedThinking is thinking the provider encrypted (Anthropic's
	// redacted_thinking): its Signature holds the data, to be sent back unmodified.
	PartRedactedThinking PartKind = "REDACTED_THINKING"
	// PartServerTool is a block of a tool the provider ran itself (Anthropic's
	// server_tool_use, web_search_tool_result...): its Raw is the block as produced,
	// sent back to that provider as it was.
	PartServerTool PartKind = "SERVER_TOOL"
	// PartImage is an image inside a tool result (Anthropic's image block in a
	// tool_result's content), kept where the tool gave it: its Raw is the image block,
	// {"type":"image","source":{...}}, with the source Anthropic's API takes.
	PartImage PartKind = "IMAGE"
)

// PartKinds lists every part kind.
var PartKinds = []PartKind{PartText, PartThinking, PartRedactedThinking, PartServerTool, PartImage}

// ImageSourceKind says where an image's bytes are.
type ImageSourceKind string

// The image sources.
const (
	ImageURL      ImageSourceKind = "URL"
	ImageBase64   ImageSourceKind = "BASE64"
	ImageFilePath ImageSourceKind = "FILE_PATH"
)

// ImageSourceKinds lists every image source kind.
var ImageSourceKinds = []ImageSourceKind{ImageURL, ImageBase64, ImageFilePath}

// RecognitionMode says how an image is to be read: by a vision model, by OCR, or by
// vision with OCR as the fallback.
type RecognitionMode string

// The recognition modes.
const (
	RecognitionVision RecognitionMode = "VISION"
	RecognitionOCR    RecognitionMode = "OCR"
	RecognitionAuto   RecognitionMode = "AUTO"
)

// RecognitionModes lists every recognition mode.
var RecognitionModes = []RecognitionMode{RecognitionVision, RecognitionOCR, RecognitionAuto}

// ProcessingStatus is the outcome of a processing step stored on a message.
type ProcessingStatus string

// The processing outcomes.
const (
	ProcessingCompleted ProcessingStatus = "COMPLETED"
	ProcessingFailed    ProcessingStatus = "FAILED"
)

// ProcessingStatuses lists every processing status.
var ProcessingStatuses = []ProcessingStatus{ProcessingCompleted, ProcessingFailed}

// ApprovalStatus is where a tool call stands in the approval flow.
type ApprovalStatus string

// The approval statuses.
const (
	ApprovalPending  ApprovalStatus = "PENDING"
	ApprovalApproved ApprovalStatus = "APPROVED"
	ApprovalDenied   ApprovalStatus = "DENIED"
)

// ApprovalStatuses lists every approval status.
var ApprovalStatuses = []ApprovalStatus{ApprovalPending, ApprovalApproved, ApprovalDenied}

// ToolResultStatus says whether a tool ran successfully.
type ToolResultStatus string

// The tool result statuses.
const (
	ToolSuccess ToolResultStatus = "SUCCESS"
	ToolError   ToolResultStatus = "ERROR"
)

// ToolResultStatuses lists every tool result status.
var ToolResultStatuses = []ToolResultStatus{ToolSuccess, ToolError}

// ControlKind is the kind of a system control event.
type ControlKind string

// The control kinds.
const (
	ControlModeChange   ControlKind = "MODE_CHANGE"
	ControlBranchSwitch ControlKind = "BRANCH_SWITCH"
)

// ControlKinds lists every control kind.
var ControlKinds = []ControlKind{ControlModeChange, ControlBranchSwitch}
