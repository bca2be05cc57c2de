package parley

import (
	"encoding/json"
	"strings"
)

// KindCompaction is the kind of a CompactionMessage.
const KindCompaction MessageKind = "compaction"

// The providers whose own compaction output a CompactionMessage can carry.
const (
	// CompactionAnthropic is a Messages API `compaction` content block.
	CompactionAnthropic = "anthropic"
	// CompactionOpenAI is a Responses API `compaction` item.
	CompactionOpenAI = "openai"
)

// CompactionMessage stands in, for an LLM, for the messages it covers: a summary the
// client wrote (any provider takes it, as text), or a provider's own compaction output,
// kept exactly as given and sent back only to that provider. Nothing is deleted: the
// messages it covers stay in the history, paged and viewable; exports for an LLM start
// at the newest compaction the target provider takes.
type CompactionMessage struct {
	MessageMeta
	// Body is the summary (for a provider's compaction, the readable summary it gave,
	// if any).
	Body
	// Provider is whose compaction output Data is: "" for a summary the client wrote,
	// CompactionAnthropic or CompactionOpenAI.
	Provider string
	// Data is the provider's block or item, byte for byte as given ("" for a summary).
	Data JSON
	// CoversThrough is the position of the last message it covers, from the first: 0
	// means every message before it.
	CoversThrough int
}

// Kind implements Message.
func (*CompactionMessage) Kind() MessageKind { return KindCompaction }

// Label implements Message.
func (*CompactionMessage) Label() string { return "Compaction" }

// Covers is the position of the last message the compaction covers.
func (m *CompactionMessage) Covers() int {
	if m.CoversThrough > 0 && (m.Position == 0 || m.CoversThrough < m.Position) {
		return m.CoversThrough
	}
	return m.Position - 1
}

// ProviderName is Provider, nil for a client's summary.
func (m *CompactionMessage) ProviderName() *string {
	if m.Provider == "" {
		return nil
	}
	return &m.Provider
}

// ProviderData is Data, nil for a client's summary.
func (m *CompactionMessage) ProviderData() JSON {
	if len(m.Data) == 0 {
		return nil
	}
	return m.Data
}

// ValidFor reports whether a transcript in format can start from the compaction: a
// client's summary suits every LLM format, a provider's output only its own API.
func (m *CompactionMessage) ValidFor(format TranscriptFormat) bool {
	switch m.Provider {
	case "":
		return format.ForLLM() && strings.TrimSpace(m.Text()) != ""
	case CompactionAnthropic:
		return format == TranscriptAnthropicMessages
	case CompactionOpenAI:
		return format == TranscriptOpenAIResponses
	}
	return false
}

// CheckCompactionCovers refuses a compaction, once numbered, that covers itself or
// messages after it.
func CheckCompactionCovers(m *CompactionMessage) error {
	if m.CoversThrough >= m.Position {
		return Errorf(EINVALID, "compaction.coversThrough: %d is not before the compaction, which is stored at position %d", m.CoversThrough, m.Position)
	}
	return nil
}

// CompactionProviders lists the values CompactionMessage.Provider may take.
var CompactionProviders = []string{"", CompactionAnthropic, CompactionOpenAI}

func (m *CompactionMessage) prepare(lim Limits) error {
	m.Role = RoleSupervisor
	if err := m.Body.checkSize("compaction", lim.MaxMessageTextBytes); err != nil {
		return err
	}
	if len(m.Data) > lim.MaxMessageTextBytes {
		return Errorf(EMESSAGETOOLARGE, "compaction.providerData: %d bytes, more than the %d allowed in one message", len(m.Data), lim.MaxMessageTextBytes)
	}
	if m.CoversThrough < 0 {
		return Errorf(EINVALID, "compaction.coversThrough: %d is not a message position", m.CoversThrough)
	}
	if err := m.Body.prepare("compaction"); err != nil {
		return err
	}
	switch m.Provider {
	case "":
		if len(m.Data) > 0 {
			return Errorf(EINVALID, "compaction.providerData: give the provider whose compaction output it is (%s, %s)", CompactionAnthropic, CompactionOpenAI)
		}
		if strings.TrimSpace(m.Text()) == "" {
			return Errorf(EINVALID, "compaction.content: a compaction needs a summary, or a provider's compaction output")
		}
		return nil
	case CompactionAnthropic, CompactionOpenAI:
		if len(m.Data) == 0 {
			return Errorf(EINVALID, "compaction.providerData: give the %s compaction output, as the JSON text the API returned", m.Provider)
		}
	default:
		return Errorf(EINVALID, "compaction.provider: %q is not %s or %s", truncateForError(m.Provider), CompactionAnthropic, CompactionOpenAI)
	}
	if err := checkJSON("compaction.providerData", m.Data); err != nil {
		return err
	}
	var item struct {
		Type             string  `json:"type"`
		EncryptedContent *string `json:"encrypted_content"`
		Content          *string `json:"content"`
	}
	if json.Unmarshal(m.Data, &item) != nil || item.Type != "compaction" {
		return Errorf(EINVALID, `compaction.providerData: a %s compaction is a JSON object of "type": "compaction"`, m.Provider)
	}
	if m.Provider == CompactionOpenAI && (item.EncryptedContent == nil || *item.EncryptedContent == "") {
		return Errorf(EINVALID, "compaction.providerData: an OpenAI compaction item has encrypted_content")
	}
	if m.Provider == CompactionAnthropic && len(m.Body.Parts) == 0 && item.Content != nil {
		// The block's summary is readable: it is what people see of it.
		text, err := CleanText("compaction.providerData.content", *item.Content)
		if err != nil {
			return err
		}
		m.Body = TextBody(text)
	}
	return nil
}
