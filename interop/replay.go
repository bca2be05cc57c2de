package interop

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/anthropic"
	"github.com/parley-dev/parley/interop/openai"
)

// Artifact names, as reported.
const (
	artifactSignedThinking   = "signed thinking"
	artifactRedactedThinking = "redacted thinking"
	artifactReasoningItem    = "reasoning item"
	artifactItemID           = "item id"
	artifactServerTool       = "server tool block"
	artifactThoughtSignature = "thought signature"
	actionDropped            = "dropped"
	actionAsText             = "sent as text"
)

// targetProvider is the provider a transcript format is sent to, as provenance names
// providers.
func targetProvider(f parley.TranscriptFormat) string {
	switch f {
	case parley.TranscriptAnthropicMessages:
		return anthropic.Provider
	case parley.TranscriptOpenAIChat, parley.TranscriptOpenAIResponses:
		return openai.Provider
	}
	return ""
}

// replay keeps the provider-bound artifacts of msgs only where the target can verify
// them: Anthropic's signed and redacted thinking sent to Anthropic, OpenAI's reasoning
// items (encrypted_content, item ids) to the Responses API, each by the model that
// issued it when both that model and the target's are known. The others are dropped,
// or, with ForeignReasoningAsText, their readable thinking is sent as assistant text;
// each is reported in rep.Artifacts. Who issued an artifact is its message's provenance;
// without one (an import from a format that does not say), the artifact's own kind: an
// item id is OpenAI's, a signature Anthropic's. msgs is not changed; changed messages
// are copies.
func replay(msgs []parley.Message, format parley.TranscriptFormat, opts parley.TranscriptOptions, rep *parley.TranscriptReport) []parley.Message {
	out := msgs
	copied := false
	for i, m := range msgs {
		var body *parley.Body
		switch m := m.(type) {
		case *parley.TextMessage:
			body = &m.Body
		case *parley.ToolRequestMessage:
			body = &m.Body
		default:
			continue
		}
		parts, before, changed := replayParts(m, *body, format, opts, rep)
		req, isReq := m.(*parley.ToolRequestMessage)
		var calls []parley.ToolCall
		if isReq {
			calls = replayCalls(req, format, opts.Model, rep)
			changed = changed || calls != nil
		}
		if !changed {
			continue
		}
		if !copied {
			out = append([]parley.Message(nil), msgs...)
			copied = true
		}
		switch m := m.(type) {
		case *parley.TextMessage:
			c := *m
			c.Parts = parts
			out[i] = &c
		case *parley.ToolRequestMessage:
			c := *m
			c.Parts = parts
			if calls == nil {
				calls = append([]parley.ToolCall(nil), m.ToolCalls...)
			}
			// The calls stay where they were among the parts that are left.
			for j := range calls {
				if at := calls[j].PartIndex; at != nil {
					n := before[*at]
					calls[j].PartIndex = &n
				}
			}
			c.ToolCalls = calls
			out[i] = &c
		}
	}
	return out
}

// issuer is who issued an artifact of a message with provenance prov: the provider and
// model provenance names, else kind's own provider.
func issuer(prov *parley.Provenance, kind string) (provider, model string) {
	provider = kind
	if prov != nil {
		if prov.Provider != "" {
			provider = prov.Provider
		}
		model = prov.Model
	}
	return provider, model
}

// replayParts returns the parts of m that go to format, and for each i how many of
// them came from body.Parts[:i].
// A body without a provider's artifact, the commonest, is returned as it is.
func replayParts(m parley.Message, body parley.Body, format parley.TranscriptFormat, opts parley.TranscriptOptions, rep *parley.TranscriptReport) (kept []parley.Part, before []int, changed bool) {
	if !slices.ContainsFunc(body.Parts, func(p parley.Part) bool { a, _ := artifactOf(p); return a != "" }) {
		return body.Parts, nil, false
	}
	before = make([]int, 0, len(body.Parts)+1)
	defer func() { before = append(before, len(kept)) }()
	for _, p := range body.Parts {
		before = append(before, len(kept))
		artifact, kind := artifactOf(p)
		if artifact == "" {
			kept = append(kept, p)
			continue
		}
		model := opts.Model
		if artifact == artifactServerTool {
			model = "" // a server tool's result is the provider's, for any of its models
		}
		reason := foreignReason(m.Meta().Provenance(), kind, format, model)
		if reason == "" {
			kept = append(kept, p)
			continue
		}
		changed = true
		a := parley.TranscriptArtifact{MessageID: m.Meta().ID, Position: m.Meta().Position, Artifact: artifact, Action: actionDropped, Reason: reason}
		if opts.ForeignReasoning == parley.ForeignReasoningAsText && strings.TrimSpace(p.Text) != "" {
			a.Action = actionAsText
			kept = append(kept, parley.Part{Kind: parley.PartText, Text: "<thinking>\n" + p.Text + "\n</thinking>"})
		}
		rep.Artifacts = append(rep.Artifacts, a)
	}
	return kept, before, changed
}

// artifactOf returns which of a provider's artifacts p is (artifactSignedThinking...),
// and whose (anthropic.Provider, openai.Provider); "" when it is none.
func artifactOf(p parley.Part) (artifact, kind string) {
	switch {
	case p.Kind == parley.PartRedactedThinking:
		return artifactRedactedThinking, anthropic.Provider
	case p.Kind == parley.PartServerTool:
		return artifactServerTool, anthropic.Provider
	case p.Kind == parley.PartThinking && p.ItemID != "":
		return artifactReasoningItem, openai.Provider
	case p.Kind == parley.PartThinking && p.Signature != "":
		return artifactSignedThinking, anthropic.Provider
	}
	return "", anthropic.Provider
}

// replayCalls returns req's calls without the item ids another provider issued, when
// the format sends item ids (Responses), and without Gemini's thought signatures unless
// Google issued them for model (see sameModel), when the format sends those (Chat
// Completions, which Gemini's OpenAI-compatible API speaks); nil when none changes.
func replayCalls(req *parley.ToolRequestMessage, format parley.TranscriptFormat, model string, rep *parley.TranscriptReport) []parley.ToolCall {
	var out []parley.ToolCall
	drop := func(i int, artifact, reason string) {
		if out == nil {
			out = append([]parley.ToolCall(nil), req.ToolCalls...)
		}
		switch artifact {
		case artifactItemID:
			out[i].ItemID = ""
		case artifactThoughtSignature:
			out[i].ThoughtSignature = ""
		}
		rep.Artifacts = append(rep.Artifacts, parley.TranscriptArtifact{MessageID: req.ID, Position: req.Position,
			Artifact: artifact, Action: actionDropped, Reason: reason})
	}
	for i, c := range req.ToolCalls {
		switch {
		case format == parley.TranscriptOpenAIResponses && c.ItemID != "":
			provider, model := issuer(req.Provenance(), openai.Provider)
			if provider != openai.Provider {
				drop(i, artifactItemID, fmt.Sprintf("the item id of call %q was issued by %s; the API knows only its own", c.ID, by(provider, model)))
			}
		case format == parley.TranscriptOpenAIChat && c.ThoughtSignature != "":
			// Without provenance (an OPENAI_CHAT import) it came from Gemini's API, the
			// only one that gives it.
			provider, issued := issuer(req.Provenance(), providerGoogle)
			switch {
			case !googleProvider(provider):
				drop(i, artifactThoughtSignature, fmt.Sprintf("the thought signature of call %q was issued by %s; only Google verifies it", c.ID, by(provider, issued)))
			case !sameModel(issued, model):
				drop(i, artifactThoughtSignature, fmt.Sprintf("the thought signature of call %q was issued by %s; it is only valid for the model that issued it, not %s",
					c.ID, by(provider, issued), model))
			}
		}
	}
	return out
}

// providerGoogle is Google's provider name, as provenance gives it.
const providerGoogle = "google"

// googleProvider reports whether provenance's provider name is Google's (Gemini's).
func googleProvider(provider string) bool {
	p := strings.ToLower(provider)
	return p == providerGoogle || p == "gemini"
}

func by(provider, model string) string {
	if model == "" {
		return provider
	}
	return fmt.Sprintf("%s (%s)", provider, model)
}

// foreignReason says why an artifact whose kind is the provider kind's, of a message
// with provenance prov, cannot be sent in format (to model, when given), or "" when it
// can.
func foreignReason(prov *parley.Provenance, kind string, format parley.TranscriptFormat, model string) string {
	provider, issued := issuer(prov, kind)
	who := by(provider, issued)
	target := targetProvider(format)
	switch {
	case provider != kind && kind == anthropic.Provider:
		return fmt.Sprintf("issued by %s; only what Anthropic issued is sent back as Anthropic's", who)
	case provider != kind:
		return fmt.Sprintf("issued by %s; only reasoning items that OpenAI issued are sent back", who)
	case target != provider:
		return fmt.Sprintf("issued by %s; %s cannot verify it and takes no such reasoning back", who, target)
	case format == parley.TranscriptOpenAIChat:
		return fmt.Sprintf("issued by %s; Chat Completions takes no reasoning items back (OPENAI_RESPONSES does)", who)
	case !sameModel(issued, model):
		return fmt.Sprintf("issued by %s; it is only valid for the model that issued it, not %s", who, model)
	}
	return ""
}

// Model names, as sameModel reads them: what names the platform a model is served on
// rather than the model, and a snapshot's date.
var (
	// Gemini's resource name (models/gemini-2.5-pro); Bedrock's ids
	// (anthropic.claude-..., us.anthropic.claude-... across regions).
	modelPlatform = regexp.MustCompile(`^(?:models/|(?:[a-z]{2,4}\.)?anthropic\.)`)
	// Bedrock's version (-v1:0).
	modelVersion = regexp.MustCompile(`-v\d+:\d+$`)
	// A snapshot's date: Anthropic's -20250929, Vertex's @20250929, OpenAI's -2025-08-07.
	modelDate = regexp.MustCompile(`(?:[-@])(\d{4})-?(\d{2})-?(\d{2})$`)
)

// sameModel reports whether a provider-bound artifact issued by model issued may go to
// model target: yes when either is unknown (""), else when both name the same model.
// Signatures and encrypted reasoning verify only with the model that made them (Claude
// Code drops thinking when the model changes; Gemini 3 refuses another model's thought
// signatures), so the rule is the same model, not the same family; but a model has
// several names: its alias and the snapshot the API reports (claude-sonnet-4-5 and
// claude-sonnet-4-5-20250929, gpt-5 and gpt-5-2025-08-07), Bedrock's and Vertex's ids
// (us.anthropic.claude-sonnet-4-5-20250929-v1:0, claude-sonnet-4-5@20250929: Anthropic
// signatures are valid across these platforms) and Gemini's resource name
// (models/gemini-2.5-pro). Case aside, names that differ once those are read are
// different models, and so are two snapshots of one alias with different dates
// (claude-3-5-sonnet-20240620 and -20241022). An alias that moves (…-latest) is not a
// snapshot's name: its artifacts go only to the same alias.
func sameModel(issued, target string) bool {
	if issued == "" || target == "" {
		return true
	}
	a, aDate := modelName(issued)
	b, bDate := modelName(target)
	return a == b && (aDate == "" || bDate == "" || aDate == bDate)
}

// modelName reads a model's name into the model and its snapshot's date (YYYYMMDD, ""
// when it names none).
func modelName(s string) (model, date string) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = modelPlatform.ReplaceAllString(s, "")
	s = modelVersion.ReplaceAllString(s, "")
	if m := modelDate.FindStringSubmatchIndex(s); m != nil {
		date = s[m[2]:m[3]] + s[m[4]:m[5]] + s[m[6]:m[7]]
		s = s[:m[0]]
	}
	return s, date
}
