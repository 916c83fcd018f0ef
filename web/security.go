package web

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// The book runs a machine for whoever connects, so the server is careful about
// who that is. It listens on loopback by default (cmd/saccbook serve), and even
// there a web page on another site could reach it through the browser:
//
//   - DNS rebinding: evil.example resolves to 127.0.0.1 and its page talks to us
//     as a "same-origin" site. The Host header still says evil.example, so every
//     request whose Host is not in the allowlist gets 403 (hostAllowlist).
//   - Cross-site websockets: browsers do not apply the same-origin policy to
//     websocket upgrades, but they do send Origin. On /ws/* an Origin that is not
//     the page's own origin gets 403 (sameOriginWebsocket). web/live checks again
//     in websocket.Accept (coder/websocket authorises the request's own host
//     always); any OriginPatterns it passes there come from OriginPatterns below,
//     so the two layers agree and neither is wider than the Host allowlist.
//
// Ordinary routes also get a request-body limit and a per-request timeout;
// websocket routes get neither (a session lives as long as its tab), and the
// server sets no WriteTimeout for the same reason (NewServer).

// DefaultAllowedHosts are the Host names accepted when Config.AllowedHosts is
// empty: loopback only, with any port.
func DefaultAllowedHosts() []string { return []string{"127.0.0.1", "localhost", "[::1]"} }

// Limits on ordinary (non-websocket) routes.
const (
	maxRequestBody        = 64 << 10
	defaultRequestTimeout = 10 * time.Second
)

// contentSecurityPolicy allows the book's own scripts, styles and websocket and
// nothing else: no inline script or style, no other site.
const contentSecurityPolicy = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// hostMatcher decides whether a Host header names this server.
type hostMatcher struct {
	anyPort map[string]bool // "localhost": any port
	exact   map[string]bool // "localhost:8080": that port only
}

func newHostMatcher(allowed []string) (*hostMatcher, error) {
	if len(allowed) == 0 {
		allowed = DefaultAllowedHosts()
	}
	m := &hostMatcher{anyPort: map[string]bool{}, exact: map[string]bool{}}
	for _, a := range allowed {
		host, port, err := splitHost(a)
		if err != nil || host == "" {
			return nil, fmt.Errorf("allowed host %q: want a name or address, optionally with :port", a)
		}
		if port == "" {
			m.anyPort[host] = true
		} else {
			m.exact[net.JoinHostPort(host, port)] = true
		}
	}
	return m, nil
}

// allows reports whether hostport (a Host header or an Origin's host) is allowed.
func (m *hostMatcher) allows(hostport string) bool {
	host, port, err := splitHost(hostport)
	if err != nil || host == "" {
		return false
	}
	return m.anyPort[host] || (port != "" && m.exact[net.JoinHostPort(host, port)])
}

// splitHost splits "Name:port", "[::1]:8080", "[::1]" or "name" into a
// lower-case host without brackets or trailing dot, and a port (maybe "").
func splitHost(s string) (host, port string, err error) {
	s = strings.ToLower(strings.TrimSpace(s))
	host = s
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	host = strings.TrimSuffix(host, ".")
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || strings.Trim(port, "0123456789") != "" {
			return "", "", errors.New("bad port")
		}
	}
	if strings.Contains(host, ":") {
		if !strings.HasPrefix(s, "[") || net.ParseIP(host) == nil {
			return "", "", errors.New("an IPv6 address goes in brackets")
		}
		return host, port, nil
	}
	if host == "" || strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "" {
		return "", "", errors.New("not a host name")
	}
	return host, port, nil
}

// OriginPatterns turns a Host allowlist into websocket.AcceptOptions
// OriginPatterns (path.Match patterns on the Origin's host), for web/live. With
// an empty list they cover DefaultAllowedHosts.
func OriginPatterns(allowedHosts []string) []string {
	if len(allowedHosts) == 0 {
		allowedHosts = DefaultAllowedHosts()
	}
	var pats []string
	for _, a := range allowedHosts {
		host, port, err := splitHost(a)
		if err != nil || host == "" {
			continue
		}
		if strings.Contains(host, ":") {
			host = `\[` + host + `\]` // path.Match would read [...] as a character class
		}
		if port == "" {
			pats = append(pats, host, host+":*")
		} else {
			pats = append(pats, host+":"+port)
		}
	}
	return pats
}

// hostAllowlist refuses requests whose Host is not ours: the defence against DNS
// rebinding.
func hostAllowlist(m *hostMatcher, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !m.allows(r.Host) {
				log.Warn("refused request for a foreign Host", "host", r.Host, "path", r.URL.Path, "remote", r.RemoteAddr)
				http.Error(w, "403 forbidden: this saccbook server does not answer to host "+fmt.Sprintf("%q", r.Host), http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// sameOriginWebsocket lets a websocket upgrade through only without an Origin
// (a program, not a browser page) or with the page's own origin: the scheme is
// http(s) and the origin's host and port are the request's Host, which
// hostAllowlist has already accepted.
func sameOriginWebsocket(m *hostMatcher, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if origin != "" && !sameOrigin(origin, r.Host, m) {
				log.Warn("refused websocket from a foreign Origin", "origin", origin, "host", r.Host, "path", r.URL.Path)
				http.Error(w, "403 forbidden: cross-origin websocket", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func sameOrigin(origin, host string, m *hostMatcher) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return false
	}
	if u.Path != "" && u.Path != "/" {
		return false // an Origin is scheme://host[:port] only
	}
	oh, op, err1 := splitHost(u.Host)
	rh, rp, err2 := splitHost(host)
	if err1 != nil || err2 != nil {
		return false
	}
	defaultPort := map[string]string{"http": "80", "https": "443"}[u.Scheme]
	if op == "" {
		op = defaultPort
	}
	if rp == "" {
		rp = defaultPort
	}
	return oh == rh && op == rp && m.allows(u.Host)
}

// ordinaryLimits bounds an ordinary request: a 64 KiB body, a read deadline on
// the connection (a body that trickles in cannot hold it open), a deadline
// after which the client gets 503, and a write deadline of twice that (a client
// that does not read its answer cannot hold the connection either; the answer is
// written once the handler is done, so it has at least the request's time). Never used on /ws/*: http.TimeoutHandler
// buffers the response and cannot be hijacked, and a websocket lives longer.
func ordinaryLimits(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		limited := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
			next.ServeHTTP(w, r)
		})
		timed := http.TimeoutHandler(limited, timeout, "503 the server took too long to answer\n")
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The server has no ReadTimeout (it would end websockets); this
			// request's reads, its body and what net/http drains after it, end here.
			// An error means the writer cannot set deadlines (a test recorder).
			// net/http clears the write deadline after the response, and both on
			// a hijack, so neither reaches the next request on the connection.
			rc, now := http.NewResponseController(w), time.Now()
			_ = rc.SetReadDeadline(now.Add(timeout))
			_ = rc.SetWriteDeadline(now.Add(2 * timeout))
			timed.ServeHTTP(w, r)
		})
	}
}

// securityHeaders sets the headers every response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// recoverPanics turns a panic in a handler into a log entry and, if nothing has
// been sent yet, a 500; the server goes on. After a websocket handler has
// hijacked the connection nothing may be written to it as HTTP: the panic is
// logged and the connection closed, so the browser sees the socket drop and
// no connection is left behind. http.ErrAbortHandler keeps its meaning
// (abort quietly).
func recoverPanics(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tw := &trackingWriter{ResponseWriter: w}
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("panic serving a request", "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(v), "hijacked", tw.hijacked, "stack", string(debug.Stack()))
				switch {
				case tw.hijacked:
					_ = tw.conn.Close()
				case !tw.wroteHeader:
					http.Error(tw.ResponseWriter, "500 internal server error", http.StatusInternalServerError)
				}
			}()
			next.ServeHTTP(tw, r)
		})
	}
}

// trackingWriter remembers whether a response was started or the connection
// hijacked. Unwrap lets http.ResponseController reach the real writer.
type trackingWriter struct {
	http.ResponseWriter
	wroteHeader bool
	hijacked    bool
	conn        net.Conn // once hijacked
}

func (t *trackingWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		t.wroteHeader = true
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wroteHeader = true
	return t.ResponseWriter.Write(b)
}

func (t *trackingWriter) Flush() {
	t.wroteHeader = true
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *trackingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := t.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("web: %T cannot be hijacked", t.ResponseWriter)
	}
	c, rw, err := h.Hijack()
	if err == nil {
		t.hijacked, t.conn = true, c
	}
	return c, rw, err
}

func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
