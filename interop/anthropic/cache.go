package anthropic

import (
	sdk "github.com/anthropics/anthropic-sdk-go"
)

// placeBreakpoints marks up to n blocks with cache_control, in this order of worth:
//
//  1. the last block of the transcript: the next request, which appends to it, reads
//     the whole of it from the cache;
//  2. the last block of system: it stays valid when a budget's cut moves and the
//     messages after it change;
//  3. and 4. the last block of the user turn before the last one, and of the one before
//     that: where the previous requests of an agent loop ended, so that they are found
//     even when a turn added more blocks than the API looks back over (20).
//
// Thinking blocks cannot carry a breakpoint: the block before one is marked instead.
func placeBreakpoints(system []sdk.TextBlockParam, msgs []outMessage, n int) {
	mark := func(m *outMessage) bool {
		for i := len(m.content) - 1; i >= 0; i-- {
			if m.content[i].cacheable() {
				m.content[i].cache = true
				return true
			}
		}
		return false
	}
	if n <= 0 {
		return
	}
	last := len(msgs) - 1
	if last >= 0 && mark(&msgs[last]) {
		n--
	}
	if n > 0 && len(system) > 0 {
		system[len(system)-1].CacheControl = sdk.NewCacheControlEphemeralParam()
		n--
	}
	for i := last - 1; i >= 0 && n > 0; i-- {
		if msgs[i].role == sdk.MessageParamRoleUser && mark(&msgs[i]) {
			n--
		}
	}
}
