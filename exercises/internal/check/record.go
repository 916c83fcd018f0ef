package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/saccbook/saccbook/sacc/trace"
)

// The run record: every exercise run leaves one file, exercises/.runs/ID.json,
// that `saccbook serve` replays in a widget (docs/PROTOCOL.md, "Recorded runs").
// The server never runs the learner's code: everything it shows comes from here.
const (
	// RunsDir is where run records go, relative to the exercises module.
	RunsDir = ".runs"
	// RecordEvents is the most events a record keeps: the window ends at the
	// failing event when there is one, at the end of the run otherwise.
	RecordEvents = 20_000
	// ServeAddrFile, relative to the exercises module, holds the address of the
	// running `saccbook serve` (it writes the file at start and removes it at stop).
	ServeAddrFile = ".saccbook-serve"
)

// Record is the file's content. Events are the protocol's event objects
// (trace's JSON form, plus "src": the file:line, relative to the workspace
// root, of the code behind a CPU-side event).
type Record struct {
	Exercise string            `json:"exercise"`
	Process  string            `json:"process"` // which go test process wrote it
	Tests    []RecordedTest    `json:"tests"`   // in the order they ended
	Test     string            `json:"test"`    // the test whose machine the events are from
	Failed   bool              `json:"failed"`  // that test failed
	Message  string            `json:"message"` // its first failure message, as the learner saw it
	FailSeq  uint64            `json:"fail_seq"`
	FromSeq  uint64            `json:"from_seq"` // where the learner's code began (the first Do), 0 if it never ran
	Dropped  int               `json:"dropped"`  // events left out before the first one kept
	Events   []json.RawMessage `json:"events"`
}

// RecordedTest is one test of the run and how it ended.
type RecordedTest struct {
	Name   string `json:"name"`
	Failed bool   `json:"failed"`
}

// process names this go test process, so that the tests of one run add to one
// record and a new run starts a new one.
var process = sync.OnceValue(func() string {
	return strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
})

// recordMu serialises the read-modify-write of the record by parallel tests.
var recordMu sync.Mutex

// failure is noted by Report the first time a test of this machine fails.
type failure struct {
	msg string
	seq uint64
}

// runsDir is exercises/.runs when the test runs in an exercise's directory of
// the exercises module (its parent holds go.mod), or "" anywhere else and in
// the workbook's own proof runs (SACCBOOK_NO_RECORD).
func runsDir() string {
	if os.Getenv("SACCBOOK_NO_RECORD") != "" { // set by the workbook's proof runs
		return ""
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	mod := filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(mod, "go.mod")); err != nil {
		return ""
	}
	return filepath.Join(mod, RunsDir)
}

// saveRecord runs when the test ends (t.Cleanup): it adds the test to the
// run's record, and its events when it is the first test to fail or no test
// has failed yet. A record it cannot write only costs the replay, so the
// test is told but not failed.
func (m *Machine) saveRecord() {
	dir := runsDir()
	if dir == "" || m.meta.ID == "" {
		return
	}
	recordMu.Lock()
	defer recordMu.Unlock()
	path := filepath.Join(dir, m.meta.ID+".json")
	var rec Record
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &rec)
	}
	if rec.Process != process() {
		rec = Record{Exercise: m.meta.ID, Process: process()}
	}
	failed := m.t.Failed() || m.fail != nil
	rec.Tests = append(rec.Tests, RecordedTest{Name: m.t.Name(), Failed: failed})
	if !rec.Failed {
		m.fillRecord(&rec, failed)
	}
	b, err := json.Marshal(&rec)
	if err == nil {
		err = writeAtomic(dir, path, b)
	}
	if err != nil {
		m.t.Logf("check: the run was not recorded for saccbook serve: %v", err)
	}
}

// fillRecord puts this machine's run into rec: a window of at most
// RecordEvents events ending at the failing event (or at the end).
func (m *Machine) fillRecord(rec *Record, failed bool) {
	evs := m.rec.Events
	rec.Test, rec.Failed, rec.Message, rec.FailSeq = m.t.Name(), failed, "", 0
	end := len(evs)
	if m.fail != nil {
		rec.Message, rec.FailSeq = m.fail.msg, m.fail.seq
		for end > 0 && evs[end-1].Seq > m.fail.seq+RecordEvents/10 {
			end-- // keep a few events after the failure, most before it
		}
	}
	start := max(0, end-RecordEvents)
	rec.Dropped = start
	rec.FromSeq = 0
	if m.who != "" && m.from < len(evs) {
		rec.FromSeq = evs[m.from].Seq
	}
	res := newResolver()
	rec.Events = make([]json.RawMessage, 0, end-start)
	for i := start; i < end; i++ {
		rec.Events = append(rec.Events, res.event(&evs[i]))
	}
}

// writeAtomic replaces path with b in one step: a server reading it sees the
// old record or the new one, never half of one.
func writeAtomic(dir, path string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".run-*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// resolver turns program counters into source lines relative to the
// workspace root, as the server's /source/ names files.
type resolver struct {
	root  string // the workspace root with a trailing slash, or ""
	cache map[uintptr]string
}

func newResolver() *resolver {
	r := &resolver{cache: map[uintptr]string{}}
	if wd, err := os.Getwd(); err == nil {
		// An exercise's directory is ROOT/exercises/NN-slug.
		r.root = filepath.ToSlash(filepath.Dir(filepath.Dir(wd))) + "/"
	}
	return r
}

func (r *resolver) event(ev *trace.Event) json.RawMessage {
	b := ev.AppendJSON(nil)
	if ev.PC == 0 {
		return b
	}
	src, ok := r.cache[ev.PC]
	if !ok {
		src = r.src(ev.PC)
		r.cache[ev.PC] = src
	}
	if src == "" {
		return b
	}
	q, _ := json.Marshal(src)
	b = append(b[:len(b)-1], `,"src":`...)
	b = append(b, q...)
	return append(b, '}')
}

func (r *resolver) src(pc uintptr) string {
	frame, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	file := filepath.ToSlash(frame.File)
	if file == "" {
		return ""
	}
	switch {
	case r.root != "/" && strings.HasPrefix(file, r.root):
		file = file[len(r.root):]
	case strings.Contains(file, "/exercises/"):
		file = file[strings.LastIndex(file, "/exercises/")+1:]
	case strings.Contains(file, "/sacc/"):
		file = file[strings.LastIndex(file, "/sacc/")+1:]
	default:
		return ""
	}
	return fmt.Sprintf("%s:%d", file, frame.Line)
}

// RunLink is the sentence of a failure message that opens the recorded run in
// the browser: the address of the running server, read from the file it
// leaves in the workspace, or how to start one.
func RunLink(id string, seq uint64) string {
	frag := ""
	if seq > 0 {
		frag = "#seq=" + strconv.FormatUint(seq, 10)
	}
	if addr := serveAddr(); addr != "" {
		return fmt.Sprintf("See this run step by step:        open http://%s/runs/%s%s\n", addr, id, frag)
	}
	return fmt.Sprintf("See this run step by step:        run saccbook serve and open /runs/%s%s\n", id, frag)
}

// serveAddr is the host:port the running `saccbook serve` wrote into the
// workspace, or "" when none runs.
func serveAddr() string {
	dir := runsDir()
	if dir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), ServeAddrFile))
	if err != nil {
		return ""
	}
	addr := string(bytes.TrimSpace(b))
	if addr == "" || strings.ContainsAny(addr, "/ \t\n") {
		return ""
	}
	return addr
}
