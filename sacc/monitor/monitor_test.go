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
	r, err := runner.New(machineFactory, func(m *machine.Machine) error { return w.Run(m, io.Discard) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
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

// eventWhere is the sequence number of the first event of a plain run of the
// workload that satisfies ok, plus skip more events.
func eventWhere(t testing.TB, name string, skip uint64, ok func(ev trace.Event) bool) uint64 {
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
		if ok(ev) {
			return ev.Seq + skip
		}
	}
	t.Fatalf("workload %s has no such event", name)
	return 0
}

// plainTrace is the text trace of a plain run, one line per event.
func plainTrace(t testing.TB, name string) []string {
	t.Helper()
	w, _ := baremetal.FindWorkload(name)
	m, err := machineFactory()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m.Tracer().Attach(trace.NewTextWriter(&out))
	if err := w.Run(m, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(out.String(), "\n")
	return lines[:len(lines)-1]
}

// The views each golden point shows; stop comes first because xp of a register is
// a real access, which adds events.
var views = []string{
	"stop",
	"info pci",
	"info mtree",
	"info registers",
	"info rings",
	"info iommu",
	"info iommu 0x210000",
	"info iommu 0x3000000",
	"info irq",
	"xp /4xg 0x110000",
	"x /8xw 0x100000",
	"x /16c 0x210000",
	"xp /8xw 0xb0018000",
}

// TestGoldenViews pins every view at four points of the mixed workload: just after
// the second IOMMU fault was logged, the CQ-full stall (rings wrapped, the device
// stalled, the IOTLB warm), a copy through a stale IOTLB entry, and the end.
func TestGoldenViews(t *testing.T) {
	points := []struct {
		name string
		seq  func(t *testing.T) uint64
	}{
		{"stall", func(t *testing.T) uint64 {
			return eventWhere(t, "mixed", 0, func(ev trace.Event) bool { return ev.Kind == trace.CQFull })
		}},
		{"faults", func(t *testing.T) uint64 {
			// The completion of the command whose source was unmapped: the fault
			// record is in the log by then (a run held in the fault event itself is
			// held before the record is written).
			return eventWhere(t, "mixed", 0, func(ev trace.Event) bool { return ev.Kind == trace.CQPost && ev.Args[1] == 0x16 })
		}},
		{"stale", func(t *testing.T) uint64 {
			// The copy through a stale IOTLB entry: the destination page was remapped
			// without an INVALIDATE, and the IOTLB still holds the old translation.
			return eventWhere(t, "mixed", 0, func(ev trace.Event) bool { return ev.Kind == trace.CQPost && ev.Args[1] == 0x30 })
		}},
		{"end", nil},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			r := newRun(t, "mixed")
			var st runner.State
			var err error
			if p.seq != nil {
				st, err = r.RunTo(p.seq(t))
			} else {
				st, err = r.Continue()
			}
			if err != nil || st.Err != nil {
				t.Fatalf("%+v %v", st, err)
			}
			var out bytes.Buffer
			mo := New(r, &out)
			for _, v := range views {
				out.Reset()
				if mo.Exec(v) {
					t.Fatalf("%q quit", v)
				}
				name := p.name + "-" + strings.NewReplacer(" ", "-", "/", "").Replace(v)
				golden(t, name, out.String())
			}
		})
	}
}

// TestScriptedSession is a whole conversation with the monitor, from the start of
// the job workload to quit, pinned as a transcript.
func TestScriptedSession(t *testing.T) {
	r := newRun(t, "job")
	var out bytes.Buffer
	mo := New(r, &out)
	got := session(mo, &out,
		"help",
		"info",
		"stop",
		"xp /4xw 0x100000",
		"step",
		"step 3",
		"stop",
		"back 2",
		"stop",
		"trace on",
		"step 2",
		"trace",
		"trace off",
		"step 2",
		"xp",
		"xp/2c 0x200000",
		"frobnicate",
		"info frob",
		"xp /s 0",
		"xp /4xw",
		"xp 0x10000000000000000",
		"step 0",
		"help xp",
		"help info",
		"",
		"c",
		"cont",
		"step",
		"info rings",
		"x /2xg 0x201000",
		"xp /4xb 0xf0000000",
		"back 1000000",
		"q",
		"stop", // never reached
	)
	golden(t, "session", got)
	if !strings.HasSuffix(got, "[quit]\n") {
		t.Errorf("the session did not end at quit")
	}
}

// TestStepPrintsTheTrace: step n prints exactly the lines a plain run
// traces, in order, whatever the step sizes.
func TestStepPrintsTheTrace(t *testing.T) {
	want := plainTrace(t, "job")
	r := newRun(t, "job")
	var out bytes.Buffer
	mo := New(r, &out)
	var got []string
	for i, n := 0, 1; ; i, n = i+1, n%7+1 {
		out.Reset()
		mo.Exec("step " + string(rune('0'+n)))
		if strings.HasPrefix(out.String(), "the program has finished") || i > 1000 {
			break
		}
		lines := strings.SplitAfter(out.String(), "\n")
		lines = lines[:len(lines)-1]
		last := lines[len(lines)-1]
		if !strings.HasPrefix(last, "stopped after event") && !strings.HasPrefix(last, "program finished") {
			t.Fatalf("step %d ended with %q", n, last)
		}
		got = append(got, lines[:len(lines)-1]...)
	}
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Fatalf("stepping printed\n%s\nwant\n%s", strings.Join(got, ""), strings.Join(want, ""))
	}
}

// TestBackShowsTheSameMachine: stepping back shows the same state.
func TestBackShowsTheSameMachine(t *testing.T) {
	r := newRun(t, "mixed")
	var out bytes.Buffer
	mo := New(r, &out)
	look := func() string {
		out.Reset()
		for _, v := range []string{"stop", "info registers", "info rings", "info iommu", "info irq"} {
			mo.Exec(v)
		}
		return out.String()
	}
	mo.Exec("step 300")
	first := look()
	mo.Exec("step 57")
	if look() == first {
		t.Fatal("57 events changed nothing")
	}
	out.Reset()
	mo.Exec("back 57")
	if again := look(); again != first {
		t.Fatalf("after back:\n%s\nfirst time:\n%s", again, first)
	}
}

// TestExecNeverPanics throws odd lines at a monitor in every state.
func TestExecNeverPanics(t *testing.T) {
	r := newRun(t, "mixed")
	var out bytes.Buffer
	mo := New(r, &out)
	lines := []string{
		"xp /65536g 0", "xp /65536xg 0xfffffffffffffff0", "x /16xg 0xfffffffffffff000", "xp /8xg 0xfffffffffffffffc",
		"xp /3xw 0x7fffffe", "xp /4xg 0xfed90000", "xp /4xw 0xfee00000", "xp /2xh 0xc0002000",
		"info iommu -1", "info iommu 0x1000000000000", "x /4xw 0x3000000", "xp /c 0", "xp /0x 0",
		"\x00", "\xff\xfe", "xp \x00", "info \x00", "step 99999999999", "back 99999999999", "trace on", "trace off",
	}
	for _, l := range lines {
		out.Reset()
		mo.Exec(l)
		if strings.Contains(out.String(), "internal error") {
			t.Errorf("%q: %s", l, out.String())
		}
	}
	r.Close()
	out.Reset()
	mo.Exec("info pci")
	if !strings.Contains(out.String(), "closed") {
		t.Errorf("after Close: %q", out.String())
	}
}

// TestPanicInAViewIsOneInternalErrorLine: a view that panics on the machine's
// goroutine is reported as one line, and the run stays held and usable.
func TestPanicInAViewIsOneInternalErrorLine(t *testing.T) {
	r := newRun(t, "job")
	var out bytes.Buffer
	mo := New(r, &out)
	mo.Exec("step 5")
	err := mo.view(func(b *bytes.Buffer, m *machine.Machine) {
		b.WriteString("partial\n")
		panic("the view broke")
	})
	if err == nil || err.Error() != "internal error: the view broke" {
		t.Fatalf("view that panics = %v", err)
	}
	if st := r.State(); st.Seq != 5 || st.Done {
		t.Fatalf("the run after the panic: %+v", st)
	}
	out.Reset()
	mo.Exec("info registers")
	if !strings.Contains(out.String(), "MAGIC") {
		t.Errorf("info registers after the panic: %q", out.String())
	}
}
