package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/parley-dev/parley/internal/testserver"
)

// xssPayloads are OWASP-style cross-site scripting payloads: tags and event handlers,
// script URLs in every spelling, data URLs, SVG and MathML, entity-encoded and
// unclosed markup, Markdown links, images and raw HTML, and mutation XSS that turns
// harmless-looking markup into script when a browser re-parses it.
var xssPayloads = []string{
	`<script>alert(1)</script>`,
	`<SCRIPT SRC=//evil.example/x.js></SCRIPT>`,
	`<img src=x onerror=alert(1)>`,
	`<img src="x" onerror="alert(1)"/>`,
	`<svg onload=alert(1)>`,
	`<svg><script>alert(1)</script></svg>`,
	`<body onload=alert(1)>`,
	`<iframe src="javascript:alert(1)"></iframe>`,
	`<iframe src="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="></iframe>`,
	`<a href="javascript:alert(1)">x</a>`,
	`<a href="JaVaScRiPt:alert(1)">x</a>`,
	`<a href="jav&#x09;ascript:alert(1)">x</a>`,
	`<a href=" &#14;  javascript:alert(1)">x</a>`,
	`<a href="vbscript:msgbox(1)">x</a>`,
	`"><script>alert(1)</script>`,
	`'><img src=x onerror=alert(1)>`,
	`&lt;script&gt;alert(1)&lt;/script&gt;`,
	`&#60;script&#62;alert(1)&#60;/script&#62;`,
	`\u003cscript\u003ealert(1)\u003c/script\u003e`,
	"`<script>alert(1)</script>`",
	"```html\n<script>alert(1)</script>\n```",
	`<img src=x onerror=alert(1)//`,
	`<script>alert(1)`,
	`<scr<script>ipt>alert(1)</script>`,
	"<scr\u0000ipt>alert(1)</scr\u0000ipt>",
	`[click](javascript:alert(1))`,
	`[click](JAVASCRIPT:alert(1))`,
	`[click](&#106;avascript:alert(1))`,
	`[click](<javascript:alert(1)>)`,
	"[click][r]\n\n[r]: javascript:alert(1)",
	`<javascript:alert(1)>`,
	`![x](javascript:alert(1))`,
	`![x](x" onerror="alert(1))`,
	`[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)`,
	`<div onmouseover="alert(1)">hover</div>`,
	`<details open ontoggle=alert(1)>`,
	`<input autofocus onfocus=alert(1)>`,
	`<form action="javascript:alert(1)"><button>x</button></form>`,
	`<object data="javascript:alert(1)"></object>`,
	`<embed src=javascript:alert(1)>`,
	`<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`,
	`<base href="javascript:alert(1)//">`,
	`<style>@import 'javascript:alert(1)';</style>`,
	`<div style="background:url(javascript:alert(1))">x</div>`,
	`<noscript><p title="</noscript><img src=x onerror=alert(1)>">`,
	`<svg><style><img src=x onerror=alert(1)></style></svg>`,
	`<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`,
	`<a href="https://ok.example" onclick="alert(1)">ok</a>`,
	`*hello* <b onclick=alert(1)>bold</b>`,
}

// scriptURL reports whether a URL attribute's value would run or load script.
func scriptURL(v string) bool {
	v = strings.ToLower(strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return -1
		}
		return r
	}, v))
	return strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "vbscript:") || strings.HasPrefix(v, "data:text/html")
}

// unsafeElements are elements that must never come out of rendering.
var unsafeElements = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Form: true,
	atom.Input: true, atom.Button: true, atom.Base: true, atom.Meta: true, atom.Link: true, atom.Svg: true,
	atom.Math: true, atom.Noscript: true, atom.Body: true, atom.Frame: true, atom.Frameset: true, atom.Template: true,
}

// parseFragment parses s as browsers parse what is set as a div's innerHTML.
func parseFragment(t *testing.T, s string) []*html.Node {
	t.Helper()
	nodes, err := html.ParseFragment(strings.NewReader(s), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return nodes
}

// checkHTML fails t if s, parsed as innerHTML, has an element that runs script, an
// event handler, a style attribute or a script URL.
func checkHTML(t *testing.T, where, s string) {
	t.Helper()
	if strings.Contains(strings.ToLower(s), "<script") {
		t.Errorf("%s: %q contains <script", where, s)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if unsafeElements[n.DataAtom] || n.Namespace != "" {
				t.Errorf("%s: %q has a <%s> element", where, s, n.Data)
			}
			for _, a := range n.Attr {
				key := strings.ToLower(a.Key)
				switch {
				case strings.HasPrefix(key, "on"):
					t.Errorf("%s: %q has an event handler %s", where, s, a.Key)
				case key == "style" || key == "srcdoc" || key == "formaction":
					t.Errorf("%s: %q has a %s attribute", where, s, a.Key)
				case scriptURL(a.Val):
					t.Errorf("%s: %q has a script URL in %s", where, s, a.Key)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range parseFragment(t, s) {
		walk(n)
	}
}

// checkContent fails t unless s, parsed as innerHTML, is text only: content is the
// escaped text, in which no markup survives.
func checkContent(t *testing.T, where, s string) {
	t.Helper()
	for _, n := range parseFragment(t, s) {
		if n.Type != html.TextNode {
			t.Errorf("%s: %q is not text only when parsed as HTML: it has a %s node", where, s, n.Data)
		}
	}
}

// checkRendered walks a response's data and checks every "content" (escaped text only)
// and "html" (safe markup) in it. It returns how many it checked.
func checkRendered(t *testing.T, where string, v any) int {
	t.Helper()
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			s, isString := e.(string)
			switch {
			case k == "content" && isString:
				checkContent(t, where+".content", s)
				n++
			case k == "html" && isString:
				checkHTML(t, where+".html", s)
				n++
			default:
				n += checkRendered(t, where+"."+k, e)
			}
		}
	case []any:
		for i, e := range v {
			n += checkRendered(t, fmt.Sprintf("%s[%d]", where, i), e)
		}
	}
	return n
}

// nodeSelection asks for every text a message can have.
const nodeSelection = `__typename
	... on TextBearing { content text html }
	... on TextMessage { parts { content text html signature } thinking }
	... on ToolRequestMessage { parts { content text html signature } thinking toolCalls { id name arguments } }
	... on ToolResultMessage { parts { content text html } output error { message stackTrace } }
	... on SystemControlMessage { from to params }
	... on MCPResourceMessage { serverName resourceUri mimeType }
	... on FileReferenceMessage { path }
	... on ImageMessage { source { url filePath mediaType } }`

// TestXSSPayloadsThroughEveryTextField sends each payload through every text field of
// every input: message text and parts, tool request text, call names and arguments,
// tool result text, output, error message and stack trace, control from, to and
// params, MCP resource fields, file and image paths, conversation titles, approval
// reasons, and the histories importConversation reads. Each is refused with
// BAD_USER_INPUT (fields with a format: tool names, URIs, media types) or stored; no
// payload survives unescaped in any content, nor as anything that runs in any html,
// parsed as a browser parses innerHTML. Other strings (titles, paths, reasons, error
// messages...) come back exactly as written (minus control characters): they are data,
// for text nodes.
func TestXSSPayloadsThroughEveryTextField(t *testing.T) {
	t.Parallel()
	srv := testserver.New(t)
	conv := srv.CreateConversation(t, "xss")
	addMutation := `mutation($c: ID!, $i: MessageInput!) { addMessage(conversationId: $c, input: $i) { node { ` + nodeSelection + ` } } }`
	checked := 0
	for i, p := range xssPayloads {
		call := fmt.Sprintf("call_%d", i)
		// The same payload through each field; formatted fields may refuse it.
		inputs := []struct {
			field     string
			input     map[string]any
			mayRefuse bool
		}{
			{"text.content", map[string]any{"text": map[string]any{"role": "USER", "content": p}}, false},
			{"text.parts", map[string]any{"text": map[string]any{"role": "ASSISTANT", "parts": []any{
				map[string]any{"kind": "THINKING", "text": p, "signature": p}, map[string]any{"kind": "TEXT", "text": p}}}}, false},
			{"toolRequest", map[string]any{"toolRequest": map[string]any{"content": p, "toolCalls": []any{
				map[string]any{"id": call, "name": "search", "arguments": map[string]any{"q": p, p: []any{p}}}}}}, false},
			{"toolRequest.parts", map[string]any{"toolRequest": map[string]any{"parts": []any{map[string]any{"kind": "TEXT", "text": p}},
				"toolCalls": []any{map[string]any{"id": call + "_parts", "name": "search", "arguments": map[string]any{}}}}}, false},
			{"toolRequest.name", map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
				map[string]any{"id": call + "_name", "name": p, "arguments": map[string]any{}}}}}, true},
			{"toolResult", map[string]any{"toolResult": map[string]any{"toolCallId": call, "status": "ERROR", "content": p,
				"output": map[string]any{"markup": p}, "error": map[string]any{"message": p, "stackTrace": p}}}, false},
			{"systemControl", map[string]any{"systemControl": map[string]any{"kind": "MODE_CHANGE", "from": p, "to": p, "params": map[string]any{"p": p}}}, false},
			{"mcpResource", map[string]any{"mcpResource": map[string]any{"serverName": p, "resourceUri": "file:///" + p, "content": p}}, true},
			{"mcpResource.mimeType", map[string]any{"mcpResource": map[string]any{"serverName": "s", "resourceUri": p, "content": "x", "mimeType": p}}, true},
			{"fileReference.path", map[string]any{"fileReference": map[string]any{"path": p}}, true},
			{"image.filePath", map[string]any{"image": map[string]any{"filePath": p}}, true},
			{"image.url", map[string]any{"image": map[string]any{"url": p}}, true},
		}
		for _, in := range inputs {
			where := fmt.Sprintf("payload %d via %s", i, in.field)
			r := srv.Do(t, addMutation, map[string]any{"c": conv, "i": in.input})
			if len(r.Errors) > 0 {
				// JSON strings may not hold NUL (jsonb refuses it); free text loses it.
				nulInJSON := strings.ContainsRune(p, 0) && strings.Contains(r.Errors[0].Message, "NUL")
				if code := r.Errors[0].Code(); !(in.mayRefuse || nulInJSON) || code != "BAD_USER_INPUT" {
					t.Errorf("%s: got %s %q", where, code, r.Errors[0].Message)
				}
				continue
			}
			var data any
			json.Unmarshal(r.Data, &data)
			checked += checkRendered(t, where, data)
		}

		// Titles, and a decision's reason and author, are returned as written.
		var created struct {
			CreateConversation struct{ ID, Title string }
		}
		srv.MustDo(t, `mutation($t: String) { createConversation(title: $t) { id title } }`, map[string]any{"t": p}, &created)
		if want := strings.TrimSpace(strings.ReplaceAll(p, "\u0000", "")); created.CreateConversation.Title != want {
			t.Errorf("payload %d as a title: got %q, want %q", i, created.CreateConversation.Title, want)
		}
		srv.MustDo(t, `mutation($c: ID!, $t: String!) { renameConversation(id: $c, title: $t) { title } }`,
			map[string]any{"c": created.CreateConversation.ID, "t": p}, nil)
		added := srv.AddMessage(t, created.CreateConversation.ID, map[string]any{"toolRequest": map[string]any{"toolCalls": []any{
			map[string]any{"id": "c", "name": "f", "arguments": map[string]any{}}}}})
		var decided struct {
			SetToolCallApproval struct {
				ToolCalls []struct {
					Decision struct{ Reason, DecidedBy string }
				}
			}
		}
		srv.MustDo(t, `mutation($m: ID!, $r: String, $b: String) { setToolCallApproval(messageId: $m, toolCallId: "c", status: DENIED, reason: $r, decidedBy: $b) {
			toolCalls { decision { reason decidedBy } } } }`, map[string]any{"m": added.ID, "r": p, "b": p}, &decided)
		want := strings.ReplaceAll(p, "\u0000", "")
		if d := decided.SetToolCallApproval.ToolCalls[0].Decision; d.Reason != want || d.DecidedBy != want {
			t.Errorf("payload %d as a reason and decider: got %q and %q, want %q", i, d.Reason, d.DecidedBy, want)
		}
	}

	// Imported histories: every text of an OpenAI chat and an Anthropic conversation.
	for i, p := range xssPayloads {
		q, _ := json.Marshal(p)
		args, _ := json.Marshal(map[string]any{"q": p})
		argsString, _ := json.Marshal(string(args))
		histories := map[string]string{
			"OPENAI_CHAT": fmt.Sprintf(`{"messages":[{"role":"system","content":%[1]s},{"role":"user","content":%[1]s},
				{"role":"assistant","content":%[1]s,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":%[2]s}}]},
				{"role":"tool","tool_call_id":"call_1","content":%[1]s}]}`, q, argsString),
			"ANTHROPIC_MESSAGES": fmt.Sprintf(`{"system":%[1]s,"messages":[{"role":"user","content":[{"type":"text","text":%[1]s}]},
				{"role":"assistant","content":[{"type":"thinking","thinking":%[1]s,"signature":"sig"},{"type":"text","text":%[1]s},
				{"type":"tool_use","id":"toolu_1","name":"f","input":{"q":%[1]s}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":%[1]s,"is_error":true}]}]}`, q),
		}
		for format, data := range histories {
			where := fmt.Sprintf("payload %d imported as %s", i, format)
			r := srv.Do(t, `mutation($f: ImportFormat!, $d: String!, $t: String) { importConversation(format: $f, data: $d, title: $t) {
				added conversation { title messages(first: 50) { edges { node { `+nodeSelection+` } } } } } }`,
				map[string]any{"f": format, "d": data, "t": p})
			if len(r.Errors) > 0 {
				if !strings.ContainsRune(p, 0) || r.Errors[0].Code() != "BAD_USER_INPUT" || !strings.Contains(r.Errors[0].Message, "NUL") {
					t.Errorf("%s: got %s %q", where, r.Errors[0].Code(), r.Errors[0].Message)
				}
				continue
			}
			var out any
			json.Unmarshal(r.Data, &out)
			if n := checkRendered(t, where, out); n < 6 {
				t.Errorf("%s: only %d content and html fields checked", where, n)
			}
		}
	}
	if min := len(xssPayloads) * 20; checked < min {
		t.Errorf("checked %d content and html fields, want at least %d", checked, min)
	}
}
