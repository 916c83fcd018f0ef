package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRenderChapter renders arbitrary chapter text: the book's Markdown dialect
// with its sacc-run widget blocks, markers and folds. It must never panic; a
// refused chapter is refused with errors that each name the file; and an accepted
// one has a title, no raw HTML or script of its own, and exactly one widget
// element per widget found, numbered in order.
func FuzzRenderChapter(f *testing.F) {
	// The book's own chapters (read from the source tree, not imported: web does
	// not depend on the chapters), and a few small pages of every widget form.
	// (The chapters are long, so minimizing an interesting input built on one
	// takes many runs: .ci/run bounds it with -fuzzminimizetime.)
	files, err := filepath.Glob("../chapters/*.md")
	if err != nil || len(files) == 0 {
		f.Fatalf("no chapters to seed from: %v", err)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, seed := range []string{
		"# T\n\n```sacc-run scenario=job views=ring,trace markers=bell=sacc_doorbell,post=sacc_cq_post(status=0)#1>bell start=post fold=none memory=cq\n```\n",
		"# T\n\n```sacc-run scenario=driver options=cpu=arm64 seq=12\n```\n\n> ```sacc-run scenario=job\n> ```\n",
		"# T\n\n- ```sacc-run scenario=nosuch\n  ```\n\n```sacc-run scenario=job colour=red\nbody\n```\n",
		"# T <script>alert(1)</script>\n\n<style>x</style> [a](javascript:alert(1)) ![b](javascript:x) <a href=\"x\" onclick=\"y\">z</a>\n",
		"# T\n\n| a | b |\n|---|---|\n| `sacc-run` | [^n] |\n\n[^n]: note\n\n## Section {#id}\n\n[link](04-dma.md#the-copy)\n",
		"# \n", "#", "", "text\n", "# T\n\n~~~sacc-run scenario=job\n~~~\n````\n```sacc-run\n````\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		const name = "05-fuzzed.md"
		c, err := renderChapter(name, src)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, name+":") {
					t.Fatalf("an error line does not name the file: %q", line)
				}
			}
			return
		}
		if strings.TrimSpace(c.Title) == "" {
			t.Fatal("accepted with an empty title")
		}
		page := strings.ToLower(string(c.HTML))
		for _, bad := range []string{"<script", "<style", "<iframe", `href="javascript:`, `src="javascript:`} {
			if strings.Contains(page, bad) {
				t.Fatalf("the page has %s:\n%s", bad, c.HTML)
			}
		}
		if n := strings.Count(string(c.HTML), `<div class="sacc-widget"`); n != len(c.Widgets) {
			t.Fatalf("%d widget elements for %d widgets", n, len(c.Widgets))
		}
		for i, w := range c.Widgets {
			if w.Index != i+1 || w.Scenario == "" {
				t.Fatalf("widget %d: %+v", i, w)
			}
		}
	})
}
