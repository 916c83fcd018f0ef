package web

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/chapters"
)

// classed is the segments' texts of one class, in order.
func classed(segs []segment, c tokenClass) []string {
	var out []string
	for _, s := range segs {
		if s.class == c {
			out = append(out, s.text)
		}
	}
	return out
}

// joined is the segments' texts together: the code again.
func joined(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.text)
	}
	return b.String()
}

func TestHighlightGo(t *testing.T) {
	code := "package main\n\n" +
		"// Ring is a queue.\n" +
		"type Ring struct{ slots []uint64 }\n\n" +
		"func (r *Ring) Push(v uint64) error {\n" +
		"\tif len(r.slots) >= 0x10 && v != 0 {\n" +
		"\t\treturn nil /* full */\n" +
		"\t}\n" +
		"\tr.slots = append(r.slots, uint64(v)*2+'a')\n" +
		"\tfmt.Println(`raw`, \"s\\\"q\", 1.5, 3i)\n" +
		"\treturn Map[int](x)\n" +
		"}\n" +
		"func Map[T any](x T) T { return x }\n"
	segs := highlightGo(code)
	if got := joined(segs); got != code {
		t.Fatalf("the segments are not the code:\n%q\nwant\n%q", got, code)
	}
	for _, tc := range []struct {
		class tokenClass
		want  []string
	}{
		{keyword, []string{"package", "type", "struct", "func", "if", "return", "return", "func", "return"}},
		{typeName, []string{"uint64", "uint64", "error", "nil", "int", "any"}},
		{builtin, []string{"len", "append", "uint64"}},
		{function, []string{"Push", "Println", "Map"}},
		{str, []string{"'a'", "`raw`", `"s\"q"`}},
		{number, []string{"0x10", "0", "2", "1.5", "3i"}},
		{comment, []string{"// Ring is a queue.", "/* full */"}},
		{operator, []string{"*", ">=", "&&", "!=", "*", "+"}},
	} {
		if got := classed(segs, tc.class); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: got %q, want %q", highlightClasses[tc.class].name, got, tc.want)
		}
	}
	// The generic declaration's name is a function though no ( follows it.
	if got := classed(highlightGo("func Map[T any]() {}"), function); len(got) != 1 || got[0] != "Map" {
		t.Errorf("declared generic function: got %q, want [Map]", got)
	}
}

func TestHighlightShell(t *testing.T) {
	code := "$ saccbook run job --set 'cpu=arm64' # the same run\n" +
		"echo \"a \\\" b\" a#b \\# not-a-comment\n" +
		"  $ not a prompt\n" +
		"# a whole-line comment\n" +
		"$ echo 'unclosed"
	segs := highlightShell(code)
	if got := joined(segs); got != code {
		t.Fatalf("the segments are not the code:\n%q\nwant\n%q", got, code)
	}
	for _, tc := range []struct {
		class tokenClass
		want  []string
	}{
		{prompt, []string{"$ ", "$ "}},
		{str, []string{"'cpu=arm64'", `"a \" b"`, "'unclosed"}},
		{comment, []string{"# the same run", "# a whole-line comment"}},
	} {
		if got := classed(segs, tc.class); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: got %q, want %q", highlightClasses[tc.class].name, got, tc.want)
		}
	}
	for _, lang := range []string{"sh", "bash", "shell", "console", "Shell"} {
		if got := classed(highlight(lang, "$ ls # list\n"), comment); len(got) != 1 {
			t.Errorf("%s: want shell highlighting, got comments %q", lang, got)
		}
	}
}

func TestHighlightOtherLanguagesArePlain(t *testing.T) {
	for _, lang := range []string{"", "text", "c", "sacc", "rust", "<b>"} {
		code := "int main() { return 0; } // \"x\" # y\n"
		segs := highlight(lang, code)
		if len(segs) != 1 || segs[0].class != plain || segs[0].text != code {
			t.Errorf("%q: got %q, want the code as one plain segment", lang, segs)
		}
	}
}

// spanTag is every tag the highlighter may write.
var spanTag = regexp.MustCompile(`<span class="hl-[a-z]">|</span>`)

// TestHighlightEscapes feeds the highlighter text made to break out of the code
// block, in every language and in broken Go: the HTML has no tag but the
// highlighter's spans, and its text is the code.
func TestHighlightEscapes(t *testing.T) {
	hostile := []string{
		"</code></pre><script>alert(1)</script>",
		"x := \"</code><img src=x onerror=alert(1)>\" // <!-- & -->\n",
		"`<style>body{}</style>` '<' /* <a href=\"javascript:x\"> */ &amp; &#x3c;",
		"\"unterminated <script>\n$ echo '<b>' # <i>\n",
		"/* unterminated <script>",
		"\xff\xfe<\x80> \ufeff<p> \u2028 é <",
		"'\\'' \"\\\" <>",
	}
	for _, lang := range []string{"go", "sh", "text", ""} {
		for _, code := range hostile {
			var b bytes.Buffer
			writeHighlighted(&b, highlight(lang, code))
			out := b.String()
			rest := spanTag.ReplaceAllString(out, "")
			if strings.ContainsAny(rest, "<>\"'") {
				t.Errorf("%s %q: unescaped markup in\n%s", lang, code, out)
			}
			if got := html.UnescapeString(rest); got != code {
				t.Errorf("%s %q: the text of the HTML is %q", lang, code, got)
			}
		}
	}
}

func TestFencedCodeBlocks(t *testing.T) {
	src := "# T\n\n```go\nfunc f() {}\n```\n\n```Go\nx\n```\n\n```text\n<b>\n```\n\n```\nplain\n```\n\n" +
		"```\"><script>alert(1)</script>\n</pre>\n```\n"
	c, err := renderChapter("00-t.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out := string(c.HTML)
	for _, want := range []string{
		`<pre class="hl"><code class="language-go"><span class="hl-k">func</span> <span class="hl-f">f</span>() {}` + "\n</code></pre>",
		`<pre class="hl"><code class="language-go">x` + "\n</code></pre>",
		`<pre class="hl"><code class="language-text">&lt;b&gt;` + "\n</code></pre>",
		`<pre class="hl"><code>plain` + "\n</code></pre>",
		`<pre class="hl"><code>&lt;/pre&gt;` + "\n</code></pre>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the page lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "<script") || strings.Contains(out, "alert") {
		t.Errorf("a block's language reached the page:\n%s", out)
	}
}

// TestTheBooksCode checks every code block of the book: each is a highlighted
// block, and its Go and shell are coloured.
func TestTheBooksCode(t *testing.T) {
	chs, err := ReadChapters(chapters.FS)
	if err != nil {
		t.Fatal(err)
	}
	langs := map[string]int{}
	pre := regexp.MustCompile(`<pre[^>]*>(<code[^>]*>)?`)
	for _, c := range chs {
		for _, m := range pre.FindAllStringSubmatch(string(c.HTML), -1) {
			if !strings.HasPrefix(m[0], `<pre class="hl"><code`) {
				t.Errorf("%s: a code block is not highlighted: %s", c.File, m[0])
			}
			langs[m[1]]++
		}
		if strings.Contains(string(c.HTML), `class="language-go"`) && !strings.Contains(string(c.HTML), `<span class="hl-k">`) {
			t.Errorf("%s: its Go has no keyword coloured", c.File)
		}
	}
	for _, l := range []string{`<code class="language-go">`, `<code class="language-sh">`, `<code class="language-text">`} {
		if langs[l] == 0 {
			t.Errorf("the book has no %s block any more (have %v): choose another to test", l, langs)
		}
	}
}

func TestHighlightCSS(t *testing.T) {
	css := string(highlightCSS())
	for c, h := range highlightClasses {
		if c == int(plain) {
			continue
		}
		if !strings.Contains(css, "."+h.name+" { "+h.css+"; }") {
			t.Errorf("code.css lacks the rule for %s:\n%s", h.name, css)
		}
	}
}

// FuzzHighlight highlights any text in each language: the segments are the
// code, and the HTML is the code escaped, with no tag but the spans.
func FuzzHighlight(f *testing.F) {
	for _, s := range []string{"func f() { return `x` }", "$ echo 'a' \"b\" # c", "/* x", "\"\\", "\xff<", "a\r\nb"} {
		f.Add("go", s)
		f.Add("sh", s)
	}
	f.Fuzz(func(t *testing.T, lang, code string) {
		if strings.ContainsRune(code, 0) {
			return // written as U+FFFD, by design
		}
		segs := highlight(lang, code)
		want := strings.ReplaceAll(code, "\r", "")
		if got := joined(segs); got != want {
			t.Fatalf("%s: the segments are %q, not the code %q", lang, got, want)
		}
		var b bytes.Buffer
		writeHighlighted(&b, segs)
		rest := spanTag.ReplaceAllString(b.String(), "")
		if strings.ContainsAny(rest, "<>\"'") || html.UnescapeString(rest) != want {
			t.Fatalf("%s %q: the HTML is not the code escaped: %s", lang, code, b.String())
		}
	})
}
