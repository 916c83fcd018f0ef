package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	saccbook "github.com/saccbook/saccbook"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/web/live"
	"github.com/saccbook/saccbook/workbook"
)

func serveCommand() command {
	return command{
		name:    "serve",
		summary: "read the book in a browser, with live widgets",
		usage:   "[--addr 127.0.0.1:8080] [--open]",
		help: `Serves the workbook: every chapter, rendered from Markdown, with live widgets
that run the same scenarios as 'saccbook run' and let you play, pause, step and
step back through them. Everything is in the binary; no network is needed.

The server listens on 127.0.0.1 (this computer only) unless --addr says otherwise.
Anyone who can reach it can run machines on it, so listening on another address
prints a warning. Stop it with Ctrl-C.

Its pages /hunts are the bug hunts (saccbook hunt), run from the workspace's hunt
key: started inside the workspace (or with --root) it shows your variants and
takes your answers, which it records in exercises/.saccbook-progress.json, and
only from this computer, whatever --addr says.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			addr := fs.String("addr", "127.0.0.1:8080", "address to listen on, host:port (port 0 picks a free one)")
			open := fs.Bool("open", false, "open the book in a web browser")
			root := rootFlag(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError("unexpected argument %q", args[0])
				}
				// Listen first: a server that cannot start makes no hunt key.
				ln, err := net.Listen("tcp", *addr)
				if err != nil {
					return fmt.Errorf("listen: %w", err)
				}
				d, err := openDesk(*root)
				if err != nil {
					if isSet(fs, "root") {
						ln.Close()
						return err
					}
					// The book works without a workspace; only the hunts need one.
					fmt.Fprintf(e.stderr, "saccbook: no bug hunts on this server: %v\n", err)
					d = nil
				}
				return serve(ctx, e, ln, serveOptions{open: *open, hunts: d})
			}
		},
	}
}

// serveOptions are the choices serve makes beyond the listener.
type serveOptions struct {
	open  bool
	hunts *huntDesk // nil: no workspace, no hunts
	// started, if set, is called with the book's URL once it is being served.
	started func(url string)
}

// serve serves the book on ln until ctx ends, then shuts down gracefully: no
// new connections, in-flight pages finished, then every live session closed
// (websockets are hijacked connections, which http.Server.Shutdown leaves
// alone). It closes ln.
func serve(ctx context.Context, e *env, ln net.Listener, opt serveOptions) error {
	defer ln.Close()
	bound, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("listen: %v is not a TCP address", ln.Addr())
	}
	hosts, url, exposed := hostsFor(bound)
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The hub checks Host and Origin again, against the same allowlist.
	// Inside a workspace the server also shows the learner's exercises and
	// their recorded runs.
	var wb web.Workbook
	var recorded func(string) (*live.Recording, error)
	var book *workbook.Book
	if root, err := workbook.FindRoot("."); err == nil {
		if book, err = workbook.Open(root); err == nil {
			sb := servedBook{book}
			wb, recorded = sb, sb.recorded
		} else {
			fmt.Fprintf(e.stderr, "saccbook: the exercises are not shown: %v\n", err)
		}
	}
	lo := live.Options{AllowedOrigins: web.OriginPatterns(hosts), Logger: logger, Recorded: recorded}
	wc := web.Config{
		Workbook:     wb,
		Chapters:     chapters.FS,
		Static:       static.FS,
		Source:       saccbook.Source,
		AllowedHosts: hosts,
		Logger:       logger,
	}
	if opt.hunts != nil {
		opt.hunts.announce(e.stderr)
		dh := deskHunts{opt.hunts}
		lo.Hunts, wc.Hunts = dh.variantOf, dh
		wc.Adversary = servedRecords{opt.hunts.root}
	}
	hub := live.New(lo)
	wc.Live = hub
	h, err := web.NewHandler(wc)
	if err != nil {
		_ = hub.Close()
		return err
	}
	srv := web.NewServer(bound.String(), h)
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)

	if exposed {
		warnExposed(e.stderr, bound, hosts)
	}
	fmt.Fprintf(e.stdout, "saccbook: serving the book at %s\n", url)
	fmt.Fprintf(e.stdout, "saccbook: press Ctrl-C to stop\n")
	if opt.open {
		openBrowser(e.stderr, url)
	}
	if book != nil {
		// A failing exercise links to its run at this address (the one printed).
		addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
		if err := book.WriteServeAddr(addr); err != nil {
			fmt.Fprintf(e.stderr, "saccbook: %v\n", err)
		}
		defer func() { _ = book.RemoveServeAddr(addr) }()
	}
	if opt.started != nil {
		opt.started(url)
	}

	return serveUntilDone(ctx, e, srv, func() error { return srv.Serve(ln) }, hub)
}

// serveUntilDone runs serve (srv's Serve or ServeTLS on its listener) until ctx
// ends, then shuts srv down gracefully — no new connections, in-flight pages
// finished — and closes live, the websocket sessions, which Shutdown leaves
// alone.
func serveUntilDone(ctx context.Context, e *env, srv *http.Server, serve func() error, live io.Closer) error {
	served := make(chan error, 1)
	go func() { served <- serve() }()
	select {
	case err := <-served:
		return errors.Join(fmt.Errorf("serve: %w", err), live.Close())
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if cerr := live.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	fmt.Fprintf(e.stdout, "saccbook: stopped\n")
	return nil
}

// hostsFor works out, from the address actually bound, which Host names the
// server answers to, the URL to print, and whether machines other than this one
// can reach it.
func hostsFor(bound *net.TCPAddr) (hosts []string, url string, exposed bool) {
	port := fmt.Sprint(bound.Port)
	hosts = web.DefaultAllowedHosts()
	switch {
	case bound.IP.IsLoopback():
		return hosts, "http://" + net.JoinHostPort(bound.IP.String(), port) + "/", false
	case bound.IP.IsUnspecified():
		// Every interface: answer to each of this machine's addresses and its name.
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				// Link-local addresses need a zone in a URL; browsers rarely use them.
				if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
					hosts = append(hosts, bracket(ipn.IP))
				}
			}
		}
		if name, err := os.Hostname(); err == nil && name != "" {
			hosts = append(hosts, name)
		}
		return hosts, "http://" + net.JoinHostPort("127.0.0.1", port) + "/", true
	default:
		hosts = append(hosts, bracket(bound.IP))
		return hosts, "http://" + net.JoinHostPort(bound.IP.String(), port) + "/", true
	}
}

func bracket(ip net.IP) string {
	if ip.To4() == nil {
		return "[" + ip.String() + "]"
	}
	return ip.String()
}

// warnExposed says loudly that the server can be reached from other machines.
func warnExposed(w io.Writer, bound *net.TCPAddr, hosts []string) {
	bar := strings.Repeat("!", 72)
	fmt.Fprintf(w, "%s\n", bar)
	fmt.Fprintf(w, "!! WARNING: saccbook is listening on %s, NOT only on this computer.\n", bound)
	fmt.Fprintf(w, "!! Anyone who can reach this address can read the book and run emulated\n")
	fmt.Fprintf(w, "!! machines on your CPU. There is no login and no encryption (plain HTTP).\n")
	fmt.Fprintf(w, "!! Requests are accepted only for these host names:\n")
	fmt.Fprintf(w, "!!   %s\n", strings.Join(hosts, " "))
	fmt.Fprintf(w, "!! To keep it private, use the default: --addr 127.0.0.1:8080\n")
	fmt.Fprintf(w, "%s\n", bar)
}

// openBrowser asks the desktop to open url; failing is not an error, only a note.
func openBrowser(w io.Writer, url string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, url)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(w, "saccbook: could not open a browser (%v); open %s yourself\n", err, url)
		return
	}
	go func() { _ = cmd.Wait() }() // reap it; the browser outlives us or not, as it likes
}
