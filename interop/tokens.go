package interop

import (
	"encoding/base64"
	"image"
	_ "image/gif" // image.DecodeConfig reads the sizes of the types providers accept
	_ "image/jpeg"
	_ "image/png"
	"strings"
	"unicode/utf8"

	"github.com/parley-dev/parley"
)

// Tokens are estimated, not counted with a provider's tokenizer: Anthropic publishes
// none for its current models, OpenAI's differ by model, and a budget is only useful
// with a margin anyway. The estimate leans high for text so that a history that fits
// the estimate fits the model.
const (
	// messageOverhead is the framing of one message or tool call (role, ids, JSON).
	messageOverhead = 4
	// imageTokensMax is what an image costs at most: Anthropic's cost of an image at
	// its recommended largest size (1.15 megapixels); OpenAI charges less.
	imageTokensMax = 1600
	// pixelsPerToken is Anthropic's rule: tokens = width × height / 750.
	pixelsPerToken = 750
)

// TokenCounting states how EstimateTokens counts, for reports.
const TokenCounting = "Estimated, not counted with a provider's tokenizer: each text (message text, " +
	"tool arguments and results, document headers) costs ceil(ASCII bytes / 4) plus one token per " +
	"non-ASCII character; each message and each tool call adds 4 tokens of framing; an image costs " +
	"ceil(width × height / 750) tokens, at most 1,600, and 1,600 when its size is unknown. Real " +
	"counts vary by model: leave a margin of a few percent."

// EstimateText estimates the tokens of a text: a quarter token per ASCII byte (English
// averages about four characters a token) and a whole token per other character (CJK,
// emoji and accented text take one or more tokens each).
func EstimateText(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		// Eight ASCII bytes at a time: a transcript's estimate counts every byte of
		// its history, most of it ASCII (a byte at a time, this was 1.7% of an
		// export's CPU).
		for i+8 <= len(s) && load8(s, i)&highBits == 0 {
			ascii += 8
			i += 8
		}
		if i == len(s) {
			break
		}
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		other++
		i += size
	}
	return (ascii+3)/4 + other
}

// highBits marks the high bit of each byte of a word: set only in a byte that is not
// ASCII.
const highBits = 0x8080808080808080

// load8 is the eight bytes of s from i as a word (the compiler makes one load of it).
func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// EstimateTokens estimates what a message costs in a transcript for an LLM.
func EstimateTokens(m parley.Message) int {
	switch m := m.(type) {
	case *parley.TextMessage:
		return messageOverhead + EstimateText(m.Text()) + EstimateText(m.Thinking())
	case *parley.ImageMessage:
		if asImage, text := m.LLMContent(); !asImage {
			return messageOverhead + EstimateText(text)
		}
		return messageOverhead + imageTokens(m.Source)
	case *parley.FileReferenceMessage, *parley.MCPResourceMessage:
		text, _ := parley.ContextText(m)
		return messageOverhead + EstimateText(text)
	case *parley.ToolRequestMessage:
		n := messageOverhead + EstimateText(m.Text()) + EstimateText(m.Thinking())
		for _, c := range m.ToolCalls {
			n += messageOverhead + EstimateText(c.Name) + EstimateText(string(c.Arguments))
		}
		return n
	case *parley.ToolResultMessage:
		return messageOverhead + EstimateText(m.ResultText())
	case *parley.CompactionMessage:
		if len(m.Data) > 0 {
			return messageOverhead + EstimateText(string(m.Data))
		}
		return messageOverhead + EstimateText(m.Text())
	case *parley.UnknownMessage:
		return messageOverhead + EstimateText(string(m.Raw))
	case *parley.SystemControlMessage:
		return 0
	}
	return messageOverhead
}

// imageTokens applies Anthropic's rule to an inline image whose size its header tells.
func imageTokens(s parley.ImageSource) int {
	if s.Data == "" {
		return imageTokensMax
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(s.Data)))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return imageTokensMax
	}
	n := (cfg.Width*cfg.Height + pixelsPerToken - 1) / pixelsPerToken
	return min(n, imageTokensMax)
}
