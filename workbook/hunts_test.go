package workbook

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// huntRoot is a workspace with an exercises directory and nothing in it.
func huntRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "exercises"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestHuntScoring(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var h HuntProgress
	h.Status = HuntNotStarted
	for i, want := range []int{10, 8, 6, 4, 2, 2, 2} {
		if got := h.Worth(); got != want {
			t.Fatalf("after %d wrong: worth %d, want %d", i, got, want)
		}
		if !h.Submit(false, "ann", now) {
			t.Fatal("a wrong submission did not count")
		}
	}
	if !h.Submit(true, "ann", now) || h.Status != HuntSolved || h.Score != 2 || h.Learner != "ann" || h.Solved == "" {
		t.Fatalf("solved after 7 wrong: %+v", h)
	}
	before := h
	if h.Submit(false, "ann", now.Add(time.Hour)) || h.Submit(true, "bob", now.Add(time.Hour)) || h != before {
		t.Errorf("a solved hunt changed: %+v, was %+v", h, before)
	}
	var fresh HuntProgress
	fresh.Submit(true, "ann", now)
	if fresh.Score != HuntWorth || fresh.Wrong != 0 {
		t.Errorf("solved at once: %+v", fresh)
	}
}

// TestProgressFileWithoutHuntsLoads: a file from before the hunts loads, keeps
// its exercises, and saves without a "hunts" member until a hunt is started;
// hunts then survive a round trip and the exercises' records beside them.
func TestProgressFileWithoutHuntsLoads(t *testing.T) {
	root := huntRoot(t)
	old := `{"note": "x", "exercises": {"01-find-device": {"status": "done", "solved": "2026-01-01T00:00:00Z"}}}`
	path := filepath.Join(root, ProgressFile)
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	if p.Exercises["01-find-device"].Status != Done || p.HuntStatusOf(3).Status != HuntNotStarted {
		t.Fatalf("loaded %+v", p)
	}
	if err := p.Save(root); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte(`"hunts"`)) {
		t.Errorf("no hunt started, yet the file has hunts:\n%s", data)
	}
	p.Hunt(3).Submit(false, "ann", time.Now())
	p.Hunt(3).Submit(true, "ann", time.Now())
	if err := p.Save(root); err != nil {
		t.Fatal(err)
	}
	q, err := LoadProgress(root)
	if err != nil {
		t.Fatal(err)
	}
	if h := q.HuntStatusOf(3); h.Status != HuntSolved || h.Score != 8 || q.Exercises["01-find-device"].Status != Done {
		t.Errorf("round trip: %+v, exercises %+v", h, q.Exercises)
	}
	leftovers, _ := filepath.Glob(filepath.Join(root, "exercises", ".saccbook-progress-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestCorruptProgressIsRefused: a file that does not parse, or holds hunt
// records saccbook could not have written, is an error that says what to do,
// and the file is left as it was.
func TestCorruptProgressIsRefused(t *testing.T) {
	for _, content := range []string{
		`{"exercises": `,
		`{"hunts": {"3": {"status": "won"}}}`,
		`{"hunts": {"x": {"status": "solved"}}}`,
		`{"hunts": {"3": {"status": "solved", "score": 99}}}`,
		`{"hunts": {"3": {"status": "started", "wrong": -1}}}`,
		`{"hunts": {"3": null}}`,
		`{"hunts": []}`,
	} {
		root := huntRoot(t)
		path := filepath.Join(root, ProgressFile)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadProgress(root)
		if err == nil || !strings.Contains(err.Error(), ProgressFile) || !strings.Contains(err.Error(), "afresh") {
			t.Errorf("%s: error %v", content, err)
		}
		if data, _ := os.ReadFile(path); string(data) != content {
			t.Errorf("%s: the file changed to %s", content, data)
		}
	}
}

func TestEnsureHuntKey(t *testing.T) {
	root := huntRoot(t)
	k, made, err := EnsureHuntKey(root, "ann", bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil || !made || k.Learner != "ann" || !bytes.Equal(k.Key, bytes.Repeat([]byte{7}, 32)) || k.Course {
		t.Fatalf("made %+v %v %v", k, made, err)
	}
	path := filepath.Join(root, HuntKeyFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	again, made, err := EnsureHuntKey(root, "someone else", nil)
	if err != nil || made || again.Learner != "ann" || !bytes.Equal(again.Key, k.Key) {
		t.Errorf("second use: %+v %v %v", again, made, err)
	}
	if _, _, err := EnsureHuntKey(huntRoot(t), "", nil); err == nil {
		t.Error("an empty learner id made a key")
	}
	if _, _, err := EnsureHuntKey(huntRoot(t), "ann", bytes.NewReader([]byte{1, 2})); err == nil {
		t.Error("a short random source made a key")
	}
}

// TestHuntKeyFileErrors: missing, corrupt and half-right key files each say what
// is wrong, and a corrupt one is never replaced behind the learner's back.
func TestHuntKeyFileErrors(t *testing.T) {
	root := huntRoot(t)
	path := filepath.Join(root, HuntKeyFile)
	if _, err := LoadHuntKey(path); !errors.Is(err, ErrNoHuntKey) {
		t.Errorf("missing: %v", err)
	}
	good := (&HuntKey{Key: bytes.Repeat([]byte{1}, 32), Learner: "ann"}).Marshal()
	for _, content := range []string{
		"not json",
		`{"key": "00", "learner": "ann"}`,
		`{"key": "` + strings.Repeat("zz", 32) + `", "learner": "ann"}`,
		`{"key": "` + strings.Repeat("ab", 32) + `", "learner": " ann"}`,
		`{"key": "` + strings.Repeat("ab", 32) + `", "learner": "a\u0007b"}`,
		`{"key": "` + strings.Repeat("ab", 32) + `", "learner": "ann", "origin": "stolen"}`,
		string(good[:len(good)/2]),
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadHuntKey(path); err == nil || !strings.Contains(err.Error(), "delete it") {
			t.Errorf("%q: %v", content, err)
		}
		if _, _, err := EnsureHuntKey(root, "ann", nil); err == nil {
			t.Errorf("%q: EnsureHuntKey went past a corrupt key", content)
		}
		if data, _ := os.ReadFile(path); string(data) != content {
			t.Errorf("%q: the file was replaced", content)
		}
	}
}

func TestSaveHuntKey(t *testing.T) {
	root := huntRoot(t)
	path := filepath.Join(root, HuntKeyFile)
	k := &HuntKey{Key: bytes.Repeat([]byte{9}, 32), Learner: "s1234567", Course: true}
	if err := SaveHuntKey(path, k); err != nil {
		t.Fatal(err)
	}
	got, err := LoadHuntKey(path)
	if err != nil || !got.Course || got.Learner != "s1234567" || !bytes.Equal(got.Key, k.Key) {
		t.Errorf("%+v %v", got, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	if err := SaveHuntKey(path, &HuntKey{Key: []byte{1}, Learner: "x"}); err == nil {
		t.Error("a short key was saved")
	}
	// A course's key as handed out: no learner yet.
	course, err := ParseHuntKey([]byte(`{"key": "` + strings.Repeat("cd", 32) + `", "origin": "course"}`))
	if err != nil || course.Learner != "" || !course.Course {
		t.Errorf("a course key without a learner: %+v %v", course, err)
	}
}

// FuzzParseHuntKey: any file content is a key or an error, never a panic, and a
// key that parses is one that Marshal writes back the same.
func FuzzParseHuntKey(f *testing.F) {
	f.Add((&HuntKey{Key: bytes.Repeat([]byte{1}, 32), Learner: "ann"}).Marshal())
	f.Add((&HuntKey{Key: bytes.Repeat([]byte{2}, 32), Learner: "s1", Course: true}).Marshal())
	f.Add([]byte(`{"key":"` + strings.Repeat("0", 64) + `","learner":"ü"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseHuntKey(data)
		if err != nil {
			return
		}
		if len(k.Key) != HuntKeySize || (k.Learner != "" && ValidLearner(k.Learner) != nil) {
			t.Fatalf("accepted %+v", k)
		}
		again, err := ParseHuntKey(k.Marshal())
		if err != nil || !bytes.Equal(again.Key, k.Key) || again.Learner != k.Learner || again.Course != k.Course {
			t.Fatalf("round trip: %+v %v", again, err)
		}
		var j map[string]any
		if json.Unmarshal(k.Marshal(), &j) != nil {
			t.Fatal("Marshal wrote something that is not JSON")
		}
	})
}
