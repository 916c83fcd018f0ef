package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkCheckWarm measures the learner's feedback loop, saccbook check ID,
// with go's build cache warm (a first check, not timed, warms it) on an
// exercise as shipped, whose tests fail. "again" checks the same file once
// more; "edited" changes the code before every check, as a save would, so the
// go command compiles, vets, links and runs the tests anew. Each reports the
// median of its runs as ms/median, beside the mean that ns/op is.
//
//	go test -run x -bench CheckWarm -benchtime 10x ./cmd/saccbook
func BenchmarkCheckWarm(b *testing.B) {
	root := copyWorkbook(b)
	const id = "01-find-device"
	file := filepath.Join(root, "exercises", id, "exercise.go")
	shipped := readFile(b, file)
	check := func(b *testing.B) {
		var out strings.Builder
		code := dispatch(context.Background(), []string{"check", id, "--root", root}, strings.NewReader(""), &out, io.Discard)
		if code != 1 || !strings.Contains(out.String(), " fail") {
			b.Fatalf("check %s on the stub: code %d, want 1 and failing tests:\n%s", id, code, out.String())
		}
	}
	check(b)
	for _, edited := range []bool{false, true} {
		name := map[bool]string{false: "again", true: "edited"}[edited]
		b.Run(name, func(b *testing.B) {
			var times []time.Duration
			for b.Loop() {
				if edited {
					// A new declaration, not a comment: the compiled package
					// changes, so nothing downstream can come from the cache.
					writeFile(b, file, shipped+fmt.Sprintf("\nvar benchmarkEdit = %d\n", len(times)))
				}
				start := time.Now()
				check(b)
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/float64(time.Millisecond), "ms/median")
		})
	}
}
