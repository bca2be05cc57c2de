package processing_test

import (
	"fmt"
	"strings"
	"testing"
)

// toolCallsAwaitingResult holds at most --max-page-bytes of tool request messages, each
// counted once: the list ends early, always with a call, and a worker asks again.
func TestAwaitingCallsBytesBounded(t *testing.T) {
	t.Parallel()
	e := start(t, "tools:\n  default: AUTO_APPROVE\nlimits:\n  max_page_bytes: 1048576\n")
	conv := e.CreateConversation(t, "large requests")
	const requests, perRequest = 6, 4
	args := map[string]any{"content": strings.Repeat("x", 100<<10)} // 400 KiB a request
	for r := range requests {
		calls := make([]map[string]any, perRequest)
		for i := range calls {
			calls[i] = map[string]any{"id": fmt.Sprintf("r%d-c%d", r, i), "name": "write", "arguments": args}
		}
		e.AddMessage(t, conv, toolRequest(calls...))
	}
	const q = `query($c: ID) { toolCallsAwaitingResult(conversationId: $c, first: 1000) { message { id } toolCall { id } } }`
	var out struct {
		ToolCallsAwaitingResult []struct {
			Message struct{ ID string }
		}
	}
	e.MustDo(t, q, map[string]any{"c": conv}, &out)
	messages := map[string]bool{}
	for _, a := range out.ToolCallsAwaitingResult {
		messages[a.Message.ID] = true
	}
	// 1 MiB holds two requests of about 400 KiB each, with all their calls.
	if got, want := len(out.ToolCallsAwaitingResult), 2*perRequest; got != want || len(messages) != 2 {
		t.Errorf("got %d calls of %d requests, want %d of 2", got, len(messages), want)
	}
}
