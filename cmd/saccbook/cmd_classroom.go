package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	saccbook "github.com/saccbook/saccbook"
	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web"
	"github.com/saccbook/saccbook/web/classroom"
	"github.com/saccbook/saccbook/workbook"
)

func classroomCommand() command {
	return command{
		name:    "classroom",
		summary: "serve the book to a class: roster, progress, broadcast",
		usage:   "[--addr 127.0.0.1:8080] [--course DIR] [--tls-cert FILE --tls-key FILE]",
		help: `Serves the book to a class. On first start it makes the course in --course
(a course key for the bug hunts, an instructor token, a join code and a SQLite
database with the roster, every report, the hunt answers and the shared runs);
every later start reads it again, so a restart loses nothing.

It prints two addresses: the instructor URL, which carries the instructor token
(keep it to yourself), and the join URL to give the students. Students open the
join URL in a browser and give a name, and run 'saccbook join URL --name NAME'
in their workspace so that their check, watch and hunt results report to the
class. Every page, asset and websocket needs the instructor token or a
student's session: anything else gets 401. A student's name is not
authentication: whoever has the join URL can join under any free name.

The server listens on 127.0.0.1 unless --addr says otherwise; to reach the
students, give an address of this computer on their network (it warns you).
--tls-cert and --tls-key serve HTTPS instead of plain HTTP.`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			addr := fs.String("addr", "127.0.0.1:8080", "address to listen on, host:port (port 0 picks a free one)")
			dir := fs.String("course", "saccbook-course", "the course's directory: made on first start")
			cert := fs.String("tls-cert", "", "a TLS certificate file (PEM): serve HTTPS")
			key := fs.String("tls-key", "", "the certificate's key file (PEM)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageError("unexpected argument %q", args[0])
				}
				if (*cert == "") != (*key == "") {
					return usageError("--tls-cert and --tls-key go together")
				}
				// The pair is read before the course is made or a URL printed,
				// so a wrong path leaves nothing behind and announces no class.
				if *cert != "" {
					if _, err := tls.LoadX509KeyPair(*cert, *key); err != nil {
						return fmt.Errorf("--tls-cert %s, --tls-key %s: %w", *cert, *key, err)
					}
				}
				ln, err := net.Listen("tcp", *addr)
				if err != nil {
					return fmt.Errorf("listen: %w", err)
				}
				return serveClassroom(ctx, e, ln, classroomOptions{dir: *dir, cert: *cert, key: *key})
			}
		},
	}
}

// classConnsPerAddr caps the connections open at once from one address.
const classConnsPerAddr = 2048

type classroomOptions struct {
	dir       string
	cert, key string
	// started, if set, is told the instructor URL and the join URL once the
	// class is being served.
	started func(instructor, join string)
}

// serveClassroom serves the class on ln until ctx ends. It closes ln.
func serveClassroom(ctx context.Context, e *env, ln net.Listener, opt classroomOptions) error {
	defer ln.Close()
	// Connections from one address at once: a whole class behind one NAT,
	// each student with a few tabs and their keep-alive connections.
	ln = classroom.LimitListener(ln, classConnsPerAddr)
	bound, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("listen: %v is not a TCP address", ln.Addr())
	}
	hosts, url, exposed := hostsFor(bound)
	tls := opt.cert != ""
	if tls {
		url = "https://" + strings.TrimPrefix(url, "http://")
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	course, err := classroom.OpenCourse(opt.dir, nil)
	if err != nil {
		return err
	}
	store, err := classroom.OpenStore(opt.dir)
	if err != nil {
		return err
	}
	defer store.Close()
	var exercises []string
	if root, err := workbook.FindRoot("."); err == nil {
		if b, err := workbook.Open(root); err == nil {
			for _, ex := range b.Exercises {
				exercises = append(exercises, ex.ID)
			}
		}
	}
	cs, err := classroom.New(classroom.Config{
		Course: course, Store: store, AllowedHosts: hosts, Secure: tls, Logger: logger, Exercises: exercises,
		Book: web.Config{Chapters: chapters.FS, Static: static.FS, Source: saccbook.Source},
	})
	if err != nil {
		return err
	}
	srv := web.NewServer(bound.String(), cs.Handler())
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)

	if exposed {
		warnClassExposed(e.stderr, bound, hosts, tls)
	}
	if course.Made {
		fmt.Fprintf(e.stdout, "saccbook: made the course in %s (its key, tokens and database)\n", opt.dir)
	}
	base := strings.TrimSuffix(url, "/")
	if exposed && bound.IP.IsUnspecified() && len(hosts) > 3 {
		// The students need an address of this computer, not loopback.
		base = strings.Replace(base, "127.0.0.1", hosts[3], 1)
	}
	instructor, join := cs.InstructorURL(base), cs.JoinURL(base)
	fmt.Fprintf(e.stdout, "saccbook: the class is at %s\n", base+"/")
	fmt.Fprintf(e.stdout, "saccbook: instructor (keep this to yourself): %s\n", instructor)
	fmt.Fprintf(e.stdout, "saccbook: students join at: %s\n", join)
	fmt.Fprintf(e.stdout, "saccbook: press Ctrl-C to stop\n")
	if opt.started != nil {
		opt.started(instructor, join)
	}

	serve := func() error { return srv.Serve(ln) }
	if tls {
		serve = func() error { return srv.ServeTLS(ln, opt.cert, opt.key) }
	}
	return serveUntilDone(ctx, e, srv, serve, cs)
}

// warnClassExposed says that the class can be reached from other machines,
// and what guards it.
func warnClassExposed(w io.Writer, bound *net.TCPAddr, hosts []string, tls bool) {
	bar := strings.Repeat("!", 72)
	fmt.Fprintf(w, "%s\n", bar)
	fmt.Fprintf(w, "!! WARNING: the classroom is listening on %s, NOT only on this computer.\n", bound)
	fmt.Fprintf(w, "!! Whoever has the join URL can join (under any free name) and run\n")
	fmt.Fprintf(w, "!! emulated machines on your CPU; a name is not a login.\n")
	if !tls {
		fmt.Fprintf(w, "!! The traffic is plain HTTP: tokens and cookies cross the network in the\n")
		fmt.Fprintf(w, "!! clear. Use --tls-cert and --tls-key on a network you do not trust.\n")
	}
	fmt.Fprintf(w, "!! Requests are accepted only for these host names:\n")
	fmt.Fprintf(w, "!!   %s\n", strings.Join(hosts, " "))
	fmt.Fprintf(w, "%s\n", bar)
}
