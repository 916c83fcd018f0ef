package web

import (
	"bytes"
	"html"

	"github.com/yuin/goldmark/ast"
)

// Section is a heading of a chapter: its level (2 for ##, 3 for ###), its id
// (the anchor goldmark gave it), its text, and the ### sections under a ##.
type Section struct {
	Level int
	ID    string
	Title string
	Subs  []Section
}

// minContents is how many ## and ### headings make a page long enough for a
// list of its own sections ("On this page"). The chapters have seven or eight;
// the appendix, the contract, has nearly thirty.
const minContents = 12

// pageSections lists the ## headings of a parsed chapter, each with its ###
// headings, in page order; headings without an id are left out.
func pageSections(doc ast.Node, src []byte) []Section {
	var out []Section
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok || (h.Level != 2 && h.Level != 3) {
			continue
		}
		id, ok := h.AttributeString("id")
		b, isBytes := id.([]byte)
		if !ok || !isBytes {
			continue
		}
		s := Section{Level: h.Level, ID: string(b), Title: plainText(h, src)}
		if s.Level == 3 && len(out) > 0 {
			out[len(out)-1].Subs = append(out[len(out)-1].Subs, s)
			continue
		}
		out = append(out, s)
	}
	return out
}

// countSections counts the sections and their subsections.
func countSections(secs []Section) int {
	n := 0
	for _, s := range secs {
		n += 1 + len(s.Subs)
	}
	return n
}

// withContents puts a list of the page's sections, each a link to its
// heading, just before the first ## heading of the rendered body (after the
// page's opening paragraphs, where a reader looks for it), when the page has
// at least minContents sections; otherwise it returns body as it is.
func withContents(body []byte, secs []Section) []byte {
	if countSections(secs) < minContents {
		return body
	}
	at := bytes.Index(body, []byte("<h2"))
	if at < 0 {
		return body
	}
	var b bytes.Buffer
	b.Write(body[:at])
	// No id on this heading: every id on the page is a section's.
	b.WriteString(`<nav class="page-contents" aria-label="On this page">` + "\n")
	b.WriteString(`<h2 class="page-contents-title">On this page</h2>` + "\n")
	writeSections(&b, secs)
	b.WriteString("</nav>\n")
	b.Write(body[at:])
	return b.Bytes()
}

func writeSections(b *bytes.Buffer, secs []Section) {
	b.WriteString("<ol>\n")
	for _, s := range secs {
		b.WriteString(`<li><a href="#` + html.EscapeString(s.ID) + `">` + html.EscapeString(s.Title) + "</a>")
		if len(s.Subs) > 0 {
			b.WriteString("\n")
			writeSections(b, s.Subs)
		}
		b.WriteString("</li>\n")
	}
	b.WriteString("</ol>\n")
}
