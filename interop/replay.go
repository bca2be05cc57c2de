package interop

import (
	"fmt"
	"strings"

	"github.com/parley-dev/parley"
	"github.com/parley-dev/parley/interop/anthropic"
	"github.com/parley-dev/parley/interop/openai"
)

// Artifact names, as reported.
const (
	artifactSignedThinking   = "signed thinking"
	artifactRedactedThinking = "redacted thinking"
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

// replay keeps the provider-bound artifacts of msgs (thinking signatures, redacted
// thinking) only where the target can verify them: Anthropic's, sent to Anthropic, by
// the model that issued them when both that model and the target's are known. The
// others are dropped, or, with ForeignReasoningAsText, their readable thinking is sent
// as assistant text; each is reported in rep.Artifacts. A message whose provenance is
// unknown (imported from a format that does not say) keeps its artifacts: nothing says
// they are foreign. msgs is not changed; changed messages are copies.
func replay(msgs []parley.Message, format parley.TranscriptFormat, opts parley.TranscriptOptions, rep *parley.TranscriptReport) []parley.Message {
	target := targetProvider(format)
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
		parts, before, changed := replayParts(m, *body, target, opts, rep)
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
			// The calls stay where they were among the parts that are left.
			c.ToolCalls = append([]parley.ToolCall(nil), m.ToolCalls...)
			for j := range c.ToolCalls {
				if at := c.ToolCalls[j].PartIndex; at != nil {
					n := before[*at]
					c.ToolCalls[j].PartIndex = &n
				}
			}
			out[i] = &c
		}
	}
	return out
}

// replayParts returns the parts of m that go to target, and for each i how many of
// them came from body.Parts[:i].
func replayParts(m parley.Message, body parley.Body, target string, opts parley.TranscriptOptions, rep *parley.TranscriptReport) (kept []parley.Part, before []int, changed bool) {
	before = make([]int, 0, len(body.Parts)+1)
	defer func() { before = append(before, len(kept)) }()
	for _, p := range body.Parts {
		before = append(before, len(kept))
		artifact := ""
		switch {
		case p.Kind == parley.PartRedactedThinking:
			artifact = artifactRedactedThinking
		case p.Kind == parley.PartThinking && p.Signature != "":
			artifact = artifactSignedThinking
		}
		if artifact == "" {
			kept = append(kept, p)
			continue
		}
		reason := foreignReason(m.Meta().Provenance(), target, opts.Model)
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

// foreignReason says why an Anthropic-bound artifact of a message with provenance prov
// cannot be sent to target (and model, when given), or "" when it can.
func foreignReason(prov *parley.Provenance, target, model string) string {
	origin, issuer := anthropic.Provider, ""
	if prov != nil {
		if prov.Provider != "" {
			origin = prov.Provider
		}
		issuer = prov.Model
	}
	by := origin
	if issuer != "" {
		by = fmt.Sprintf("%s (%s)", origin, issuer)
	}
	switch {
	case origin != anthropic.Provider:
		return fmt.Sprintf("issued by %s; only thinking that Anthropic signed is sent back", by)
	case target != anthropic.Provider:
		return fmt.Sprintf("issued by %s; %s cannot verify it and takes no thinking back", by, target)
	case model != "" && issuer != "" && issuer != model:
		return fmt.Sprintf("issued by %s; a signature is only valid for the model that issued it, not %s", by, model)
	}
	return ""
}
