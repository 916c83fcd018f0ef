package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/web/manifest"
)

// Chapter is one rendered chapter of the book.
type Chapter struct {
	Number int           // from the file name: "03-the-doorbell-page.md" is chapter 3
	Slug   string        // the file name without ".md"; the page is /chapters/{Slug}
	Title  string        // the text of the chapter's first-line "# Title" heading
	File   string        // the file name in the chapters file system
	HTML   template.HTML // the body, without the title heading
	// Widgets are the chapter's live widgets, in page order.
	Widgets []Widget
	// Links are the chapter's links to chapters (itself included, for "#anchor"
	// links), already rewritten to /chapters/{slug}; ReadChapters checks each.
	Links []ChapterLink
	// Anchors are the ids of the chapter's headings.
	Anchors []string
}

// ChapterLink is a link from one chapter to a chapter page or a heading in it.
type ChapterLink struct {
	Slug, Anchor string // the target; Anchor is "" for the top of the page
	Line         int    // where the link is, for error messages
}

// NumberLabel is the chapter number as the book prints it: "00", "01", …
func (c *Chapter) NumberLabel() string { return fmt.Sprintf("%02d", c.Number) }

// ReadChapters reads every "NN-words.md" at the top of fsys and renders it, in
// chapter-number order. Any problem in any chapter is an error naming the file
// (and the line, for a bad widget), so a broken book never starts serving.
func ReadChapters(fsys fs.FS) ([]*Chapter, error) {
	names, err := fs.Glob(fsys, "*.md")
	if err != nil {
		return nil, fmt.Errorf("chapters: %w", err)
	}
	if len(names) == 0 {
		return nil, errors.New("chapters: no *.md files")
	}
	var chapters []*Chapter
	var errs []error
	for _, name := range names {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		c, err := renderChapter(name, src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		chapters = append(chapters, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(chapters, func(a, b *Chapter) int { return a.Number - b.Number })
	for i := 1; i < len(chapters); i++ {
		if chapters[i].Number == chapters[i-1].Number {
			return nil, fmt.Errorf("%s and %s: both are chapter %d", chapters[i-1].File, chapters[i].File, chapters[i].Number)
		}
	}
	if err := checkLinks(chapters); err != nil {
		return nil, err
	}
	return chapters, nil
}

// checkLinks makes sure every link between chapters lands on a chapter that
// exists and, with an anchor, on a heading that exists.
func checkLinks(chapters []*Chapter) error {
	bySlug := map[string]*Chapter{}
	for _, c := range chapters {
		bySlug[c.Slug] = c
	}
	var errs []error
	for _, c := range chapters {
		for _, l := range c.Links {
			target, ok := bySlug[l.Slug]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s:%d: link to %s.md: no such chapter", c.File, l.Line, l.Slug))
			case l.Anchor != "" && !slices.Contains(target.Anchors, l.Anchor):
				errs = append(errs, fmt.Errorf("%s:%d: link to %s#%s: no such heading", c.File, l.Line, l.Slug, l.Anchor))
			}
		}
	}
	return errors.Join(errs...)
}

// chapterLink matches a link to a chapter file: "04-dma.md" or
// "04-dma.md#the-idea", or a link to a heading of the same page, "#the-idea".
var chapterLink = regexp.MustCompile(`^(?:(\d\d-[a-z0-9-]+)\.md)?(?:#([A-Za-z0-9_-]+))?$`)

// linkTransformer rewrites links between chapter files to the server's pages
// and records them, and the headings' ids, for checkLinks.
type linkTransformer struct {
	slug    string
	links   []ChapterLink
	anchors []string
}

// Transform implements parser.ASTTransformer.
func (t *linkTransformer) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			if id, ok := n.AttributeString("id"); ok {
				if b, ok := id.([]byte); ok {
					t.anchors = append(t.anchors, string(b))
				}
			}
		case *ast.Link:
			m := chapterLink.FindStringSubmatch(string(n.Destination))
			if m == nil || (m[1] == "" && m[2] == "") {
				return ast.WalkContinue, nil
			}
			slug := m[1]
			if slug == "" {
				slug = t.slug
			}
			line := 0
			if seg := firstSegment(n); seg >= 0 {
				line = 1 + bytes.Count(src[:seg], []byte("\n"))
			}
			t.links = append(t.links, ChapterLink{Slug: slug, Anchor: m[2], Line: line})
			dest := "/chapters/" + slug
			if m[2] != "" {
				dest += "#" + m[2]
			}
			if m[1] == "" {
				dest = "#" + m[2]
			}
			n.Destination = []byte(dest)
		}
		return ast.WalkContinue, nil
	})
}

// firstSegment is the source offset of a node's first text, or -1.
func firstSegment(n ast.Node) int {
	for c := n.FirstChild(); c != nil; c = c.FirstChild() {
		if t, ok := c.(*ast.Text); ok {
			return t.Segment.Start
		}
	}
	return -1
}

// parseChapterName splits "04-dma.md" into 4 and "04-dma".
func parseChapterName(name string) (int, string, error) {
	slug, ok := strings.CutSuffix(path.Base(name), ".md")
	digits, rest, dash := strings.Cut(slug, "-")
	n, err := strconv.Atoi(digits)
	if !ok || !dash || err != nil || n < 0 || rest == "" || strings.Trim(slug, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return 0, "", fmt.Errorf("%s: a chapter file is named NN-words-in-lower-case.md", name)
	}
	return n, slug, nil
}

// renderChapter renders one chapter's Markdown. The first line must be the
// "# Title" heading; it becomes the page title and is left out of the body.
func renderChapter(name string, src []byte) (*Chapter, error) {
	n, slug, err := parseChapterName(name)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(src, []byte("# ")) {
		return nil, fmt.Errorf("%s:1: a chapter starts with its title, \"# Title\"", name)
	}
	widgets := &widgetTransformer{file: name}
	links := &linkTransformer{slug: slug}
	md := newMarkdown(widgets, links)
	doc := md.Parser().Parse(text.NewReader(src))
	if err := errors.Join(widgets.errs...); err != nil {
		return nil, err
	}
	h, ok := doc.FirstChild().(*ast.Heading)
	if !ok || h.Level != 1 {
		return nil, fmt.Errorf("%s:1: a chapter starts with its title, \"# Title\"", name)
	}
	title := strings.TrimSpace(plainText(h, src))
	if title == "" {
		return nil, fmt.Errorf("%s:1: the title heading is empty", name)
	}
	doc.RemoveChild(doc, h)
	sections := pageSections(doc, src)
	var body bytes.Buffer
	if err := md.Renderer().Render(&body, src, doc); err != nil {
		return nil, fmt.Errorf("%s: render: %w", name, err)
	}
	return &Chapter{
		Number:  n,
		Slug:    slug,
		Title:   title,
		File:    name,
		HTML:    template.HTML(withContents(body.Bytes(), sections)), // goldmark output with raw HTML off; a long page's contents (contents.go)
		Widgets: widgets.found,
		Links:   links.links,
		Anchors: links.anchors,
	}, nil
}

// newMarkdown is the book's Markdown dialect. Raw HTML stays off (no
// html.WithUnsafe): a chapter cannot put a script or a style on the page, and
// live widgets come only from sacc-run blocks.
func newMarkdown(widgets *widgetTransformer, links *linkTransformer) goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(
			extension.GFM,
			extension.Footnote,
		),
		goldmark.WithParserOptions(
			parser.WithAutoHeadingID(),
			parser.WithASTTransformers(util.Prioritized(widgets, 100), util.Prioritized(links, 200)),
		),
		goldmark.WithRendererOptions(
			// Fenced code is highlighted by highlight.go, with classes and
			// code.css, not inline styles: the Content-Security-Policy allows
			// style sheets from 'self' only.
			renderer.WithNodeRenderers(util.Prioritized(widgetRenderer{}, 100), util.Prioritized(codeBlockRenderer{}, 100)),
		),
	)
}

// plainText is the text of a node's inline content, markup dropped.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// Widget is a live widget: what a ```sacc-run block asks for.
//
//	```sacc-run scenario=driver options=cpu=arm64,irq=on views=ring,garage markers=bell=sacc_doorbell,wrap=sacc_phase_flip start=wrap fold=enumeration
//	```
//
// scenario (required) names a scenario of package sacc/scenario; options are
// its settings, as for `saccbook run --set`; views chooses the pictures, from the
// views registry of package web/manifest (empty: the widget's own choice).
//
// markers are named points on the widget's scrubber, NAME=EVENT, comma
// separated: NAME is the button's label (a dash reads as a space), and EVENT
// picks an event of the run by its kind, optionally its arguments and which
// occurrence: sacc_phase_flip (the first phase flip), sacc_fetch#3 (the third
// fetch), sacc_fetch(sq_head=0)#2 (the second fetch from slot 0),
// cpu_write(size=32&addr=0x100000), and counted from an earlier marker of the
// block with >NAME: sacc_fetch>bell (the first fetch after the marker bell).
// Events are named by what happens, not by position, so a marker stays on its
// event when the model changes what comes before it.
//
// start is where the widget opens: a marker's NAME, or an event position; seq=N
// is the older spelling of start=N. fold says which kinds of long setup
// (web/manifest's timeline folds: enumeration, fill, readback) play as one step:
// a list, or none; without it, all of them.
// memory=sq or memory=cq chooses the ring the memory view opens on (the SQ
// without it).
type Widget struct {
	Scenario string
	Options  string
	Views    string
	Seq      int    // the start position, when start names no marker
	Memory   string // the ring the memory view opens on: "sq", "cq", or "" for the SQ
	Markers  []Marker
	Start    string   // the marker the widget opens at; "" for Seq
	Folds    []string // the folds that apply
	Index    int      // the widget's number on its page: 1, 2, …
}

// Marker is a named event of a widget's run, as the browser resolves it.
type Marker struct {
	Name  string            `json:"name"`
	Label string            `json:"label"`
	Kind  string            `json:"kind"`
	Args  map[string]uint64 `json:"args"`  // the event's arguments must have these values
	N     int               `json:"n"`     // the Nth such event, from 1
	After string            `json:"after"` // counted after this earlier marker's event; "" from the start
}

// widgetNode is a Widget in the Markdown syntax tree.
type widgetNode struct {
	ast.BaseBlock
	Widget
}

// kindWidget is the syntax-tree node kind of a live widget.
var kindWidget = ast.NewNodeKind("SaccWidget")

// Kind implements ast.Node.
func (n *widgetNode) Kind() ast.NodeKind { return kindWidget }

// Dump implements ast.Node.
func (n *widgetNode) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{
		"Scenario": n.Scenario, "Options": n.Options, "Views": n.Views, "Seq": strconv.Itoa(n.Seq),
		"Start": n.Start, "Folds": strings.Join(n.Folds, ","), "Index": strconv.Itoa(n.Index),
	}, nil)
}

// widgetInfo is the first word of a fenced block's info string that makes the
// block a live widget.
const widgetInfo = "sacc-run"

// widgetTransformer replaces ```sacc-run fenced blocks with Widget nodes and
// collects every malformed one as an error naming the file and line.
type widgetTransformer struct {
	file  string
	errs  []error
	found []Widget
}

// Transform implements parser.ASTTransformer.
func (t *widgetTransformer) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	var blocks []*ast.FencedCodeBlock
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if fb, ok := n.(*ast.FencedCodeBlock); ok && entering && fb.Info != nil {
			if f := strings.Fields(string(fb.Info.Value(src))); len(f) > 0 && strings.HasPrefix(f[0], widgetInfo) {
				blocks = append(blocks, fb)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, fb := range blocks {
		w, err := parseWidget(string(fb.Info.Value(src)))
		if err == nil && strings.TrimSpace(string(fb.Lines().Value(src))) != "" {
			err = errors.New("a sacc-run block has no body: everything goes on the ``` line")
		}
		if err != nil {
			t.errs = append(t.errs, fmt.Errorf("%s:%d: %w", t.file, lineOf(src, fb), err))
			continue
		}
		w.Index = len(t.found) + 1
		t.found = append(t.found, *w)
		fb.Parent().ReplaceChild(fb.Parent(), fb, &widgetNode{Widget: *w})
	}
}

// lineOf is the 1-based line of a fenced block's opening fence.
func lineOf(src []byte, fb *ast.FencedCodeBlock) int {
	pos := fb.Pos()
	if pos < 0 || pos > len(src) {
		pos = fb.Info.Segment.Start
	}
	return 1 + bytes.Count(src[:pos], []byte("\n"))
}

// parseWidget reads a sacc-run info string. Every problem is an error: unknown
// key, repeated key, unknown scenario, option, view, fold or event kind, a
// malformed marker, a start that names no marker.
func parseWidget(info string) (*Widget, error) {
	fields := strings.Fields(info)
	if len(fields) == 0 || fields[0] != widgetInfo {
		return nil, fmt.Errorf("a widget block starts with %q, not %q", widgetInfo, info)
	}
	w := &Widget{Folds: manifest.FoldNames()}
	seen := map[string]bool{}
	var start string
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "" {
			return nil, fmt.Errorf("sacc-run: %q: want key=value", f)
		}
		if seen[k] {
			return nil, fmt.Errorf("sacc-run: %s given twice", k)
		}
		seen[k] = true
		switch k {
		case "scenario":
			w.Scenario = v
		case "options":
			w.Options = v
		case "views":
			w.Views = v
		case "seq", "start":
			start = v
		case "markers":
			ms, err := parseMarkers(v)
			if err != nil {
				return nil, fmt.Errorf("sacc-run: markers: %w", err)
			}
			w.Markers = ms
		case "fold":
			folds, err := parseFolds(v)
			if err != nil {
				return nil, fmt.Errorf("sacc-run: fold=%s: %w", v, err)
			}
			w.Folds = folds
		case "memory":
			if v != "sq" && v != "cq" {
				return nil, fmt.Errorf("sacc-run: memory=%s: want sq or cq", v)
			}
			w.Memory = v
		default:
			return nil, fmt.Errorf("sacc-run: unknown key %q (known: scenario, options, views, markers, start, seq, fold, memory)", k)
		}
	}
	if seen["seq"] && seen["start"] {
		return nil, errors.New("sacc-run: give start or seq, not both")
	}
	if err := w.setStart(start, seen["seq"]); err != nil {
		return nil, err
	}
	if w.Scenario == "" {
		return nil, fmt.Errorf("sacc-run: scenario=NAME is required (have: %s)", strings.Join(scenario.Names(), ", "))
	}
	s, ok := scenario.Find(w.Scenario)
	if !ok {
		return nil, fmt.Errorf("sacc-run: no scenario %q (have: %s)", w.Scenario, strings.Join(scenario.Names(), ", "))
	}
	if err := checkOptions(s, w.Options); err != nil {
		return nil, fmt.Errorf("sacc-run: scenario %s: %w", s.Name, err)
	}
	views := manifest.ViewNames()
	for _, v := range strings.Split(w.Views, ",") {
		if w.Views != "" && !slices.Contains(views, v) {
			return nil, fmt.Errorf("sacc-run: unknown view %q (have: %s)", v, strings.Join(views, ", "))
		}
	}
	return w, nil
}

// setStart reads start= (or seq=, which takes only a number): a marker of the
// block or an event position.
func (w *Widget) setStart(v string, seqKey bool) error {
	if v == "" {
		return nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 && seqKey {
			return fmt.Errorf("sacc-run: seq=%s: want an event position, 0 or more", v)
		}
		if n < 0 {
			return fmt.Errorf("sacc-run: start=%s: want an event position, 0 or more, or a marker", v)
		}
		w.Seq = n
		return nil
	}
	if seqKey {
		return fmt.Errorf("sacc-run: seq=%s: want an event position, 0 or more", v)
	}
	var names []string
	for _, m := range w.Markers {
		if m.Name == v {
			w.Start = v
			return nil
		}
		names = append(names, m.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("sacc-run: start=%s: the block has no markers (markers=NAME=EVENT,…)", v)
	}
	return fmt.Errorf("sacc-run: start=%s: no such marker (have: %s)", v, strings.Join(names, ", "))
}

// markerName is a marker's name: its label, with dashes for spaces.
var markerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// markerEvent is a marker's event: KIND, (ARG=VALUE&…), #N, >MARKER.
var markerEvent = regexp.MustCompile(`^([a-z][a-z0-9_]*)(?:\(([^()]*)\))?(?:#([0-9]+))?(?:>([A-Za-z0-9][A-Za-z0-9_-]*))?$`)

// maxExact is the largest argument value a browser compares exactly (2^53).
const maxExact = 1 << 53

// parseMarkers reads markers=NAME=EVENT,… against the trace's kinds.
func parseMarkers(v string) ([]Marker, error) {
	kinds := manifest.Kinds()
	var out []Marker
	for _, item := range strings.Split(v, ",") {
		name, ev, ok := strings.Cut(item, "=")
		if !ok || !markerName.MatchString(name) {
			return nil, fmt.Errorf("%q: want NAME=EVENT, NAME in letters, digits and dashes", item)
		}
		for _, m := range out {
			if m.Name == name {
				return nil, fmt.Errorf("%s given twice", name)
			}
		}
		p := markerEvent.FindStringSubmatch(ev)
		if p == nil {
			return nil, fmt.Errorf("%s=%s: want KIND, KIND#N, KIND(ARG=VALUE&…)#N or KIND>MARKER", name, ev)
		}
		kind, ok := kinds[p[1]]
		if !ok {
			return nil, fmt.Errorf("%s=%s: no event kind %q", name, ev, p[1])
		}
		m := Marker{Name: name, Label: strings.ReplaceAll(name, "-", " "), Kind: p[1], Args: map[string]uint64{}, N: 1}
		if p[2] != "" {
			for _, cond := range strings.Split(p[2], "&") {
				a, val, ok := strings.Cut(cond, "=")
				if !ok {
					return nil, fmt.Errorf("%s=%s: %q: want ARG=VALUE", name, ev, cond)
				}
				if !slices.Contains(kind.Args, a) {
					return nil, fmt.Errorf("%s=%s: %s has no argument %q (has: %s)", name, ev, p[1], a, strings.Join(kind.Args, ", "))
				}
				n, err := strconv.ParseUint(val, 0, 64)
				if err != nil || n > maxExact {
					return nil, fmt.Errorf("%s=%s: %s=%s: want a number up to 2^53", name, ev, a, val)
				}
				m.Args[a] = n
			}
		}
		if p[3] != "" {
			n, err := strconv.Atoi(p[3])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s=%s: #%s: occurrences count from 1", name, ev, p[3])
			}
			m.N = n
		}
		if p[4] != "" {
			if !slices.ContainsFunc(out, func(o Marker) bool { return o.Name == p[4] }) {
				return nil, fmt.Errorf("%s=%s: >%s: not a marker before it in the block", name, ev, p[4])
			}
			m.After = p[4]
		}
		out = append(out, m)
	}
	return out, nil
}

// parseFolds reads fold=: "none", or fold names of the manifest's timeline.
func parseFolds(v string) ([]string, error) {
	if v == "none" {
		return []string{}, nil
	}
	have := manifest.FoldNames()
	var out []string
	for _, f := range strings.Split(v, ",") {
		if !slices.Contains(have, f) {
			return nil, fmt.Errorf("no fold %q (have: %s, or none)", f, strings.Join(have, ", "))
		}
		if slices.Contains(out, f) {
			return nil, fmt.Errorf("%s given twice", f)
		}
		out = append(out, f)
	}
	return out, nil
}

// checkOptions checks widget options against the ones the scenario declares:
// the name must be declared and the value one of the option's values.
func checkOptions(s scenario.Scenario, options string) error {
	opts, err := scenario.ParseOptions(options)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(opts))
	for name := range opts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		o, ok := s.Option(name)
		switch {
		case !ok && len(s.Options) == 0:
			return fmt.Errorf("option %q: this scenario takes no options", name)
		case !ok:
			return fmt.Errorf("option %q: not one of %s", name, s.OptionsDoc())
		case !o.Takes(opts[name]):
			return fmt.Errorf("option %s=%s: want one of %s", name, opts[name], strings.Join(o.ValueNames(), ", "))
		}
	}
	return nil
}

// widgetRenderer writes a Widget as the element saccbook.js brings to life,
// with a way to run the same thing in a terminal for readers without
// JavaScript.
type widgetRenderer struct{}

// RegisterFuncs implements renderer.NodeRenderer.
func (widgetRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindWidget, renderWidget)
}

func renderWidget(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	wd := n.(*widgetNode)
	cmd := "saccbook run " + wd.Scenario
	if wd.Options != "" {
		cmd += " --set " + wd.Options
	}
	markers := []Marker{}
	if wd.Markers != nil {
		markers = wd.Markers
	}
	mj, err := json.Marshal(markers)
	if err != nil {
		return ast.WalkStop, fmt.Errorf("widget %d: markers: %w", wd.Index, err)
	}
	fmt.Fprintf(w, `<div class="sacc-widget" data-scenario="%s" data-options="%s" data-views="%s" data-seq="%d" data-widget="%d" data-start="%s" data-markers="%s" data-folds="%s"`,
		html.EscapeString(wd.Scenario), html.EscapeString(wd.Options), html.EscapeString(wd.Views), wd.Seq, wd.Index,
		html.EscapeString(wd.Start), html.EscapeString(string(mj)), html.EscapeString(strings.Join(wd.Folds, ",")))
	if wd.Memory != "" {
		fmt.Fprintf(w, ` data-memory="%s"`, wd.Memory)
	}
	w.WriteString(">")
	fmt.Fprintf(w, `<noscript>This live widget needs JavaScript; run it in a terminal with <code>%s</code></noscript></div>`+"\n",
		html.EscapeString(cmd))
	return ast.WalkSkipChildren, nil
}
