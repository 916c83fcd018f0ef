package static_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/saccbook/saccbook/sacc/machine"
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

// fixtureScenarios are the runs the JavaScript tests fold: one job's whole path,
// and three laps of a CQ with its phase flips.
var fixtureScenarios = []string{"job", "phases"}

func TestManifestFixture(t *testing.T) {
	var b bytes.Buffer
	if err := json.Indent(&b, manifest.JSON(), "", " "); err != nil {
		t.Fatal(err)
	}
	checkFixture(t, "manifest.json", b.Bytes())
}

func TestEventFixtures(t *testing.T) {
	for _, name := range fixtureScenarios {
		t.Run(name, func(t *testing.T) {
			s, ok := scenario.Find(name)
			if !ok {
				t.Fatalf("no scenario %s", name)
			}
			m, err := machine.New(machine.Config{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var buf trace.Buffer
			m.Tracer().Attach(&buf)
			if err := s.Run(m, &scenario.Env{Log: io.Discard}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// One event per line, as the protocol's events carry them (less src).
			var b bytes.Buffer
			b.WriteString("[\n")
			for i, ev := range buf.Events {
				b.Write(ev.AppendJSON(nil))
				if i+1 < len(buf.Events) {
					b.WriteByte(',')
				}
				b.WriteByte('\n')
			}
			b.WriteString("]\n")
			checkFixture(t, name+".events.json", b.Bytes())
		})
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
