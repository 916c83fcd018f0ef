package conformance

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saccbook/saccbook/sacc/machine"
	"github.com/saccbook/saccbook/sacc/profile"
	"github.com/saccbook/saccbook/sacc/qtest"
)

// requestTimeout bounds the wall-clock wait for one reply, so that a server that
// hangs on a request fails the test instead of the whole run.
const requestTimeout = 30 * time.Second

// transport carries one request line to a qtest server and brings back its reply.
type transport interface {
	roundTrip(line string) (string, error)
	close()
}

// sessionTransport talks to an in-process qtest session.
type sessionTransport struct{ s *qtest.Session }

func (st sessionTransport) roundTrip(line string) (string, error) {
	type result struct {
		reply    string
		panicked any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{panicked: p}
			}
		}()
		done <- result{reply: st.s.Exec(line)}
	}()
	select {
	case r := <-done:
		if r.panicked != nil {
			return "", fmt.Errorf("server panicked: %v", r.panicked)
		}
		return strings.TrimRight(r.reply, "\r\n"), nil
	case <-time.After(requestTimeout):
		return "", fmt.Errorf("no reply within %v", requestTimeout)
	}
}

func (sessionTransport) close() {}

// processTransport talks to "$SACC_QTEST_BIN qtest" over its stdin and stdout.
type processTransport struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *tailBuffer
}

func startProcess(bin string, args ...string) (*processTransport, error) {
	cmd := exec.Command(bin, append([]string{"qtest"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &processTransport{cmd: cmd, stdin: stdin, lines: make(chan string, 1), stderr: &tailBuffer{max: 64 << 10}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s qtest: %w", bin, err)
	}
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				p.lines <- strings.TrimRight(line, "\r\n")
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	return p, nil
}

func (p *processTransport) roundTrip(line string) (string, error) {
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		return "", fmt.Errorf("write request: %w (stderr: %s)", err, p.stderr)
	}
	select {
	case reply, ok := <-p.lines:
		if !ok {
			return "", fmt.Errorf("server exited without replying (stderr: %s)", p.stderr)
		}
		return reply, nil
	case <-time.After(requestTimeout):
		return "", fmt.Errorf("no reply within %v", requestTimeout)
	}
}

func (p *processTransport) close() {
	p.stdin.Close()
	exited := make(chan struct{})
	go func() { p.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-exited
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// client is a qtest client bound to one test: the CPU of the emulated machine.
type client struct {
	t          testing.TB
	tr         transport
	transcript []string
	now        uint64 // virtual time as the last clock reply gave it
}

// newClient starts a fresh machine (in-process, or the SACC_QTEST_BIN process).
func newClient(t testing.TB) *client {
	t.Helper()
	return newProfileClient(t, "")
}

// newProfileClient starts a fresh machine built to the named profile ("" for the
// default): in-process, or "$SACC_QTEST_BIN qtest --profile NAME".
func newProfileClient(t testing.TB, name string) *client {
	t.Helper()
	var tr transport
	if bin := os.Getenv("SACC_QTEST_BIN"); bin != "" {
		var args []string
		if name != "" {
			args = []string{"--profile", name}
		}
		p, err := startProcess(bin, args...)
		if err != nil {
			t.Fatalf("start qtest server: %v", err)
		}
		tr = p
	} else {
		prof, err := profile.Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := machine.New(machine.Config{Profile: prof})
		if err != nil {
			t.Fatalf("machine.New: %v", err)
		}
		tr = sessionTransport{qtest.NewSession(m, nil)}
	}
	c := &client{t: t, tr: tr}
	t.Cleanup(func() {
		if os.Getenv("SACC_QTEST_TRANSCRIPT") != "" {
			c.logTranscript(len(c.transcript))
		} else if t.Failed() {
			c.logTranscript(60)
		}
		tr.close()
	})
	return c
}

func (c *client) logTranscript(last int) {
	lines := c.transcript
	if len(lines) > last {
		lines = lines[len(lines)-last:]
		c.t.Logf("qtest transcript (last %d lines):", last)
	} else {
		c.t.Logf("qtest transcript:")
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\n" + clip(l))
	}
	c.t.Log(b.String())
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

// raw sends one request line and returns the reply line, whatever it says.
func (c *client) raw(line string) string {
	c.t.Helper()
	reply, err := c.tr.roundTrip(line)
	c.transcript = append(c.transcript, "> "+line)
	if err != nil {
		c.transcript = append(c.transcript, "! "+err.Error())
		c.t.Fatalf("qtest %q: %v", clip(line), err)
	}
	c.transcript = append(c.transcript, "< "+reply)
	return reply
}

// ok sends a request that must succeed and returns the reply's payload (the text
// after "OK ", or "" for a bare "OK").
func (c *client) ok(format string, args ...any) string {
	c.t.Helper()
	line := fmt.Sprintf(format, args...)
	reply := c.raw(line)
	if reply == "OK" {
		return ""
	}
	if rest, found := strings.CutPrefix(reply, "OK "); found {
		return rest
	}
	c.t.Fatalf("qtest %q: want an OK reply, got %q", clip(line), clip(reply))
	return ""
}

// okValue sends a request whose reply is "OK 0x<hex>" and returns the value.
func (c *client) okValue(format string, args ...any) uint64 {
	c.t.Helper()
	payload := c.ok(format, args...)
	digits, found := strings.CutPrefix(payload, "0x")
	v, err := strconv.ParseUint(digits, 16, 64)
	if !found || err != nil {
		c.t.Fatalf("qtest %q: reply payload %q is not 0x<hex>", fmt.Sprintf(format, args...), payload)
	}
	return v
}

// okTime sends a clock request and returns the virtual time it reports.
func (c *client) okTime(format string, args ...any) uint64 {
	c.t.Helper()
	payload := c.ok(format, args...)
	v, err := strconv.ParseUint(payload, 10, 64)
	if err != nil {
		c.t.Fatalf("qtest %q: reply payload %q is not a decimal time", fmt.Sprintf(format, args...), payload)
	}
	c.now = v
	return v
}

// I/O ports.
func (c *client) outw(port uint16, v uint16) { c.t.Helper(); c.ok("outw 0x%x 0x%x", port, v) }
func (c *client) outl(port uint16, v uint32) { c.t.Helper(); c.ok("outl 0x%x 0x%x", port, v) }
func (c *client) inb(port uint16) uint8      { c.t.Helper(); return uint8(c.okValue("inb 0x%x", port)) }
func (c *client) inw(port uint16) uint16     { c.t.Helper(); return uint16(c.okValue("inw 0x%x", port)) }
func (c *client) inl(port uint16) uint32     { c.t.Helper(); return uint32(c.okValue("inl 0x%x", port)) }

// Guest-physical accesses.
func (c *client) writeb(addr uint64, v uint8)  { c.t.Helper(); c.ok("writeb 0x%x 0x%x", addr, v) }
func (c *client) writew(addr uint64, v uint16) { c.t.Helper(); c.ok("writew 0x%x 0x%x", addr, v) }
func (c *client) writel(addr uint64, v uint32) { c.t.Helper(); c.ok("writel 0x%x 0x%x", addr, v) }
func (c *client) writeq(addr uint64, v uint64) { c.t.Helper(); c.ok("writeq 0x%x 0x%x", addr, v) }
func (c *client) readb(addr uint64) uint8      { c.t.Helper(); return uint8(c.okValue("readb 0x%x", addr)) }
func (c *client) readw(addr uint64) uint16 {
	c.t.Helper()
	return uint16(c.okValue("readw 0x%x", addr))
}
func (c *client) readl(addr uint64) uint32 {
	c.t.Helper()
	return uint32(c.okValue("readl 0x%x", addr))
}
func (c *client) readq(addr uint64) uint64 { c.t.Helper(); return c.okValue("readq 0x%x", addr) }

// read fetches n bytes of guest memory with the "read" command.
func (c *client) read(addr uint64, n int) []byte {
	c.t.Helper()
	payload := c.ok("read 0x%x %d", addr, n)
	digits, found := strings.CutPrefix(payload, "0x")
	b, err := hex.DecodeString(digits)
	if !found || err != nil || len(b) != n {
		c.t.Fatalf("read 0x%x %d: payload %q is not 0x followed by %d hex digits", addr, n, clip(payload), 2*n)
	}
	return b
}

// write stores b into guest memory with the "write" command.
func (c *client) write(addr uint64, b []byte) {
	c.t.Helper()
	c.ok("write 0x%x %d 0x%s", addr, len(b), hex.EncodeToString(b))
}

// memset fills n bytes of guest memory with v.
func (c *client) memset(addr uint64, n int, v uint8) {
	c.t.Helper()
	c.ok("memset 0x%x %d 0x%x", addr, n, v)
}

// step advances virtual time by ns ("clock_step NS") and returns the new time.
func (c *client) step(ns uint64) uint64 {
	c.t.Helper()
	return c.okTime("clock_step %d", ns)
}

// pattern returns n bytes of a recognisable, position-dependent pattern.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i>>8) ^ seed
	}
	return b
}

// xorBytes returns b with every byte XOR-ed with k.
func xorBytes(b []byte, k byte) []byte {
	out := make([]byte, len(b))
	for i, v := range b {
		out[i] = v ^ k
	}
	return out
}

// sameBytes reports where two byte slices first differ, for failure messages.
func firstDiff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	if len(got) != len(want) {
		return fmt.Sprintf("length %d, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("byte %d is 0x%02x, want 0x%02x", i, got[i], want[i])
		}
	}
	return ""
}
