package web

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/saccbook/saccbook/chapters"
)

func TestWidgetBlocks(t *testing.T) {
	// The block is on line 5 of every chapter, so errors must say ":5:".
	const before = "# Widgets\n\nText.\n\n"
	for _, tc := range []struct {
		name string
		info string
		body string
		want string // the widget element; "" when an error is expected
		err  string
	}{
		{name: "everything", info: "sacc-run scenario=driver options=cpu=arm64,irq=on views=ring,garage",
			want: `<div class="sacc-widget" data-scenario="driver" data-options="cpu=arm64,irq=on" data-views="ring,garage" data-seq="0" data-widget="1" data-start="" data-markers="[]" data-folds="enumeration,fill,readback"><noscript>This live widget needs JavaScript; run it in a terminal with <code>saccbook run driver --set cpu=arm64,irq=on</code></noscript></div>`},
		{name: "scenario only", info: "sacc-run scenario=job",
			want: `<div class="sacc-widget" data-scenario="job" data-options="" data-views="" data-seq="0" data-widget="1" data-start="" data-markers="[]" data-folds="enumeration,fill,readback"><noscript>This live widget needs JavaScript; run it in a terminal with <code>saccbook run job</code></noscript></div>`},
		{name: "start position", info: "sacc-run   scenario=mixed\tseq=42",
			want: `data-scenario="mixed" data-options="" data-views="" data-seq="42"`},
		{name: "every view", info: "sacc-run scenario=bypass views=ring,garage,registers,memory,trace,source,monitor options=cpu=x86",
			want: `data-views="ring,garage,registers,memory,trace,source,monitor"`},
		{name: "memory view on the CQ", info: "sacc-run scenario=phases views=memory memory=cq",
			want: `data-folds="enumeration,fill,readback" data-memory="cq">`},
		{name: "memory view on neither ring", info: "sacc-run scenario=phases memory=rings", err: "memory=rings: want sq or cq"},
		{name: "unknown key", info: "sacc-run scenario=job view=ring", err: `unknown key "view"`},
		{name: "no scenario", info: "sacc-run views=ring", err: "scenario=NAME is required"},
		{name: "unknown scenario", info: "sacc-run scenario=nosuch", err: `no scenario "nosuch"`},
		{name: "empty value", info: "sacc-run scenario=", err: `"scenario=": want key=value`},
		{name: "not key=value", info: "sacc-run job", err: `"job": want key=value`},
		{name: "repeated key", info: "sacc-run scenario=job scenario=driver", err: "scenario given twice"},
		{name: "malformed options", info: "sacc-run scenario=driver options=cpu", err: `option "cpu": want name=value`},
		{name: "unknown option", info: "sacc-run scenario=driver options=gpu=on", err: `option "gpu": not one of`},
		{name: "bad option value", info: "sacc-run scenario=driver options=cpu=sparc", err: "cpu=sparc: want one of x86, arm64"},
		{name: "options for a scenario without", info: "sacc-run scenario=job options=cpu=x86", err: "takes no options"},
		{name: "unknown view", info: "sacc-run scenario=job views=ring,hologram", err: `unknown view "hologram"`},
		{name: "negative seq", info: "sacc-run scenario=job seq=-1", err: "seq=-1"},
		{name: "body", info: "sacc-run scenario=job", body: "views=ring\n", err: "has no body"},
		{name: "markers and a start", info: "sacc-run scenario=rings markers=bell=sacc_doorbell,first-wrap=sacc_phase_flip,slot0=sacc_fetch(sq_head=0&addr=0x100000)#2 start=first-wrap fold=enumeration",
			want: `data-seq="0" data-widget="1" data-start="first-wrap" data-markers="[{&#34;name&#34;:&#34;bell&#34;,&#34;label&#34;:&#34;bell&#34;,&#34;kind&#34;:&#34;sacc_doorbell&#34;,&#34;args&#34;:{},&#34;n&#34;:1,&#34;after&#34;:&#34;&#34;},` +
				`{&#34;name&#34;:&#34;first-wrap&#34;,&#34;label&#34;:&#34;first wrap&#34;,&#34;kind&#34;:&#34;sacc_phase_flip&#34;,&#34;args&#34;:{},&#34;n&#34;:1,&#34;after&#34;:&#34;&#34;},` +
				`{&#34;name&#34;:&#34;slot0&#34;,&#34;label&#34;:&#34;slot0&#34;,&#34;kind&#34;:&#34;sacc_fetch&#34;,&#34;args&#34;:{&#34;addr&#34;:1048576,&#34;sq_head&#34;:0},&#34;n&#34;:2,&#34;after&#34;:&#34;&#34;}]" data-folds="enumeration">`},
		{name: "start at a position", info: "sacc-run scenario=job start=7 fold=none", want: `data-seq="7" data-widget="1" data-start="" data-markers="[]" data-folds="">`},
		{name: "unknown marker kind", info: "sacc-run scenario=job markers=bell=sacc_dorbell", err: `bell=sacc_dorbell: no event kind "sacc_dorbell"`},
		{name: "unknown marker argument", info: "sacc-run scenario=job markers=bell=sacc_doorbell(tail=1)", err: `sacc_doorbell has no argument "tail" (has: sq_tail, sq_head)`},
		{name: "bad marker value", info: "sacc-run scenario=job markers=bell=sacc_doorbell(sq_tail=x)", err: "sq_tail=x: want a number"},
		{name: "bad occurrence", info: "sacc-run scenario=job markers=bell=sacc_doorbell#0", err: "#0: occurrences count from 1"},
		{name: "malformed marker", info: "sacc-run scenario=job markers=bell", err: `"bell": want NAME=EVENT`},
		{name: "malformed marker event", info: "sacc-run scenario=job markers=bell=sacc_doorbell#x", err: "want KIND, KIND#N"},
		{name: "marker name", info: "sacc-run scenario=job markers=-bell=sacc_doorbell", err: `"-bell=sacc_doorbell": want NAME=EVENT`},
		{name: "marker after a marker", info: "sacc-run scenario=job markers=bell=sacc_doorbell,next_fetch=sacc_fetch>bell",
			want: `{&#34;name&#34;:&#34;next_fetch&#34;,&#34;label&#34;:&#34;next_fetch&#34;,&#34;kind&#34;:&#34;sacc_fetch&#34;,&#34;args&#34;:{},&#34;n&#34;:1,&#34;after&#34;:&#34;bell&#34;}`},
		{name: "marker after a later marker", info: "sacc-run scenario=job markers=fetch=sacc_fetch>bell,bell=sacc_doorbell", err: "fetch=sacc_fetch>bell: >bell: not a marker before it"},
		{name: "repeated marker", info: "sacc-run scenario=job markers=bell=sacc_doorbell,bell=sacc_fetch", err: "bell given twice"},
		{name: "start names no marker", info: "sacc-run scenario=job markers=bell=sacc_doorbell start=fetch", err: "start=fetch: no such marker (have: bell)"},
		{name: "start without markers", info: "sacc-run scenario=job start=fetch", err: "start=fetch: the block has no markers"},
		{name: "start and seq", info: "sacc-run scenario=job start=3 seq=4", err: "give start or seq, not both"},
		{name: "seq names a marker", info: "sacc-run scenario=job markers=bell=sacc_doorbell seq=bell", err: "seq=bell: want an event position"},
		{name: "unknown fold", info: "sacc-run scenario=job fold=zeroing", err: `fold=zeroing: no fold "zeroing" (have: enumeration, fill, readback, or none)`},
		{name: "misspelt kind", info: "sacc-runner scenario=job", err: `starts with "sacc-run"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := before + "```" + tc.info + "\n" + tc.body + "```\n\nAfter.\n"
			c, err := renderChapter("07-widgets.md", []byte(src))
			if tc.err != "" {
				if err == nil {
					t.Fatalf("no error; rendered %s", c.HTML)
				}
				if !strings.Contains(err.Error(), "07-widgets.md:5: ") || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %q: want the file and line (07-widgets.md:5:) and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(c.HTML), tc.want) {
				t.Errorf("rendered\n%s\nwant it to contain\n%s", c.HTML, tc.want)
			}
			if strings.Contains(string(c.HTML), "sacc-run") || strings.Contains(string(c.HTML), "<pre") {
				t.Errorf("the block was also rendered as code:\n%s", c.HTML)
			}
			if len(c.Widgets) != 1 || c.Widgets[0].Scenario == "" {
				t.Errorf("Widgets = %+v, want the one widget", c.Widgets)
			}
		})
	}
}

func TestEveryBadWidgetIsReported(t *testing.T) {
	src := "# Two bad\n\n```sacc-run scenario=nosuch\n```\n\ntext\n\n```sacc-run scenario=job colour=red\n```\n"
	_, err := renderChapter("03-two.md", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`03-two.md:3: sacc-run: no scenario "nosuch"`, `03-two.md:8: sacc-run: unknown key "colour"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestWidgetAttributesAreEscaped(t *testing.T) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	n := &widgetNode{Widget: Widget{Scenario: `a"b`, Options: `x=<script>&'`, Views: `"><img src=x>`, Seq: 3}}
	if _, err := renderWidget(w, nil, n, true); err != nil {
		t.Fatal(err)
	}
	_ = w.Flush()
	got := b.String()
	for _, bad := range []string{`a"b`, "<script>", `"><img`} {
		if strings.Contains(got, bad) {
			t.Errorf("unescaped %q in %s", bad, got)
		}
	}
	for _, want := range []string{`data-scenario="a&#34;b"`, `data-options="x=&lt;script&gt;&amp;&#39;"`, `data-views="&#34;&gt;&lt;img src=x&gt;"`, `data-seq="3"`,
		`<code>saccbook run a&#34;b --set x=&lt;script&gt;&amp;&#39;</code>`} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered %s\nwant %s", got, want)
		}
	}
}

func TestMarkdownFeatures(t *testing.T) {
	chs, err := ReadChapters(testBook())
	if err != nil {
		t.Fatal(err)
	}
	html := string(chs[0].HTML)
	for _, tc := range []struct {
		name, want string
	}{
		{"table", "<table>"},
		{"table cell", "<td>SQ_TAIL</td>"},
		{"strikethrough", "<del>struck</del>"},
		{"footnote reference", `<sup id="fnref:1"><a href="#fn:1" class="footnote-ref" role="doc-noteref">1</a></sup>`},
		{"footnote text", `<li id="fn:1">`},
		{"highlighted code", `<pre class="hl"><code class="language-go">`},
		{"keyword class", `<span class="hl-k">func</span>`},
		{"string class", `<span class="hl-s">&#34;hi&#34;</span>`},
		{"raw HTML block omitted", "<!-- raw HTML omitted -->"},
	} {
		if !strings.Contains(html, tc.want) {
			t.Errorf("%s: rendered chapter lacks %q:\n%s", tc.name, tc.want, html)
		}
	}
	for _, bad := range []string{"<script", `alert("raw")`, `<div class="raw">`, "<span>tag</span>", "javascript:", "style=", "# Start"} {
		if strings.Contains(html, bad) {
			t.Errorf("rendered chapter contains %q:\n%s", bad, html)
		}
	}
	if got := string(chs[1].HTML); !strings.Contains(got, `<h2 id="a-section">A section</h2>`) {
		t.Errorf("no heading ID in %s", got)
	}
}

func TestChapterOrderAndTitles(t *testing.T) {
	chs, err := ReadChapters(testBook())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range chs {
		got = append(got, c.NumberLabel()+" "+c.Slug+" "+c.Title)
	}
	want := []string{"00 00-start-here Start here", "02 2-the-middle The middle", "10 10-the-end The end"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("chapters %q, want %q", got, want)
	}
	if n := len(chs[0].Widgets); n != 1 {
		t.Errorf("chapter 0 has %d widgets, want 1", n)
	}
	if w := chs[1].Widgets; len(w) != 1 || w[0].Scenario != "job" || w[0].Seq != 12 || w[0].Index != 1 || w[0].Markers != nil {
		t.Errorf("chapter 2 widgets %+v", w)
	}
}

func TestBadBooks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		err   string
	}{
		{"empty", fstest.MapFS{}, "no *.md files"},
		{"no number", fstest.MapFS{"intro.md": {Data: []byte("# Intro\n")}}, "intro.md: a chapter file is named NN-words-in-lower-case.md"},
		{"capitals", fstest.MapFS{"01-Intro.md": {Data: []byte("# Intro\n")}}, "01-Intro.md: a chapter file is named"},
		{"no title", fstest.MapFS{"01-intro.md": {Data: []byte("Intro\n")}}, `01-intro.md:1: a chapter starts with its title`},
		{"title later", fstest.MapFS{"01-intro.md": {Data: []byte("\n# Intro\n")}}, `01-intro.md:1: a chapter starts with its title`},
		{"level-2 title", fstest.MapFS{"01-intro.md": {Data: []byte("## Intro\n")}}, `01-intro.md:1: a chapter starts with its title`},
		{"same number", fstest.MapFS{"01-a.md": {Data: []byte("# A\n")}, "1-b.md": {Data: []byte("# B\n")}}, "both are chapter 1"},
		{"bad widget", fstest.MapFS{"01-a.md": {Data: []byte("# A\n\n```sacc-run scenario=nosuch\n```\n")}}, `01-a.md:3: sacc-run: no scenario "nosuch"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadChapters(tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			_, err = NewHandler(Config{Chapters: tc.files, Static: testStatic(), Live: &fakeLive{}})
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("NewHandler error %v, want %q", err, tc.err)
			}
		})
	}
}

// TestTheBook renders every chapter of the real book, so that the book cannot
// rot: a widget naming a scenario that was renamed, an option that was
// dropped, a chapter without a title all fail here.
func TestTheBook(t *testing.T) {
	chs, err := ReadChapters(chapters.FS)
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) == 0 || chs[0].Number != 0 || chs[0].Title != "The journey of one job" {
		t.Fatalf("the book starts with %+v", chs[0])
	}
	for i, c := range chs {
		// The appendix, 99-appendix-the-sacc-contract.md, comes after the last chapter.
		if c.Number != i && !(c.Number == 99 && i == len(chs)-1) {
			t.Errorf("%s is chapter %d, want %d: chapters are numbered without gaps", c.File, c.Number, i)
		}
		if len(c.Widgets) == 0 {
			t.Errorf("%s has no live widget (a ```sacc-run block)", c.File)
		}
		html := string(c.HTML)
		for _, bad := range []string{"://", "raw HTML omitted", "style="} {
			if strings.Contains(html, bad) {
				t.Errorf("%s contains %q: the book has no external links, raw HTML or inline styles", c.File, bad)
			}
		}
	}
}

func TestChapterLinksAreRewrittenAndChecked(t *testing.T) {
	book := fstest.MapFS{
		"00-a.md": {Data: []byte("# A\n\n## The idea\n\nSee [B](01-b.md), [its part](01-b.md#the-part) and [here](#the-idea).\n")},
		"01-b.md": {Data: []byte("# B\n\n## The part\n\nBack to [A](00-a.md).\n")},
	}
	chapters, err := ReadChapters(book)
	if err != nil {
		t.Fatal(err)
	}
	html := string(chapters[0].HTML)
	for _, want := range []string{`href="/chapters/01-b"`, `href="/chapters/01-b#the-part"`, `href="#the-idea"`} {
		if !strings.Contains(html, want) {
			t.Errorf("chapter A lacks %s:\n%s", want, html)
		}
	}
	for name, body := range map[string]string{
		"missing chapter": "# C\n\nSee [X](07-x.md).\n",
		"missing anchor":  "# C\n\nSee [B](01-b.md#nowhere).\n",
		"missing here":    "# C\n\nSee [up](#nowhere).\n",
	} {
		bad := fstest.MapFS{"00-a.md": book["00-a.md"], "01-b.md": book["01-b.md"], "02-c.md": {Data: []byte(body)}}
		if _, err := ReadChapters(bad); err == nil || !strings.Contains(err.Error(), "02-c.md:3:") {
			t.Errorf("%s: error %v should name 02-c.md:3", name, err)
		}
	}
}

// TestPageContents: a long page lists its ## and ### sections, linked to
// their headings, after its opening paragraphs; a chapter of seven sections
// does not.
func TestPageContents(t *testing.T) {
	var src strings.Builder
	src.WriteString("# Long\n\nThe opening paragraph.\n\n")
	for i := range 6 {
		fmt.Fprintf(&src, "## Part %d\n\nText.\n\n### Part %d, the details `code`\n\nMore.\n\n", i, i)
	}
	c, err := renderChapter("99-long.md", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	page := string(c.HTML)
	nav := strings.Index(page, `<nav class="page-contents" aria-label="On this page">`)
	if nav < 0 {
		t.Fatalf("no contents on a page of 12 sections:\n%s", page)
	}
	if lead := strings.Index(page, "The opening paragraph."); lead > nav || strings.Index(page, `<h2 id="part-0">`) < nav {
		t.Errorf("the contents are not between the opening paragraph and the first section:\n%s", page)
	}
	for _, want := range []string{
		`<li><a href="#part-0">Part 0</a>` + "\n<ol>\n" + `<li><a href="#part-0-the-details-code">Part 0, the details code</a></li>`,
		`<li><a href="#part-5">Part 5</a>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the contents lack %q:\n%s", want, page)
		}
	}
	for _, m := range regexp.MustCompile(`<li><a href="#([^"]+)">`).FindAllStringSubmatch(page, -1) {
		if !slices.Contains(c.Anchors, m[1]) {
			t.Errorf("the contents link to #%s, which is no heading", m[1])
		}
	}
	short, err := renderChapter("00-short.md", []byte("# Short\n\nText.\n\n## One\n\n## Two\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(short.HTML), "page-contents") {
		t.Errorf("a page of two sections got contents:\n%s", short.HTML)
	}
}

// TestTheAppendixHasContents: of the book's pages, the appendix (the contract,
// read by section) lists its sections; no chapter does.
func TestTheAppendixHasContents(t *testing.T) {
	book, err := ReadChapters(chapters.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range book {
		has := strings.Contains(string(c.HTML), `class="page-contents"`)
		if want := c.Number == 99; has != want {
			t.Errorf("%s: on-page contents %v, want %v", c.File, has, want)
		}
		if c.Number == 99 && !strings.Contains(string(c.HTML), `<a href="#72-completion-phase-protocol-v01-nvme-style">7.2 Completion phase protocol (v0.1, NVMe-style)</a>`) {
			t.Errorf("%s: the contents do not link §7.2", c.File)
		}
	}
}
