package parley_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley"
)

func TestPrepareImport(t *testing.T) {
	t.Parallel()
	text := func(role parley.Role, content, source string) parley.Message {
		return &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: role, SourceID: source}, Body: parley.TextBody(content)}
	}
	tests := []struct {
		name string
		msgs []parley.ImportedMessage
		ids  []string
		err  string
	}{
		{"ids in order", []parley.ImportedMessage{
			{Message: text(parley.RoleUser, "hi", "u1"), Origin: "line 1"},
			{Message: text(parley.RoleAssistant, "hello", ""), Origin: "line 2"},
			{Message: text(parley.RoleAssistant, "more", "a1"), Origin: "line 3"},
		}, []string{"u1", "a1"}, ""},
		{"duplicate source id", []parley.ImportedMessage{
			{Message: text(parley.RoleUser, "hi", "x"), Origin: "line 1"},
			{Message: text(parley.RoleUser, "again", "x"), Origin: "line 7"},
		}, nil, `line 7: source id "x" is also the id of line 1`},
		{"invalid message names its origin", []parley.ImportedMessage{
			{Message: text(parley.RoleResult, "hi", ""), Origin: "messages[4]"},
		}, nil, "messages[4]: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ids, err := parley.PrepareImport(&parley.Import{Messages: tt.msgs}, parley.DefaultLimits)
			if tt.err != "" {
				if parley.ErrorCode(err) != parley.EINVALID || !strings.HasPrefix(parley.ErrorMessage(err), tt.err) {
					t.Fatalf("got %v, want EINVALID starting %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(ids, ",") != strings.Join(tt.ids, ",") {
				t.Errorf("got %q, want %q", ids, tt.ids)
			}
		})
	}
}

func TestImportTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", parley.MaxTitleLength+5)
	tests := []struct {
		name   string
		target parley.ImportTarget
		source string
		want   string
		err    bool
	}{
		{"into an existing conversation", parley.ImportTarget{ConversationID: "c"}, "ignored", "", false},
		{"asked for", parley.ImportTarget{Title: "Mine"}, "theirs", "Mine", false},
		{"the source's, spaces folded", parley.ImportTarget{}, "  a \n b  ", "a b", false},
		{"the source's, cut to fit", parley.ImportTarget{}, long, strings.Repeat("é", parley.MaxTitleLength-1) + "…", false},
		{"control characters are removed", parley.ImportTarget{}, "bad\x00title", "badtitle", false},
		{"an unusable source title is dropped", parley.ImportTarget{}, "bad\xfftitle", "", false},
		{"an unusable asked-for title is refused", parley.ImportTarget{Title: strings.Repeat("x", parley.MaxTitleLength+1)}, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parley.ImportTitle(tt.target, &parley.Import{Title: tt.source})
			if (err != nil) != tt.err {
				t.Fatalf("got error %v, want error %v", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStoredCopies(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	c := parley.NewStoredCopies()
	c.AddUserTurn(at.Truncate(time.Microsecond), parley.EscapeHTML("a <b>"))
	img := parley.ImageSource{Kind: parley.ImageBase64, Data: "AAAA", MediaType: "image/png"}
	c.AddUserTurn(at, parley.ImageTurnContent(img))
	c.AddResult("call-1", parley.EscapeHTML("done"))
	user := func(role parley.Role, when time.Time, text string) parley.Message {
		return &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: role, CreatedAt: when}, Body: parley.TextBody(text)}
	}
	result := func(call, text string) parley.Message {
		return &parley.ToolResultMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleResult}, ToolCallID: call, Body: parley.TextBody(text)}
	}
	image := func(role parley.Role, src parley.ImageSource) parley.Message {
		return &parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: role, CreatedAt: at}, Source: src}
	}
	tests := []struct {
		name string
		m    parley.Message
		want bool
	}{
		{"same user turn (times to the microsecond)", user(parley.RoleUser, at, "a <b>"), true},
		{"same supervisor turn", user(parley.RoleSupervisor, at, "a <b>"), true},
		{"other text", user(parley.RoleUser, at, "a <c>"), false},
		{"other time", user(parley.RoleUser, at.Add(time.Second), "a <b>"), false},
		{"no time", user(parley.RoleUser, time.Time{}, "a <b>"), false},
		{"an assistant's text is never a copy", user(parley.RoleAssistant, at, "a <b>"), false},
		{"same image", image(parley.RoleUser, img), true},
		{"other image", image(parley.RoleUser, parley.ImageSource{Kind: parley.ImageBase64, Data: "BBBB"}), false},
		{"an assistant's image", image(parley.RoleAssistant, img), false},
		{"same result", result("call-1", "done"), true},
		{"other result text", result("call-1", "other"), false},
		{"result of another call", result("call-2", "done"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := c.Has(tt.m); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	// md5("AAAA"): what Postgres's md5() gives for the stored image, which must match.
	if got, want := parley.ImageTurnContent(img), "image:098890dde069e9abad63f19a0d9e1f32"; got != want {
		t.Errorf("ImageTurnContent: got %q, want %q", got, want)
	}
}

func TestCopyFacts(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msgs := []parley.ImportedMessage{
		{Message: &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleAssistant, CreatedAt: at}}},
		{Message: &parley.ToolResultMessage{ToolCallID: "a"}},
		{Message: &parley.ToolResultMessage{ToolCallID: "b"}},
	}
	if users, calls := parley.CopyFacts(msgs); users || strings.Join(calls, ",") != "a,b" {
		t.Errorf("got %v %q, want no user turns and the calls a,b", users, calls)
	}
	msgs = append(msgs, parley.ImportedMessage{Message: &parley.TextMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser}}})
	if users, _ := parley.CopyFacts(msgs); users {
		t.Error("a user turn without a time: got user turns needed, want not")
	}
	msgs = append(msgs, parley.ImportedMessage{Message: &parley.ImageMessage{MessageMeta: parley.MessageMeta{Role: parley.RoleUser, CreatedAt: at}}})
	if users, _ := parley.CopyFacts(msgs); !users {
		t.Error("a timed user image: got no user turns needed, want them")
	}
}

func TestGrowReply(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	meta := parley.MessageMeta{ID: "msg_1", Position: 7, CreatedAt: at, SourceID: "s"}
	text := func(role parley.Role, parts ...string) *parley.TextMessage {
		m := &parley.TextMessage{MessageMeta: meta}
		m.Role = role
		for _, p := range parts {
			m.Parts = append(m.Parts, parley.Part{Kind: parley.PartText, Text: p})
		}
		return m
	}
	decided := &parley.ApprovalDecision{Status: parley.ApprovalApproved, DecidedBy: "ann", DecidedAt: at}
	request := func(parts []string, calls ...parley.ToolCall) *parley.ToolRequestMessage {
		m := &parley.ToolRequestMessage{MessageMeta: meta, ToolCalls: calls}
		m.Role = parley.RoleInvocation
		for _, p := range parts {
			m.Parts = append(m.Parts, parley.Part{Kind: parley.PartText, Text: p})
		}
		return m
	}
	callA := parley.ToolCall{ID: "a", Name: "ls", ApprovalStatus: parley.ApprovalApproved, Decision: decided}
	freshA := parley.ToolCall{ID: "a", Name: "ls", ApprovalStatus: parley.ApprovalPending}
	callB := parley.ToolCall{ID: "b", Name: "cat", ApprovalStatus: parley.ApprovalPending}
	tests := []struct {
		name     string
		stored   parley.Message
		incoming parley.Message
		ok       bool
		kind     parley.MessageKind
		parts    int
		calls    []string // ids, in order
		added    []string
	}{
		{"more parts", text(parley.RoleAssistant, "a"), text(parley.RoleAssistant, "a", "b"), true, parley.KindText, 2, nil, nil},
		{"text grows into a tool request", text(parley.RoleAssistant, "a"), request([]string{"a"}, callB), true, parley.KindToolRequest, 1, []string{"b"}, []string{"b"}},
		{"more calls keep the stored decisions", request([]string{"a"}, callA), request([]string{"a"}, freshA, callB), true, parley.KindToolRequest, 1, []string{"a", "b"}, []string{"b"}},
		{"same length", text(parley.RoleAssistant, "a"), text(parley.RoleAssistant, "b"), false, "", 0, nil, nil},
		{"shorter", text(parley.RoleAssistant, "a", "b"), text(parley.RoleAssistant, "a"), false, "", 0, nil, nil},
		{"a stored call is missing", request(nil, callA), request([]string{"x"}, callB, parley.ToolCall{ID: "c"}), false, "", 0, nil, nil},
		{"a user's text never grows", text(parley.RoleUser, "a"), text(parley.RoleUser, "a", "b"), false, "", 0, nil, nil},
		{"into a user's stored text", text(parley.RoleUser, "a"), text(parley.RoleAssistant, "a", "b"), false, "", 0, nil, nil},
		{"other kinds", &parley.ToolResultMessage{MessageMeta: meta}, text(parley.RoleAssistant, "a", "b"), false, "", 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, added, ok := parley.GrowReply(tt.stored, tt.incoming)
			if ok != tt.ok {
				t.Fatalf("ok: got %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if got.Kind() != tt.kind {
				t.Errorf("kind: got %s, want %s", got.Kind(), tt.kind)
			}
			gm := got.Meta()
			if gm.ID != meta.ID || gm.Position != meta.Position || !gm.CreatedAt.Equal(at) || gm.SourceID != meta.SourceID {
				t.Errorf("meta: got %+v, want the stored message's id, position, time and source id", gm)
			}
			var calls []parley.ToolCall
			var parts int
			switch g := got.(type) {
			case *parley.ToolRequestMessage:
				calls, parts = g.ToolCalls, len(g.Parts)
				if g.Role != parley.RoleInvocation {
					t.Errorf("role: got %s, want INVOCATION", g.Role)
				}
			case *parley.TextMessage:
				parts = len(g.Parts)
			}
			if parts != tt.parts {
				t.Errorf("parts: got %d, want %d", parts, tt.parts)
			}
			if got, want := callIDs(calls), strings.Join(tt.calls, ","); got != want {
				t.Errorf("calls: got %q, want %q", got, want)
			}
			if got, want := callIDs(added), strings.Join(tt.added, ","); got != want {
				t.Errorf("added: got %q, want %q", got, want)
			}
			for _, c := range calls {
				if c.ID == "a" && (c.ApprovalStatus != parley.ApprovalApproved || c.Decision != decided) {
					t.Errorf("call a: got %s %v, want the stored decision kept", c.ApprovalStatus, c.Decision)
				}
			}
		})
	}
}

func callIDs(calls []parley.ToolCall) string {
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	return strings.Join(ids, ",")
}
