package interop

import "testing"

// TestSameModel checks the rule by which a provider-bound artifact goes to a model: the
// model that issued it, under any of its names, and no other.
func TestSameModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		issued, target string
		want           bool
	}{
		{"unknown issuer", "", "claude-sonnet-4-5", true},
		{"unknown target", "claude-sonnet-4-5", "", true},
		{"same name", "claude-opus-4-6", "claude-opus-4-6", true},
		{"case", "Claude-Opus-4-6", "claude-opus-4-6", true},
		{"alias and snapshot", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5", true},
		{"Bedrock id", "claude-sonnet-4-5-20250929", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", true},
		{"Bedrock id without region", "anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", true},
		{"Vertex id", "claude-sonnet-4-5@20250929", "claude-sonnet-4-5-20250929", true},
		{"OpenAI snapshot", "gpt-5-2025-08-07", "gpt-5", true},
		{"Gemini resource name", "models/gemini-2.5-pro", "gemini-2.5-pro", true},
		{"two snapshots of one alias", "claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20241022", false},
		{"another model of the family", "claude-opus-4-6", "claude-opus-4-5", false},
		{"another size", "claude-sonnet-4-5", "claude-haiku-4-5", false},
		{"a moving alias", "claude-3-7-sonnet-20250219", "claude-3-7-sonnet-latest", false},
		{"Gemini previews", "gemini-2.5-flash-preview-05-20", "gemini-2.5-flash-preview-04-17", false},
		{"Gemini generations", "gemini-2.5-pro", "gemini-3-pro-preview", false},
		{"a version that is the model's name", "deepseek-v3", "deepseek-v2", false},
	} {
		if got := sameModel(tc.issued, tc.target); got != tc.want {
			t.Errorf("%s: sameModel(%q, %q) = %v, want %v", tc.name, tc.issued, tc.target, got, tc.want)
		}
	}
}
