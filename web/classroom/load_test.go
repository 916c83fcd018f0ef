package classroom

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	saccbook "github.com/saccbook/saccbook"
	"github.com/saccbook/saccbook/chapters"
	"github.com/saccbook/saccbook/static"
	"github.com/saccbook/saccbook/web"
)

// The load: a class of loadStudents on loopback. The server runs in a process
// of its own (this test binary again, as TestLoadServerProcess), so that its
// CPU time and memory are its own and not the simulated students'.
//
// Figures, not assertions: the test fails only when something is lost (a
// follower that never sees the last position, a report not recorded), and
// logs the delays, the server's CPU and its memory per student.
const (
	loadStudents = 300
	loadStates   = 150                   // positions the instructor broadcasts
	loadPace     = 30 * time.Millisecond // between them: the lead page's tick
)

const loadServerEnv = "SACCBOOK_CLASS_LOAD_SERVER"

// TestLoadServerProcess is the server side of TestLoad: it serves a class on
// a loopback port, says where on standard output, and stops when its
// standard input closes. Outside TestLoad it does nothing.
func TestLoadServerProcess(t *testing.T) {
	dir := os.Getenv(loadServerEnv)
	if dir == "" {
		t.Skip("the server of TestLoad")
	}
	course, err := OpenCourse(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Every simulated student comes from 127.0.0.1: joins are not held to
	// the per-address rate that a class of separate computers would share.
	srv, err := New(Config{Course: course, Store: store, Limits: Limits{Anonymous: 10000},
		Book: web.Config{Chapters: chapters.FS, Static: static.FS, Source: saccbook.Source}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := web.NewServer(ln.Addr().String(), srv.Handler())
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("class %s %s %s\n", ln.Addr(), course.Instructor, course.JoinCode)
	_, _ = io.Copy(io.Discard, os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(ctx)
}

// proc is the server process's CPU time and resident memory, from /proc.
type proc struct{ pid int }

func (p proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0
	}
	// After the command's name in parentheses: field 14 and 15 are utime and
	// stime, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

func (p proc) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// TestLoad: 300 students follow one broadcast, then send 300 progress reports
// within one second.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("the load test reads the server's figures from /proc")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadServerProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), loadServerEnv+"="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	var addr, teacher, code string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "class %s %s %s", &addr, &teacher, &code); err == nil {
			break
		}
	}
	if addr == "" {
		t.Fatal("the server process said nothing")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	p := proc{cmd.Process.Pid}
	base := "http://" + addr
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: loadStudents}, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	rssStart := p.rss()
	// The class joins.
	students := make([]*Enrolment, loadStudents)
	var wg sync.WaitGroup
	errs := make(chan error, loadStudents)
	joinStart := time.Now()
	for i := range students {
		wg.Go(func() {
			e, _, err := Join(ctx, hc, base+"/join/"+code, fmt.Sprintf("student %03d", i))
			if err != nil {
				errs <- err
				return
			}
			students[i] = e
		})
	}
	wg.Wait()
	joinWall := time.Since(joinStart)
	select {
	case err := <-errs:
		t.Fatalf("join: %v", err)
	default:
	}

	// Everyone follows.
	ws := "ws://" + addr
	type arrival struct {
		seq    uint64
		at     time.Time
		server int64 // when the server sent it, Unix ms
	}
	arrivals := make([][]arrival, loadStudents)
	conns := make([]*websocket.Conn, loadStudents)
	for i, e := range students {
		c, _, err := websocket.Dial(ctx, ws+"/ws/class/follow", &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + e.Token}}})
		if err != nil {
			t.Fatalf("follow %d: %v", i, err)
		}
		conns[i] = c
	}
	rssFollowing := p.rss()
	var readers sync.WaitGroup
	for i, c := range conns {
		readers.Go(func() {
			for {
				_, b, err := c.Read(ctx)
				if err != nil {
					return
				}
				at := time.Now()
				var m castMsg
				if err := json.Unmarshal(b, &m); err != nil || m.Type != "broadcast" {
					continue
				}
				arrivals[i] = append(arrivals[i], arrival{m.Seq, at, m.At})
				if m.Seq == loadStates {
					return
				}
			}
		})
	}

	// The instructor leads: one position every tick, as the lead page sends
	// them while the widget plays.
	lead, _, err := websocket.Dial(ctx, ws+"/ws/class/lead", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + teacher}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lead.CloseNow()
	sent := make([]time.Time, loadStates+1)
	cpu0, t0 := p.cpu(), time.Now()
	for i := 1; i <= loadStates; i++ {
		b, _ := json.Marshal(State{Scenario: "rings", Seed: 1, Seq: uint64(i), Playing: true})
		sent[i] = time.Now()
		if err := lead.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
		time.Sleep(loadPace)
	}
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("followers did not all see the last position")
	}
	castWall, castCPU := time.Since(t0), p.cpu()-cpu0
	var delays, fanout []time.Duration
	skipped := 0
	for i, as := range arrivals {
		if len(as) == 0 || as[len(as)-1].seq != loadStates {
			t.Errorf("follower %d did not end at the last position", i)
		}
		skipped += loadStates - len(as)
		for _, a := range as {
			delays = append(delays, a.at.Sub(sent[a.seq]))
			fanout = append(fanout, a.at.Sub(time.UnixMilli(a.server)))
		}
	}
	for _, c := range conns {
		c.CloseNow()
	}

	// 300 progress reports in one second: each student one, spread evenly.
	var mu sync.Mutex
	var latencies []time.Duration
	cpu1, t1 := p.cpu(), time.Now()
	for i, e := range students {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * time.Second / loadStudents)
			body, _ := json.Marshal([]Report{{ID: NewReportID(), Kind: "exercise", Item: "01-find-device", Status: "failing",
				Tests: Tally{Ran: 7, Failed: 2}, FailingTest: "TestScan", EventKind: "pci_cfg_read", At: time.Now()}})
			start := time.Now()
			var ans ReportAnswer
			if err := post(ctx, hc, base+"/api/class/report", e.Token, body, &ans); err != nil || ans.Added != 1 {
				errs <- fmt.Errorf("report %d: %v %+v", i, err, ans)
				return
			}
			mu.Lock()
			latencies = append(latencies, time.Since(start))
			mu.Unlock()
		})
	}
	wg.Wait()
	reportWall, reportCPU := time.Since(t1), p.cpu()-cpu1
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}

	// The dashboard of 300 students, with a report each.
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/class/dashboard.json", nil)
	req.Header.Set("Authorization", "Bearer "+teacher)
	dashStart := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var d Dashboard
	err = json.NewDecoder(resp.Body).Decode(&d)
	resp.Body.Close()
	dashTime := time.Since(dashStart)
	if err != nil || len(d.Students) != loadStudents || len(d.Failures) != 1 || d.Failures[0].Students != loadStudents {
		t.Fatalf("dashboard after the load: %v, %d students, failures %v", err, len(d.Students), d.Failures)
	}

	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		// The delays are the machine's as much as the server's: say how busy
		// it was.
		t.Logf("load average %s on %d CPUs", strings.Join(strings.Fields(string(la))[:3], " "), runtime.NumCPU())
	}
	t.Logf("join: %d students in %v", loadStudents, joinWall.Round(time.Millisecond))
	t.Logf("broadcast: %d positions to %d followers over %v; delay lead→follower p50 %v, p99 %v, max %v; positions skipped (a newer one came first) %d of %d",
		loadStates, loadStudents, castWall.Round(time.Millisecond), percentile(delays, 0.5).Round(10*time.Microsecond),
		percentile(delays, 0.99).Round(10*time.Microsecond), percentile(delays, 1).Round(10*time.Microsecond), skipped, loadStates*loadStudents)
	t.Logf("broadcast: of which server→follower (the server's clock, to the millisecond) p50 %v, p99 %v",
		percentile(fanout, 0.5).Round(time.Millisecond), percentile(fanout, 0.99).Round(time.Millisecond))
	t.Logf("broadcast: server CPU %v over %v wall = %.2f cores", castCPU, castWall.Round(time.Millisecond), castCPU.Seconds()/castWall.Seconds())
	t.Logf("reports: %d in %v (sent over 1 s); latency p50 %v, p99 %v; server CPU %v = %.2f cores",
		loadStudents, reportWall.Round(time.Millisecond), percentile(latencies, 0.5).Round(10*time.Microsecond),
		percentile(latencies, 0.99).Round(10*time.Microsecond), reportCPU, reportCPU.Seconds()/reportWall.Seconds())
	t.Logf("memory: server RSS %.1f MiB at start, %.1f MiB with %d students joined and following: %.1f KiB per student",
		float64(rssStart)/(1<<20), float64(rssFollowing)/(1<<20), loadStudents, float64(rssFollowing-rssStart)/loadStudents/1024)
	t.Logf("dashboard of %d students: %v", loadStudents, dashTime.Round(time.Millisecond))
	if fi, err := os.Stat(filepath.Join(dir, "course.db")); err == nil {
		t.Logf("course database: %.1f KiB", float64(fi.Size())/1024)
	}
}
