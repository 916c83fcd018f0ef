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
