package classroom

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestClientCaps: a client over its rate gets 429, and so does one opening
// more websockets than its cap; a body over the limit is refused; the rate
// is per client, so another student is not held back.
func TestClientCaps(t *testing.T) {
	c := newClass(t)
	ada, bob := c.join("ada"), c.join("bob")
	// The class's clock stands still, so no bucket refills during the test.
	refused := 0
	for range 450 {
		if code, _ := c.do("GET", "/api/class/me", ada.Token, nil); code == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused == 0 {
		t.Error("450 requests at once: none refused with 429")
	}
	if code, _ := c.do("GET", "/api/class/me", bob.Token, nil); code != http.StatusOK {
		t.Errorf("another student while ada is over her rate: %d", code)
	}

	big := bytes.Repeat([]byte(" "), maxBody+1)
	if code, _ := c.do("POST", "/api/class/report", bob.Token, append([]byte("["), big...)); code != http.StatusBadRequest && code != http.StatusRequestEntityTooLarge {
		t.Errorf("a report body over %d bytes: %d", maxBody, code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var open []*websocket.Conn
	defer func() {
		for _, ws := range open {
			ws.CloseNow()
		}
	}()
	limit := Limits{}.withDefaults().Sockets
	for i := range limit + 1 {
		ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.ts.URL, "http")+"/ws/class/follow",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + bob.Token}}})
		if i < limit {
			if err != nil {
				t.Fatalf("socket %d: %v", i+1, err)
			}
			open = append(open, ws)
			continue
		}
		if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("socket %d, over the cap of %d: %v", i+1, limit, err)
		}
	}
}

// TestLimitListener: past the cap, connections from one address are closed
// at once; a closed one frees its place.
func TestLimitListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	ts.Listener.Close()
	ts.Listener = LimitListener(ln, 2)
	ts.Start()
	defer ts.Close()
	addr := ln.Addr().String()
	ask := func(c net.Conn) bool {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return false
		}
		b := make([]byte, 64)
		n, _ := c.Read(b)
		return bytes.HasPrefix(b[:n], []byte("HTTP/1.1 200"))
	}
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	if !ask(conns[0]) || !ask(conns[1]) {
		t.Fatal("the first two connections were not served")
	}
	if ask(conns[2]) {
		t.Error("a third connection from the same address was served")
	}
	conns[0].Close()
	// The server notices the close when its read of the next request ends.
	served := false
	for deadline := time.Now().Add(5 * time.Second); !served && time.Now().Before(deadline); {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		served = ask(c)
		c.Close()
	}
	if !served {
		t.Error("after one closed, a new connection was not served")
	}
}
