package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/saccbook/saccbook/sacc"
	"github.com/saccbook/saccbook/sacc/host"
)

// workspace lays out ROOT/exercises/00-test as an exercise's directory in the
// exercises module, and makes it the current directory.
func workspace(t *testing.T) (mod string) {
	t.Helper()
	root := t.TempDir()
	mod = filepath.Join(root, "exercises")
	dir := filepath.Join(mod, "00-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"id": "00-test", "chapter_url": "/chapters/00-test"}`
	for name, text := range map[string]string{filepath.Join(mod, "go.mod"): "module x\n", filepath.Join(dir, "meta.json"): meta} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	return mod
}

// runFake runs body as a test called name whose machine is recorded when it ends.
func runFake(t *testing.T, name string, body func(m *Machine)) (msg string) {
	t.Run(name, func(st *testing.T) {
		ft := &fakeT{TB: st}
		done := make(chan struct{})
		go func() {
			defer close(done)
			body(Boot(ft, host.Config{}))
		}()
		<-done
		msg = ft.fatal
	})
	return msg
}

func readRecord(t *testing.T, mod string) Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mod, RunsDir, "00-test.json"))
	if err != nil {
		t.Fatalf("no run record: %v", err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("run record: %v", err)
	}
	return rec
}

func TestRecordKeepsTheFailingRunWithTheLearnersLines(t *testing.T) {
	mod := workspace(t)
	var line int
	runFake(t, "passes", func(m *Machine) {
		m.Do("Quiet", 1_000_000, func() { m.CPU.Delay(10) })
	})
	msg := runFake(t, "fails", func(m *Machine) {
		m.Do("Scan", 1_000_000, func() {
			_, _, line, _ = runtime.Caller(0)
			m.CPU.Readl(sacc.ECAMBase) // the learner's read: its line is recorded
		})
		m.Fatalf("the scan found nothing")
	})
	runFake(t, "later", func(m *Machine) {
		m.Do("Other", 1_000_000, func() { m.CPU.Readl(sacc.ECAMBase) })
	})
	rec := readRecord(t, mod)
	if rec.Exercise != "00-test" || rec.Test != t.Name()+"/fails" || !rec.Failed || !strings.Contains(rec.Message, "the scan found nothing") {
		t.Fatalf("record: exercise %q test %q failed %v message %q; want the failing test's run", rec.Exercise, rec.Test, rec.Failed, rec.Message)
	}
	if len(rec.Tests) != 3 || rec.Tests[0].Failed || !rec.Tests[1].Failed || rec.Tests[2].Failed {
		t.Errorf("record's tests: %+v; want passes, fails (failed), later", rec.Tests)
	}
	want := "exercises/internal/check/record_test.go:" + strconv.Itoa(line+1)
	found := false
	var last struct {
		Seq  uint64 `json:"seq"`
		Kind string `json:"kind"`
		Src  string `json:"src"`
	}
	for _, raw := range rec.Events {
		if err := json.Unmarshal(raw, &last); err != nil {
			t.Fatalf("event %s: %v", raw, err)
		}
		if last.Src == want {
			found = true
		}
	}
	if !found {
		t.Errorf("no recorded event has src %q (the learner's line)", want)
	}
	if rec.FailSeq == 0 || last.Seq != rec.FailSeq {
		t.Errorf("fail_seq %d, last event kept %d: the record should end at the failing event", rec.FailSeq, last.Seq)
	}
	if !strings.Contains(msg, "run saccbook serve and open /runs/00-test#seq="+strconv.FormatUint(rec.FailSeq, 10)) {
		t.Errorf("the failure message does not say how to open the run:\n%s", msg)
	}
}

func TestRecordLinksToTheRunningServer(t *testing.T) {
	mod := workspace(t)
	if err := os.WriteFile(filepath.Join(mod, ServeAddrFile), []byte("127.0.0.1:41234\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	msg := runFake(t, "fails", func(m *Machine) { m.Fatalf("nothing ran") })
	if !strings.Contains(msg, "open http://127.0.0.1:41234/runs/00-test") || !strings.Contains(msg, "open http://127.0.0.1:41234/chapters/00-test") {
		t.Errorf("with a server running, the message should link to it:\n%s", msg)
	}
}

func TestRecordOfAPassingRunAndANewRun(t *testing.T) {
	mod := workspace(t)
	runFake(t, "passes", func(m *Machine) { m.Do("Quiet", 1_000_000, func() { m.CPU.Readl(sacc.ECAMBase) }) })
	rec := readRecord(t, mod)
	if rec.Failed || rec.FailSeq != 0 || len(rec.Events) == 0 || rec.FromSeq == 0 {
		t.Errorf("passing run: failed %v fail_seq %d, %d events, from %d", rec.Failed, rec.FailSeq, len(rec.Events), rec.FromSeq)
	}
	// A record left by another process is replaced, not added to.
	rec.Process, rec.Tests = "another", append(rec.Tests, RecordedTest{Name: "old"})
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(mod, RunsDir, "00-test.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	runFake(t, "again", func(m *Machine) {})
	if rec := readRecord(t, mod); len(rec.Tests) != 1 {
		t.Errorf("a new run's record has tests %+v; want only the new run's", rec.Tests)
	}
}

func TestRecordIsBounded(t *testing.T) {
	mod := workspace(t)
	runFake(t, "long", func(m *Machine) {
		m.Do("Spin", 100_000_000, func() {
			for range RecordEvents + 500 {
				m.CPU.Readl(sacc.ECAMBase)
			}
		})
	})
	rec := readRecord(t, mod)
	if len(rec.Events) != RecordEvents || rec.Dropped == 0 {
		t.Errorf("a long run kept %d events, dropped %d; want %d kept", len(rec.Events), rec.Dropped, RecordEvents)
	}
}
