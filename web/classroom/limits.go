package classroom

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limiter holds every client's token bucket and open websockets. A client is
// an identity (each student, the instructor) or, before one is known, a remote
// address: a class behind one NAT shares an address, not a bucket.
type limiter struct {
	l   Limits
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	sockets map[string]int
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxBuckets bounds the table: past it, idle buckets (full again) are
// forgotten, which loses nothing.
const maxBuckets = 10000

func newLimiter(l Limits, now func() time.Time) *limiter {
	return &limiter{l: l, now: now, buckets: map[string]*bucket{}, sockets: map[string]int{}}
}

// allow takes one token from the client's bucket.
func (l *limiter) allow(client string, known bool) bool {
	rate, burst := l.l.Rate, float64(l.l.Burst)
	if !known {
		rate, burst = l.l.Anonymous, 5*l.l.Anonymous
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[client]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.forget(now)
		}
		b = &bucket{tokens: burst, at: now}
		l.buckets[client] = b
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (l *limiter) forget(now time.Time) {
	for k, b := range l.buckets {
		if now.Sub(b.at) > time.Minute {
			delete(l.buckets, k)
		}
	}
}

// socket admits one more websocket for the request's identity, or answers 429;
// release gives the place back when the socket ends.
func (l *limiter) socket(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	client := identityOf(r).key(r)
	l.mu.Lock()
	if l.sockets[client] >= l.l.Sockets {
		l.mu.Unlock()
		http.Error(w, "429 too many live connections from you: close a tab", http.StatusTooManyRequests)
		return nil, false
	}
	l.sockets[client]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		if l.sockets[client]--; l.sockets[client] <= 0 {
			delete(l.sockets, client)
		}
		l.mu.Unlock()
	}, true
}

// remoteHost is the request's peer address without its port.
func remoteHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// LimitListener caps the connections open at once from one remote address:
// past perAddr, a new one is closed as soon as it is accepted. (A class
// behind one NAT shares an address, so the cap is generous; the finer caps
// are per identity, above.)
func LimitListener(ln net.Listener, perAddr int) net.Listener {
	return &limitListener{Listener: ln, per: perAddr, open: map[string]int{}}
}

type limitListener struct {
	net.Listener
	per  int
	mu   sync.Mutex
	open map[string]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, err := net.SplitHostPort(c.RemoteAddr().String())
		if err != nil {
			host = c.RemoteAddr().String()
		}
		l.mu.Lock()
		if l.open[host] >= l.per {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.open[host]--; l.open[host] <= 0 {
				delete(l.open, host)
			}
			l.mu.Unlock()
		}}, nil
	}
}

type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
