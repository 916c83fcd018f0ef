package workbook

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLastRunAndServeAddr(t *testing.T) {
	b := book(t, goodMeta)
	ex := b.Exercises[0]
	if _, err := b.LastRun(ex); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LastRun without a record: %v; want not-exist", err)
	}
	write(t, filepath.Join(b.Root, RunsDir, ex.ID+".json"), `{"exercise":"03-ring-bell","failed":true,"fail_seq":7,"events":[{"seq":7}]}`)
	r, err := b.LastRun(ex)
	if err != nil || !r.Failed || r.FailSeq != 7 || len(r.Events) != 1 {
		t.Errorf("LastRun = %+v, %v", r, err)
	}
	if err := b.WriteServeAddr("127.0.0.1:4321"); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteServeAddr("evil/path"); err == nil {
		t.Error("WriteServeAddr took an address with a slash")
	}
	if err := b.RemoveServeAddr("127.0.0.1:9999"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Root, ServeAddrFile)); err != nil {
		t.Errorf("another server's stop removed this one's address: %v", err)
	}
	if err := b.RemoveServeAddr("127.0.0.1:4321"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Root, ServeAddrFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the address file is still there after the stop: %v", err)
	}
}

func TestSourceFileOnlyListedFiles(t *testing.T) {
	b := book(t, goodMeta)
	if text, err := b.SourceFile("exercises/03-ring-bell/exercise.go"); err != nil || string(text) != "package ringbell\n" {
		t.Errorf("the listed file: %q, %v", text, err)
	}
	write(t, filepath.Join(b.Root, "secret.txt"), "no")
	if err := os.Symlink(filepath.Join(b.Root, "secret.txt"), filepath.Join(b.Root, "exercises", "03-ring-bell", "link.go")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"exercises/03-ring-bell/.stub/exercise.go",
		"exercises/03-ring-bell/meta.json",
		"exercises/03-ring-bell/../../secret.txt",
		"exercises/03-ring-bell/link.go",
		"exercises/99-none/exercise.go",
		"solutions/03-ring-bell/exercise.go",
		"/etc/passwd",
	} {
		if _, err := b.SourceFile(name); err == nil {
			t.Errorf("SourceFile(%q) served a file meta.json does not list", name)
		}
	}
	// The listed file itself, made a link to a file outside.
	listed := filepath.Join(b.Root, "exercises", "03-ring-bell", "exercise.go")
	if err := os.Remove(listed); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(b.Root, "secret.txt"), listed); err != nil {
		t.Fatal(err)
	}
	if text, err := b.SourceFile("exercises/03-ring-bell/exercise.go"); err == nil {
		t.Errorf("SourceFile followed a symbolic link: %q", text)
	}
}
