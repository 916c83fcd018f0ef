package static_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/monitor"
	"github.com/saccbook/saccbook/sacc/runner"
	"github.com/saccbook/saccbook/sacc/scenario"
	"github.com/saccbook/saccbook/sacc/trace"
	"github.com/saccbook/saccbook/web/manifest"
)

var update = flag.Bool("update", false, "rewrite the fixtures of the JavaScript tests in test/testdata/")

// The JavaScript tests (node --test static/test) read what the server would send
// them from test/testdata/: the manifest, and the event logs of two scenarios.
// They are made here, from the Go registries and real runs, and these tests fail
// as soon as one of them no longer matches what the server sends: then run
// `go test ./static -update`.

// A fixtureRun is one run the JavaScript tests fold: a scenario with options,
// seed 1, written as NAME.events.json.
type fixtureRun struct {
	name, scenario string
	options        map[string]string
}

// fixtureRuns: one job's whole path; three laps of a CQ with its phase flips; a
// doorbell overtaking its descriptor on arm64; a CQ-full stall; rings behind the
// IOMMU; the IOMMU at work; kernel bypass; configuration space.
var fixtureRuns = []fixtureRun{
	{"job", "job", nil},
	{"phases", "phases", nil},
	{"overtake", "barriers", map[string]string{"cpu": "arm64", "wmb": "off"}},
	{"stall", "cq-stall", nil},
	{"dma-iommu", "dma", map[string]string{"iommu": "on"}},
	{"iommu", "iommu", nil},
	{"bypass", "bypass-tour", nil},
	{"config", "find-device", nil},
}

// ringRuns are the runs whose `info rings` answer, at every position, is written
// next to their events (NAME.rings.json), so that the JavaScript tests can hold
// the ring view's ownership and contents against the monitor's.
var ringRuns = []string{"job", "phases", "overtake", "stall", "dma-iommu"}

func findRun(t *testing.T, name string) fixtureRun {
	for _, r := range fixtureRuns {
		if r.name == name {
			return r
		}
	}
	t.Fatalf("no fixture run %s", name)
	return fixtureRun{}
}

func (r fixtureRun) program(t *testing.T) func(m *machine.Machine) error {
	s, ok := scenario.Find(r.scenario)
	if !ok {
		t.Fatalf("no scenario %s", r.scenario)
	}
	return func(m *machine.Machine) error {
		return s.Run(m, &scenario.Env{Log: io.Discard, Options: r.options})
	}
}

func TestManifestFixture(t *testing.T) {
	var b bytes.Buffer
	if err := json.Indent(&b, manifest.JSON(), "", " "); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, "manifest.json", b.Bytes())
}

func TestEventFixtures(t *testing.T) {
	for _, r := range fixtureRuns {
		t.Run(r.name, func(t *testing.T) {
			m, err := machine.New(machine.Config{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var buf trace.Buffer
			m.Tracer().Attach(&buf)
			if err := r.program(t)(m); err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			// One event per line, as the protocol's events carry them, with src
			// as its file only (a line number would make every edit of the
			// driver a stale fixture).
			var b bytes.Buffer
			b.WriteString("[\n")
			for i, ev := range buf.Events {
				js := ev.AppendJSON(nil)
				if f := srcFile(ev.PC); f != "" {
					js = append(js[:len(js)-1], `,"src":`...)
					js = append(strconv.AppendQuote(js, f), '}')
				}
				b.Write(js)
				if i+1 < len(buf.Events) {
					b.WriteByte(',')
				}
				b.WriteByte('\n')
			}
			b.WriteString("]\n")
			checkFixture(t, r.name+".events.json", b.Bytes())
		})
	}
}

// srcFile is the file of the code behind a CPU-side event, from the module root.
func srcFile(pc uintptr) string {
	if pc == 0 {
		return ""
	}
	fn := runtime.FuncForPC(pc - 1)
	if fn == nil {
		return ""
	}
	file, _ := fn.FileLine(pc - 1)
	if i := strings.LastIndex(file, "/sacc/"); i >= 0 {
		return file[i+1:]
	}
	return filepath.Base(file)
}

// TestRingsFixtures writes what the monitor's `info rings` answers at every
// position of a run (0 = before the first event), the answers deduplicated:
// {"at": [index into texts, per position], "texts": [...]}.
func TestRingsFixtures(t *testing.T) {
	for _, name := range ringRuns {
		t.Run(name, func(t *testing.T) {
			r := findRun(t, name)
			run, err := runner.New(func() (*machine.Machine, error) {
				return machine.New(machine.Config{Seed: 1})
			}, r.program(t))
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			var out bytes.Buffer
			mo := monitor.New(run, &out)
			index := map[string]int{}
			var texts []string
			var at []int
			for pos := uint64(0); ; pos++ {
				st, err := run.RunTo(pos)
				if err != nil {
					t.Fatal(err)
				}
				if st.Seq < pos {
					break // past the end
				}
				out.Reset()
				mo.Exec("info rings")
				text := out.String()
				k, ok := index[text]
				if !ok {
					k = len(texts)
					index[text] = k
					texts = append(texts, text)
				}
				at = append(at, k)
			}
			b, err := json.Marshal(struct {
				At    []int    `json:"at"`
				Texts []string `json:"texts"`
			}{at, texts})
			if err != nil {
				t.Fatal(err)
			}
			checkFixture(t, name+".rings.json", append(b, '\n'))
		})
	}
}

// TestCapstoneLogFixture writes the capstone's narrative, the lines its end
// message carries, for the chart of its results.
func TestCapstoneLogFixture(t *testing.T) {
	for _, size := range []string{"4096", "256"} {
		s, _ := scenario.Find("capstone")
		m, err := machine.New(machine.Config{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		if err := s.Run(m, &scenario.Env{Log: &log, Options: map[string]string{"size": size}}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(log.String(), "\n"), "\n")
		b, err := json.MarshalIndent(lines, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		checkFixture(t, fmt.Sprintf("capstone-%s.log.json", size), append(b, '\n'))
	}
}

func checkFixture(t *testing.T, name string, want []byte) {
	t.Helper()
	path := filepath.Join("test", "testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test ./static -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: the server now sends something else; run go test ./static -update and commit it", path)
	}
}
