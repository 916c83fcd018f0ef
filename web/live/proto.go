package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/saccbook/saccbook/sacc/trace"
	"github.com/saccbook/saccbook/web/manifest"
)

// The protocol's constants (docs/PROTOCOL.md).
const (
	protoVersion = 1
	maxBatch     = 512 // events per events message on a private session
	sharedBatch  = 16  // events per events message on a shared stream

	codeBadRequest  = "bad-request"
	codeUnsupported = "unsupported-version"
	codeFailed      = "session-failed"
	codeTooSlow     = "too-slow"
	codeTooMany     = "too-many-sessions"

	// runBaseline marks what belongs to the run without the quirks, when a hello
	// asked for some: its events, its end, and inspection of it.
	runBaseline = "baseline"
	// runRecorded is a hello's run for a learner's recorded exercise run: its
	// events come from the record, no machine runs.
	runRecorded = "recorded"
)

// ---------------------------------------------------------------------------
// Client messages

// clientMsg is any client message, decoded field by field so that each mistake
// gets its own message.
type clientMsg struct {
	Type     string
	V        json.Number // hello: the protocol version
	HasV     bool
	Scenario string
	Seed     uint64
	HasSeed  bool
	Options  map[string]string
	Quirks   []string // hello: the bugs to switch on
	Profile  string   // hello: the machine's profile ("" for the default)
	Hunt     int      // hello: a bug hunt's number, instead of a scenario
	HasHunt  bool
	ID       json.RawMessage // echoed in replies: a number or a string
	Seq      uint64
	HasSeq   bool
	Line     string
	Run      string // inspect: "" (the run) or "baseline" (the run without the quirks); hello: "" or "recorded"
	Exercise string // hello with run "recorded": whose recorded run to replay
}

// parseClient decodes one client message. On error, the message's id is still
// returned when it could be read, so that the error can carry it.
func parseClient(data []byte) (clientMsg, error) {
	var m clientMsg
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return m, fmt.Errorf("not a JSON object: %v", err)
	}
	if raw, ok := fields["id"]; ok && string(raw) != "null" {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || !(raw[0] == '"' || raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
			return m, fmt.Errorf("id: want a number or a string")
		}
		m.ID = raw
	}
	raw, ok := fields["type"]
	if !ok {
		return m, fmt.Errorf(`no "type"`)
	}
	if err := json.Unmarshal(raw, &m.Type); err != nil {
		return m, fmt.Errorf("type: want a string")
	}
	field := func(name string, dst any, want string) (bool, error) {
		raw, ok := fields[name]
		if !ok || string(raw) == "null" {
			return false, nil
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return false, fmt.Errorf("%s: want %s", name, want)
		}
		return true, nil
	}
	var err error
	switch m.Type {
	case "hello":
		// The version first: a hello of another version may mean anything by
		// its other fields.
		if m.HasV, err = field("v", &m.V, "a number"); err != nil || !versionOK(m) {
			m.HasV = false
			return m, nil
		}
		if _, err = field("scenario", &m.Scenario, "a string"); err != nil {
			return m, err
		}
		if m.HasSeed, err = field("seed", &m.Seed, "an unsigned integer"); err != nil {
			return m, err
		}
		if _, err = field("options", &m.Options, "an object of strings"); err != nil {
			return m, err
		}
		if _, err = field("quirks", &m.Quirks, "an array of quirk names"); err != nil {
			return m, err
		}
		if m.HasHunt, err = field("hunt", &m.Hunt, "a hunt's number"); err != nil {
			return m, err
		}
		if m.HasHunt && m.Hunt < 1 {
			return m, fmt.Errorf("hunt: want a hunt's number, from 1")
		}
		if _, err = field("profile", &m.Profile, "a string"); err != nil {
			return m, err
		}
		if _, err = field("run", &m.Run, "a string"); err != nil {
			return m, err
		}
		if _, err = field("exercise", &m.Exercise, "a string"); err != nil {
			return m, err
		}
		if m.Run != "" && m.Run != runRecorded {
			return m, fmt.Errorf("hello: run %q: want %q or none", m.Run, runRecorded)
		}
	case "inspect":
		if m.HasSeq, err = field("seq", &m.Seq, "an unsigned integer"); err != nil {
			return m, err
		}
		if !m.HasSeq {
			return m, fmt.Errorf("inspect: seq is required")
		}
		if _, err = field("line", &m.Line, "a string"); err != nil {
			return m, err
		}
		if _, err = field("run", &m.Run, "a string"); err != nil {
			return m, err
		}
		if m.Run != "" && m.Run != runBaseline {
			return m, fmt.Errorf("inspect: run %q: want %q or none", m.Run, runBaseline)
		}
	case "ping":
	default:
		return m, fmt.Errorf("unknown message type %q", m.Type)
	}
	return m, nil
}

// versionOK reports whether a hello's version is one this server speaks.
func versionOK(m clientMsg) bool {
	if !m.HasV {
		return false
	}
	n, err := strconv.ParseInt(m.V.String(), 10, 64)
	return err == nil && n == protoVersion
}

// ---------------------------------------------------------------------------
// Server messages

type welcomeMsg struct {
	Type     string            `json:"type"`
	V        int               `json:"v"`
	Session  string            `json:"session"`
	Scenario string            `json:"scenario"`
	Seed     uint64            `json:"seed"`
	Options  map[string]string `json:"options"`
	Quirks   []string          `json:"quirks"`  // the bugs switched on, in the registry's spelling; never nil
	Compare  bool              `json:"compare"` // the run without them follows, then a diverge
	Profile  string            `json:"profile"`
	Shared   bool              `json:"shared"`
	Hunt     int               `json:"hunt,omitempty"`     // the bug hunt whose variant this is
	Run      string            `json:"run,omitempty"`      // "recorded" for a recorded run
	Exercise string            `json:"exercise,omitempty"` // the recorded run's exercise
	FailSeq  uint64            `json:"fail_seq,omitempty"` // the recorded run's failing event, 0 if it passed
	Kinds    json.RawMessage   `json:"kinds"`
}

type endMsg struct {
	Type  string   `json:"type"`
	V     int      `json:"v"`
	Run   string   `json:"run,omitempty"` // "baseline" for the run without the quirks
	Seq   uint64   `json:"seq"`
	T     uint64   `json:"t"`
	Error string   `json:"error"`
	Log   []string `json:"log"`
}

type inspectMsg struct {
	Type   string          `json:"type"`
	V      int             `json:"v"`
	ID     json.RawMessage `json:"id,omitempty"`
	Run    string          `json:"run,omitempty"`
	Seq    uint64          `json:"seq"`
	Output string          `json:"output"`
}

type pongMsg struct {
	Type string          `json:"type"`
	V    int             `json:"v"`
	ID   json.RawMessage `json:"id,omitempty"`
}

type errorMsg struct {
	Type    string          `json:"type"`
	V       int             `json:"v"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	ID      json.RawMessage `json:"id,omitempty"`
	Run     string          `json:"run,omitempty"` // "baseline": the run without the quirks failed
}

// divergeMsg says where the run with the quirks parts from the run without them
// (trace.FirstDifference): seq is the first event that differs, 0 when none does;
// event and baseline are that event of each run, null where that run had
// already ended.
type divergeMsg struct {
	Type     string          `json:"type"`
	V        int             `json:"v"`
	Seq      uint64          `json:"seq"`
	Event    json.RawMessage `json:"event"`
	Baseline json.RawMessage `json:"baseline"`
}

// encode marshals a server message (without HTML escaping: the client is a
// script, not an HTML parser).
func encode(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("live: encoding %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func errorMessage(code, message string, id json.RawMessage) []byte {
	return encode(errorMsg{Type: "error", V: protoVersion, Code: code, Message: message, ID: id})
}

func endMessage(run string, seq, t uint64, err error, log []string) []byte {
	m := endMsg{Type: "end", V: protoVersion, Run: run, Seq: seq, T: t, Log: log}
	if err != nil {
		m.Error = err.Error()
	}
	if m.Log == nil {
		m.Log = []string{}
	}
	return encode(m)
}

// logLines splits a scenario's narrative into lines.
func logLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

// kindsJSON is the welcome's table of event kinds: side, argument names and what
// the kind means, as the manifest has them.
var kindsJSON = sync.OnceValue(func() json.RawMessage { return encode(manifest.Kinds()) })

// ---------------------------------------------------------------------------
// Events

// appendEventsHeader starts an events message of run ("" or "baseline"); the
// batch's events follow, separated by commas, and closeEvents ends it.
func appendEventsHeader(b []byte, run string, from uint64) []byte {
	b = append(b, `{"type":"events","v":1,`...)
	if run != "" {
		b = append(b, `"run":`...)
		b = append(b, encode(run)...)
		b = append(b, ',')
	}
	b = append(b, `"from":`...)
	b = strconv.AppendUint(b, from, 10)
	return append(b, `,"events":[`...)
}

func closeEvents(b []byte) []byte { return append(b, "]}"...) }

// appendEvent appends one event as the protocol's JSON object: trace's own JSON
// form, plus "src" for an event whose causing source line is known.
func appendEvent(b []byte, ev *trace.Event) []byte {
	b = ev.AppendJSON(b)
	if ev.PC != 0 {
		if src := srcJSON(ev.PC); src != "" {
			b = b[:len(b)-1] // the closing brace
			b = append(b, `,"src":`...)
			b = append(b, src...)
			b = append(b, '}')
		}
	}
	return b
}

// srcCache maps a program counter to its source line, already quoted as JSON.
var srcCache sync.Map // uintptr → string

func srcJSON(pc uintptr) string {
	if v, ok := srcCache.Load(pc); ok {
		return v.(string)
	}
	s := ""
	if file, line := srcLine(pc); file != "" {
		s = string(encode(fmt.Sprintf("%s:%d", file, line)))
	}
	srcCache.Store(pc, s)
	return s
}

// srcLine resolves a CPU-side event's program counter (a return address, as
// runtime.Callers gives it) to a file relative to the module root and a line.
func srcLine(pc uintptr) (string, int) {
	frame, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	file, line := frame.File, frame.Line
	if file == "" {
		fn := runtime.FuncForPC(pc - 1)
		if fn == nil {
			return "", 0
		}
		file, line = fn.FileLine(pc - 1)
	}
	return relSource(file), line
}

// moduleRoot is the module's directory as the runtime names files ("/src/saccbook/"
// or, built with -trimpath, "github.com/saccbook/saccbook/"), found from this
// file's own name.
var moduleRoot = func() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	dir := path.Dir(file)
	if !strings.HasSuffix(dir, "/web/live") {
		return ""
	}
	return strings.TrimSuffix(dir, "web/live")
}()

// relSource trims a source file name to the module root: "sacc/kernel/pci.go".
func relSource(file string) string {
	if moduleRoot != "" && strings.HasPrefix(file, moduleRoot) {
		return file[len(moduleRoot):]
	}
	if i := strings.LastIndex(file, "/sacc/"); i >= 0 {
		return file[i+1:]
	}
	return path.Base(file)
}
