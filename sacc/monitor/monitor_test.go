package monitor

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc/baremetal"
	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/runner"
	"github.com/saccbook/saccbook/sacc/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func machineFactory() (*machine.Machine, error) { return machine.New(machine.Config{Seed: 1}) }

// newRun starts a workload held before its first event, with the monitor's tap.
func newRun(t testing.TB, name string) *runner.Runner {
	t.Helper()
	w, ok := baremetal.FindWorkload(name)
	if !ok {
		t.Fatalf("no workload %q", name)
	}
	r, err := runner.New(Factory(machineFactory), func(m *machine.Machine) error { return w.Run(m, io.Discard) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// firstEvent is the sequence number of the first event of kind k in a plain run of
// the workload.
func firstEvent(t testing.TB, name string, k trace.Kind) uint64 {
	t.Helper()
	w, _ := baremetal.FindWorkload(name)
	m, err := machineFactory()
	if err != nil {
		t.Fatal(err)
	}
	var buf trace.Buffer
	m.Tracer().Attach(&buf)
	if err := w.Run(m, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, ev := range buf.Events {
		if ev.Kind == k {
			return ev.Seq
		}
	}
	t.Fatalf("workload %s has no %v event", name, k)
	return 0
}

// session runs lines through a monitor and returns the transcript, each command
// preceded by the prompt and the line as a terminal would show them.
func session(mo *Monitor, out *bytes.Buffer, lines ...string) string {
	var tr strings.Builder
	for _, l := range lines {
		out.Reset()
		quit := mo.Exec(l)
		tr.WriteString("(saccbook) " + l + "\n")
		tr.Write(out.Bytes())
		if quit {
			tr.WriteString("[quit]\n")
			break
		}
	}
	return tr.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (run go test -update after an intended change):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}
