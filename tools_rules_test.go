package parley_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
)

func ptr[T any](v T) *T { return &v }

func TestCheckPage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		page        parley.PageRequest
		first, last *int
		err         string
	}{
		{name: "neither: the default", first: ptr(parley.DefaultPageSize)},
		{name: "first", page: parley.PageRequest{First: ptr(10)}, first: ptr(10)},
		{name: "last alone gets no first", page: parley.PageRequest{Last: ptr(3)}, last: ptr(3)},
		{name: "zero", page: parley.PageRequest{First: ptr(0)}, first: ptr(0)},
		{name: "the maximum", page: parley.PageRequest{Last: ptr(parley.MaxPageSize)}, last: ptr(parley.MaxPageSize)},
		{name: "negative first", page: parley.PageRequest{First: ptr(-1)}, err: "first: -1 is negative"},
		{name: "negative last", page: parley.PageRequest{First: ptr(1), Last: ptr(-2)}, err: "last: -2 is negative"},
		{name: "too large", page: parley.PageRequest{First: ptr(parley.MaxPageSize + 1)}, err: "first: 1001 is more than the maximum page size 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parley.CheckPage(tt.page)
			if tt.err != "" {
				checkError(t, err, parley.EINVALID, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !samePtr(got.First, tt.first) || !samePtr(got.Last, tt.last) {
				t.Errorf("got first %v last %v, want first %v last %v", deref(got.First), deref(got.Last), deref(tt.first), deref(tt.last))
			}
		})
	}
}

// checkError fails t unless err is a *parley.Error with code and the message msg.
func checkError(t *testing.T, err error, code, msg string) {
	t.Helper()
	if parley.ErrorCode(err) != code || parley.ErrorMessage(err) != msg {
		t.Fatalf("got %v, want %s %q", err, code, msg)
	}
}

func samePtr(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestCleanApprovalDecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    parley.ApprovalDecision
		want parley.ApprovalDecision
		err  string
	}{
		{"approved", parley.ApprovalDecision{Status: parley.ApprovalApproved, DecidedBy: "  ann ", Reason: "ok"},
			parley.ApprovalDecision{Status: parley.ApprovalApproved, DecidedBy: "ann", Reason: "ok"}, ""},
		{"denied", parley.ApprovalDecision{Status: parley.ApprovalDenied}, parley.ApprovalDecision{Status: parley.ApprovalDenied}, ""},
		{"pending is no decision", parley.ApprovalDecision{Status: parley.ApprovalPending}, parley.ApprovalDecision{},
			"status: PENDING is not a decision; use APPROVED or DENIED"},
		{"decidedBy too long", parley.ApprovalDecision{Status: parley.ApprovalDenied, DecidedBy: strings.Repeat("x", 201)},
			parley.ApprovalDecision{}, "decidedBy: 201 bytes, at most 200 allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parley.CleanApprovalDecision(tt.d)
			if tt.err != "" {
				if parley.ErrorMessage(err) != tt.err {
					t.Fatalf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestDecideToolCall(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	request := func() *parley.ToolRequestMessage {
		return &parley.ToolRequestMessage{ToolCalls: []parley.ToolCall{
			{ID: "a", Name: "ls", ApprovalStatus: parley.ApprovalPending},
			{ID: "b", Name: "rm", ApprovalStatus: parley.ApprovalDenied},
			{ID: "i", Name: "ls", ApprovalStatus: parley.ApprovalPending, Imported: true},
			{ID: "j", Name: "rm", ApprovalStatus: parley.ApprovalPending, Imported: true},
			{ID: "k", Name: "rm", ApprovalStatus: parley.ApprovalApproved, Imported: true,
				Decision: &parley.ApprovalDecision{Status: parley.ApprovalApproved, DecidedBy: parley.PolicyDecidedBy}},
		}}
	}
	policies := &parley.ToolPolicies{Default: parley.PolicyRequireApproval, Rules: map[string]parley.ToolPolicy{"rm": parley.PolicyDeny}}
	decision := parley.ApprovalDecision{Status: parley.ApprovalApproved, DecidedBy: "ann"}
	tests := []struct {
		name string
		m    parley.Message
		call string
		code string
	}{
		{"pending call", request(), "a", ""},
		{"already decided", request(), "b", parley.ECONFLICT},
		{"no such call", request(), "c", parley.ENOTFOUND},
		{"not a tool request", &parley.TextMessage{}, "a", parley.EINVALID},
		{"an imported pending call: approving re-opens it", request(), "i", ""},
		{"an imported call its tool's policy denies", request(), "j", parley.EFORBIDDEN},
		{"an imported decision, even one claiming a policy", request(), "k", parley.ECONFLICT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, call, err := parley.DecideToolCall(tt.m, "msg_1", tt.call, decision, now, policies)
			if got := parley.ErrorCode(err); got != tt.code {
				t.Fatalf("code: got %q, want %q (%v)", got, tt.code, err)
			}
			if err != nil {
				return
			}
			if call != req.ToolCall(tt.call) || call.ApprovalStatus != parley.ApprovalApproved {
				t.Fatalf("got call %+v, want the request's call %q approved", call, tt.call)
			}
			if d := call.Decision; d == nil || !d.DecidedAt.Equal(now) || d.DecidedBy != "ann" {
				t.Errorf("decision: got %+v, want ann's at %s", d, now)
			}
			if call.Imported {
				t.Errorf("imported: got true, want false once decided here (re-opened)")
			}
			if other := req.ToolCall("b"); other.ApprovalStatus != parley.ApprovalDenied {
				t.Errorf("other call: got %s, want it untouched", other.ApprovalStatus)
			}
		})
	}
}

func TestCleanToolCallClaim(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		claim parley.ToolCallClaim
		lease time.Duration
		err   string
	}{
		{"default lease", parley.ToolCallClaim{Worker: "w"}, parley.DefaultToolCallLease, ""},
		{"given lease", parley.ToolCallClaim{Worker: "w", Lease: ptr(time.Minute)}, time.Minute, ""},
		{"longest lease", parley.ToolCallClaim{Worker: "w", Lease: ptr(24 * time.Hour)}, 24 * time.Hour, ""},
		{"zero lease", parley.ToolCallClaim{Worker: "w", Lease: ptr(time.Duration(0))}, 0, "leaseSeconds: must be between 1 and 86400"},
		{"lease too long", parley.ToolCallClaim{Worker: "w", Lease: ptr(24*time.Hour + time.Second)}, 0, "leaseSeconds: must be between 1 and 86400"},
		{"no worker", parley.ToolCallClaim{}, 0, "worker: give a name of 1 to 200 bytes"},
		{"worker too long", parley.ToolCallClaim{Worker: strings.Repeat("w", 201)}, 0, "worker: give a name of 1 to 200 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parley.CleanToolCallClaim(tt.claim)
			if tt.err != "" {
				checkError(t, err, parley.EINVALID, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Lease == nil || *got.Lease != tt.lease {
				t.Errorf("lease: got %v, want %s", got.Lease, tt.lease)
			}
		})
	}
}

func TestCheckClaim(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	approved := parley.ToolCallState{ApprovalStatus: parley.ApprovalApproved}
	claimed := func(by string, until time.Time) parley.ToolCallState {
		st := approved
		st.ClaimedBy, st.ClaimExpiresAt = &by, &until
		return st
	}
	tests := []struct {
		name string
		st   parley.ToolCallState
		err  string
	}{
		{"unclaimed", approved, ""},
		{"own claim renewed", claimed("w", now.Add(time.Minute)), ""},
		{"another's expired claim", claimed("x", now.Add(-time.Second)), ""},
		{"another's claim expiring now", claimed("x", now), ""},
		{"another's live claim", claimed("x", now.Add(time.Microsecond)), `tool call "c" is claimed by "x" until 2026-01-02T03:04:05Z`},
		{"pending", parley.ToolCallState{ApprovalStatus: parley.ApprovalPending}, `tool call "c" is PENDING, not APPROVED`},
		{"answered", parley.ToolCallState{ApprovalStatus: parley.ApprovalApproved, Answered: true}, `tool call "c" already has a result`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := parley.CheckClaim("c", tt.st, "w", now)
			if tt.err == "" {
				if err != nil {
					t.Errorf("got %v, want the claim allowed", err)
				}
				return
			}
			checkError(t, err, parley.ECONFLICT, tt.err)
		})
	}
}

func TestResourceFresh(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name      string
		retrieved time.Time
		maxAge    time.Duration
		want      bool
	}{
		{"just now", now, time.Hour, true},
		{"within the age", now.Add(-59 * time.Minute), time.Hour, true},
		{"exactly the age", now.Add(-time.Hour), time.Hour, false},
		{"older", now.Add(-2 * time.Hour), time.Hour, false},
		{"no caching", now, 0, false},
		{"sub-microsecond age counts as none", now, time.Nanosecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parley.ResourceFresh(tt.retrieved, now, tt.maxAge); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCheckResultCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		found      bool
		answeredBy string
		code, msg  string
	}{
		{"open call", true, "", "", ""},
		{"no such call", false, "", parley.EINVALID, `toolResult.toolCallId: no tool call "c" in this conversation; add the tool request first`},
		{"answered", true, "msg_9", parley.ECONFLICT, `toolResult.toolCallId: tool call "c" already has a result (message msg_9)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := parley.CheckResultCall("c", tt.found, tt.answeredBy)
			if parley.ErrorCode(err) != tt.code || parley.ErrorMessage(err) != tt.msg {
				t.Errorf("got %v, want %s %q", err, tt.code, tt.msg)
			}
		})
	}
}

func TestCheckNewToolCalls(t *testing.T) {
	t.Parallel()
	calls := []parley.ToolCall{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	tests := []struct {
		name  string
		taken []string
		msg   string
	}{
		{"none taken", nil, ""},
		{"one taken", []string{"b"}, `toolRequest.toolCalls[1].id: "b" is already used in this conversation`},
		{"the first in the request is named", []string{"c", "b"}, `toolRequest.toolCalls[1].id: "b" is already used in this conversation`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := parley.CheckNewToolCalls(calls, tt.taken)
			if tt.msg == "" {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			checkError(t, err, parley.EINVALID, tt.msg)
		})
	}
}

func TestDenialText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    *parley.ApprovalDecision
		want string
	}{
		{name: "by a policy", d: &parley.ApprovalDecision{Status: parley.ApprovalDenied, DecidedBy: parley.PolicyDecidedBy, Reason: `tool policy DENY for "rm"`},
			want: `A tool policy denied this tool call: tool policy DENY for "rm".`},
		{name: "by a policy, no reason", d: &parley.ApprovalDecision{Status: parley.ApprovalDenied, DecidedBy: parley.PolicyDecidedBy},
			want: "A tool policy denied this tool call."},
		{name: "by a person", d: &parley.ApprovalDecision{Status: parley.ApprovalDenied, DecidedBy: "carol", Reason: "not now"},
			want: "The user denied this tool call. Reason: not now"},
		{name: "no decision recorded", want: "The user denied this tool call."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parley.DenialText(tt.d); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckResultClaim(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later, earlier := now.Add(time.Minute), now.Add(-time.Second)
	w1 := "w1"
	tests := []struct {
		name      string
		claimedBy *string
		expires   *time.Time
		worker    string
		msg       string // "" for accepted
	}{
		{name: "no claim", worker: ""},
		{name: "the claimant", claimedBy: &w1, expires: &later, worker: "w1"},
		{name: "another worker", claimedBy: &w1, expires: &later, worker: "w2",
			msg: `toolResult.worker: tool call "a" is claimed by "w1" until 2026-01-02T03:05:05Z, not by "w2"; only its claimant may add the result while the claim lasts`},
		{name: "no worker named", claimedBy: &w1, expires: &later,
			msg: `toolResult.worker: tool call "a" is claimed by "w1" until 2026-01-02T03:05:05Z; only its claimant may add the result while the claim lasts (name it in worker)`},
		{name: "a lapsed claim", claimedBy: &w1, expires: &earlier, worker: "w2"},
		{name: "expiring now", claimedBy: &w1, expires: &now, worker: "w2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := parley.CheckResultClaim("a", tt.claimedBy, tt.expires, tt.worker, now)
			if tt.msg == "" {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			checkError(t, err, parley.ECLAIMED, tt.msg)
		})
	}
}

func TestApproveAnsweredImport(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	denied := &parley.ApprovalDecision{Status: parley.ApprovalDenied, DecidedBy: "x"}
	tests := []struct {
		name    string
		call    parley.ToolCall
		changed bool
		want    parley.ApprovalStatus
	}{
		{"imported pending", parley.ToolCall{ApprovalStatus: parley.ApprovalPending, Imported: true}, true, parley.ApprovalApproved},
		{"imported denied", parley.ToolCall{ApprovalStatus: parley.ApprovalDenied, Decision: denied, Imported: true}, false, parley.ApprovalDenied},
		{"requested here, pending", parley.ToolCall{ApprovalStatus: parley.ApprovalPending}, false, parley.ApprovalPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.call
			if got := parley.ApproveAnsweredImport(&c, at); got != tt.changed {
				t.Fatalf("changed: got %v, want %v", got, tt.changed)
			}
			if c.ApprovalStatus != tt.want {
				t.Errorf("status: got %s, want %s", c.ApprovalStatus, tt.want)
			}
			if tt.changed && (c.Decision == nil || c.Decision.DecidedBy != parley.ImportDecidedBy || !c.Decision.DecidedAt.Equal(at) || !c.Imported) {
				t.Errorf("decision: got %+v (imported %v), want one by %q at %s, still imported", c.Decision, c.Imported, parley.ImportDecidedBy, at)
			}
		})
	}
}
