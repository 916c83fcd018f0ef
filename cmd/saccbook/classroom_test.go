package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saccbook/saccbook/sacc/adversary"
	"github.com/saccbook/saccbook/web/classroom"
	"github.com/saccbook/saccbook/workbook"
)

// runningClass is saccbook classroom on a loopback port.
type runningClass struct {
	instructor, join string
	token            string
	stdout           *bytes.Buffer
	stop             func()
}

func startClass(t *testing.T, dir, addr string) *runningClass {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	type urls struct{ instructor, join string }
	started := make(chan urls, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveClassroom(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, ln,
			classroomOptions{dir: dir, started: func(i, j string) { started <- urls{i, j} }})
	}()
	var u urls
	select {
	case u = <-started:
	case err := <-done:
		t.Fatalf("classroom returned early: %v\n%s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("classroom did not start")
	}
	c := &runningClass{instructor: u.instructor, join: u.join, stdout: &stdout}
	c.token = u.instructor[strings.Index(u.instructor, "token=")+len("token="):]
	stopped := false
	c.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("classroom: %v", err)
		}
	}
	t.Cleanup(c.stop)
	return c
}

func (c *runningClass) dashboard(t *testing.T) *classroom.Dashboard {
	t.Helper()
	base := c.instructor[:strings.Index(c.instructor, "/class/")]
	req, _ := http.NewRequest("GET", base+"/class/dashboard.json", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d classroom.Dashboard
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func dashCell(d *classroom.Dashboard, kind, student, item string) classroom.Cell {
	for _, sec := range d.Sections {
		for i, st := range d.Students {
			for j, it := range sec.Items {
				if sec.Kind == kind && st.Name == student && it == item {
					return sec.Rows[i][j]
				}
			}
		}
	}
	return classroom.Cell{}
}

// TestClassroomJoinHuntAndRestart: the instructor starts a class; a student
// joins from the command line, starts and answers a hunt, which the server
// grades with the course key; work done while the server is down reaches it
// once it is back, and the restart lost nothing.
func TestClassroomJoinHuntAndRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "course")
	c := startClass(t, dir, "127.0.0.1:0")
	if !strings.Contains(c.stdout.String(), "made the course") || !strings.Contains(c.stdout.String(), c.join) {
		t.Errorf("first start said:\n%s", c.stdout)
	}
	root := huntRoot(t)
	if code, out, errOut := runCLI(t, "", "join", c.join, "--name", "ada", "--root", root); code != 0 || !strings.Contains(out, `as "ada"`) {
		t.Fatalf("join: %d %s %s", code, out, errOut)
	}
	// The same command again is no conflict with itself; another workspace
	// under the same name is.
	if code, out, errOut := runCLI(t, "", "join", c.join, "--name", "ada", "--root", root); code != 0 || !strings.Contains(out, `as "ada" already`) {
		t.Errorf("join again: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "", "join", c.join, "--name", "ada", "--root", huntRoot(t)); code != 1 || !strings.Contains(errOut, "taken") {
		t.Errorf("join under a taken name: %d %s", code, errOut)
	}
	k, err := workbook.LoadHuntKey(filepath.Join(root, workbook.HuntKeyFile))
	if err != nil || k.Learner != "ada" || !k.Course {
		t.Fatalf("the key after joining: %+v %v", k, err)
	}
	if _, err := os.Stat(filepath.Join(root, workbook.HuntKeyFile+".before-class")); err != nil {
		t.Errorf("the previous key was not kept: %v", err)
	}
	if code, _, errOut := runCLI(t, "", "hunt", "start", "1", "--root", root); code != 0 {
		t.Fatalf("hunt start: %d %s", code, errOut)
	}
	bug, ev := answerOfFor(t, root, 1, "ada")
	code, out, errOut := runCLI(t, "", "hunt", "submit", "1", "--bug", bug, "--event", strconv.FormatUint(ev, 10), "--root", root)
	if code != 0 || !strings.Contains(errOut, "the class graded your answer to hunt 1") {
		t.Fatalf("hunt submit: %d %s %s", code, out, errOut)
	}
	if got := dashCell(c.dashboard(t), "hunt", "ada", "1"); got.Status != "solved" || !got.Graded || got.Score != workbook.HuntWorth {
		t.Errorf("hunt 1 on the dashboard: %+v", got)
	}

	// The server stops; the student goes on.
	addr := c.instructor[len("http://"):strings.Index(c.instructor, "/class/")]
	c.stop()
	code, _, errOut = runCLI(t, "", "hunt", "start", "2", "--root", root)
	if code != 0 || !strings.Contains(errOut, "1 reports wait") {
		t.Fatalf("hunt start with the server down: %d %s", code, errOut)
	}
	c2 := startClass(t, dir, addr)
	if c2.instructor != c.instructor || c2.join != c.join || strings.Contains(c2.stdout.String(), "made the course") {
		t.Errorf("the restart changed the course's addresses:\n%s", c2.stdout)
	}
	if code, _, errOut := runCLI(t, "", "hunt", "start", "3", "--root", root); code != 0 || strings.Contains(errOut, "wait") {
		t.Fatalf("hunt start with the server back: %d %s", code, errOut)
	}
	d := c2.dashboard(t)
	for item, want := range map[string]string{"1": "solved", "2": "started", "3": "started"} {
		if got := dashCell(d, "hunt", "ada", item); got.Status != want {
			t.Errorf("after the restart, hunt %s: %+v, want %s", item, got, want)
		}
	}
	if n := classroom.Waiting(root); n != 0 {
		t.Errorf("%d reports still wait", n)
	}
}

// answerOfFor asks saccbook hunt answer with the workspace's key for learner.
func answerOfFor(t *testing.T, root string, n int, learner string) (string, uint64) {
	t.Helper()
	code, out, errOut := runCLI(t, "", "hunt", "answer", strconv.Itoa(n), "--key", filepath.Join(root, workbook.HuntKeyFile), "--learner", learner)
	m := answerLine.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("hunt answer %d: %d %q %q", n, code, out, errOut)
	}
	ev, _ := strconv.ParseUint(m[2], 10, 64)
	return m[1], ev
}

// TestClassroomTLS: with --tls-cert and --tls-key the class is HTTPS, its
// URLs say so, and the instructor's cookie is Secure.
func TestClassroomTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, certFile, keyFile)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	started := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveClassroom(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, ln,
			classroomOptions{dir: filepath.Join(dir, "course"), cert: certFile, key: keyFile, started: func(i, _ string) { started <- i }})
	}()
	defer func() {
		cancel()
		<-done
	}()
	var instructor string
	select {
	case instructor = <-started:
	case err := <-done:
		t.Fatalf("classroom: %v %s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("classroom did not start")
	}
	if !strings.HasPrefix(instructor, "https://") {
		t.Fatalf("instructor URL %q", instructor)
	}
	hc := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := hc.Get(instructor)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) != 1 || !resp.Cookies()[0].Secure {
		t.Errorf("the instructor's cookie over TLS: %v", resp.Cookies())
	}
	if resp, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port: %d", resp.StatusCode)
		}
	}
}

func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestClassroomCheckReports: a check in a joined workspace reports the
// exercise's status, its counts, the failing test and the kind of event the
// run failed at; no code goes with it.
func TestClassroomCheckReports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an exercise's tests")
	}
	c := startClass(t, filepath.Join(t.TempDir(), "course"), "127.0.0.1:0")
	book := copyWorkbook(t)
	if code, _, errOut := runCLI(t, "", "join", c.join, "--name", "grace", "--root", book); code != 0 {
		t.Fatalf("join: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "check", "01-find-device", "--root", book); code != 1 || strings.Contains(errOut, "wait") {
		t.Fatalf("check of the stub: %d %s", code, errOut)
	}
	got := dashCell(c.dashboard(t), "exercise", "grace", "01-find-device")
	if got.Status != "failing" || got.Ran == 0 || got.Failed == 0 || !strings.HasPrefix(got.Test, "Test") || got.Event == "" || got.Summary == "" {
		t.Errorf("01-find-device on the dashboard: %+v", got)
	}
	t.Logf("reported: %+v", got)
}

// TestClassroomAdversaryReports: a student who joined wins a level in the
// terminal and has the solver prove a correct one; the dashboard shows both
// as finished, in the progress file's words.
func TestClassroomAdversaryReports(t *testing.T) {
	c := startClass(t, filepath.Join(t.TempDir(), "course"), "127.0.0.1:0")
	root := huntRoot(t)
	if code, _, errOut := runCLI(t, "", "join", c.join, "--name", "lin", "--root", root); code != 0 {
		t.Fatalf("join: %d %s", code, errOut)
	}
	broken, err := adversary.Lookup("missing-wmb")
	if err != nil {
		t.Fatal(err)
	}
	r := broken.Solve(adversary.DefaultBound)
	if !r.Broken() {
		t.Fatalf("the solver found no way to break %s", broken.Name)
	}
	if code, out, errOut := runCLI(t, "", "adversary", "play", broken.Name, "--schedule", adversary.FormatSchedule(r.Schedule), "--root", root); code != 0 {
		t.Fatalf("play: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "", "adversary", "solve", "wmb", "--root", root); code != 0 {
		t.Fatalf("solve: %d %s %s", code, out, errOut)
	}
	d := c.dashboard(t)
	for level, want := range map[string]string{"missing-wmb": "won", "wmb": "proved"} {
		if got := dashCell(d, "adversary", "lin", level); got.Status != want {
			t.Errorf("adversary level %s on the dashboard: %+v, want %s", level, got, want)
		}
	}
}
