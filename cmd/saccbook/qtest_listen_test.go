package main

import (
	"bufio"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saccbook/saccbook/internal/syncbuf"
)

// TestQtestListen runs saccbook qtest --listen on a Unix socket that a killed
// server left behind, with --max-conns 1: the stale socket is replaced (and the
// log says so), the first connection drives a real machine, a second is refused,
// and cancelling stops the server.
func TestQtestListen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.sock")
	dead, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	dead.SetUnlinkOnClose(false)
	dead.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"qtest", "--listen", "unix:" + path, "--max-conns", "1"}, strings.NewReader(""), &stdout, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "qtest: listening on unix "+path) {
		if time.Now().After(deadline) {
			t.Fatalf("not listening; stderr %q", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if want := "qtest: replaced the stale socket " + path; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}

	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.DialTimeout("unix", path, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	a, ar := dial()
	if _, err := a.Write([]byte("readl 0xb0018000\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := ar.ReadString('\n'); got != "OK 0x0000000010921b36\n" {
		t.Errorf("the device's IDs: %q", got)
	}
	_, br := dial()
	if got, _ := br.ReadString('\n'); !strings.HasPrefix(got, "FAIL too many connections: this server serves at most 1 at once") {
		t.Errorf("a second connection: %q", got)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d after cancel; stderr %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("qtest did not stop")
	}
}
