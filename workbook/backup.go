package workbook

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A learner's work is never lost: before anything overwrites the files of an
// exercise (reset, restore), they are copied to exercises/.backup/ID/NAME/,
// where NAME is the local time of the copy, "20060102-150405", with "-2", "-3"…
// after it when a second copy is made within the same second. Git ignores the
// directory.

// stampLayout is the time part of a backup's name.
const stampLayout = "20060102-150405"

// Backup is one saved copy of an exercise's files.
type Backup struct {
	Name  string   // "20260304-050607" or "20260304-050607-2"
	Dir   string   // its directory
	Files []string // the exercise's files it holds, in the order meta.json lists them
}

// NextBackup is the directory the next backup of ex made at now goes to: one
// that does not exist yet.
func (b *Book) NextBackup(ex *Exercise, now time.Time) string {
	stamp := now.Format(stampLayout)
	dir := filepath.Join(b.BackupDir(ex), stamp)
	for n := 2; ; n++ {
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			return dir
		}
		dir = filepath.Join(b.BackupDir(ex), fmt.Sprintf("%s-%d", stamp, n))
	}
}

// SaveBackup copies the learner's files of ex that exist into dir (from
// NextBackup). It returns how many it copied; an error means the caller must
// not overwrite anything.
func (b *Book) SaveBackup(ex *Exercise, dir string) (int, error) {
	n := 0
	for _, f := range ex.Files {
		data, err := os.ReadFile(b.WorkPath(ex, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("back up %s: %w", f, err)
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return n, fmt.Errorf("back up %s: %w", f, err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return n, fmt.Errorf("back up %s: %w", f, err)
		}
		n++
	}
	return n, nil
}

// Backups lists the backups of ex, oldest first (so the last is the newest).
// Directories there that hold none of the exercise's files are left out.
func (b *Book) Backups(ex *Exercise) ([]Backup, error) {
	entries, err := os.ReadDir(b.BackupDir(ex))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Backup
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		bk := Backup{Name: e.Name(), Dir: filepath.Join(b.BackupDir(ex), e.Name())}
		for _, f := range ex.Files {
			if fi, err := os.Stat(filepath.Join(bk.Dir, f)); err == nil && fi.Mode().IsRegular() {
				bk.Files = append(bk.Files, f)
			}
		}
		if len(bk.Files) > 0 {
			out = append(out, bk)
		}
	}
	slices.SortFunc(out, func(x, y Backup) int {
		xs, xn := backupOrder(x.Name)
		ys, yn := backupOrder(y.Name)
		if c := strings.Compare(xs, ys); c != 0 {
			return c
		}
		return xn - yn
	})
	return out, nil
}

// backupOrder splits a backup's name into its stamp and its number within the
// second (1 for none), so that "…-10" sorts after "…-9".
func backupOrder(name string) (string, int) {
	if len(name) > len(stampLayout)+1 && name[len(stampLayout)] == '-' {
		if n, err := strconv.Atoi(name[len(stampLayout)+1:]); err == nil {
			return name[:len(stampLayout)], n
		}
	}
	return name, 1
}

// Time is when the backup was made, from its name (local time); false if
// the name is not a stamp.
func (bk Backup) Time() (time.Time, bool) {
	stamp, _ := backupOrder(bk.Name)
	t, err := time.ParseInLocation(stampLayout, stamp, time.Local)
	return t, err == nil
}

// Matches reports whether the learner's files of ex are exactly those of the
// backup: restoring it would change nothing.
func (b *Book) Matches(ex *Exercise, bk Backup) bool {
	for _, f := range ex.Files {
		work, werr := os.ReadFile(b.WorkPath(ex, f))
		saved, serr := os.ReadFile(filepath.Join(bk.Dir, f))
		if errors.Is(serr, os.ErrNotExist) {
			continue // the backup does not hold it: restoring leaves it as it is
		}
		if werr != nil || serr != nil || string(work) != string(saved) {
			return false
		}
	}
	return true
}

// RestoreBackup writes the backup's files over the learner's. The caller backs
// the learner's files up first.
func (b *Book) RestoreBackup(ex *Exercise, bk Backup) error {
	for _, f := range bk.Files {
		data, err := os.ReadFile(filepath.Join(bk.Dir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(b.WorkPath(ex, f), data, 0o644); err != nil {
			return fmt.Errorf("restore %s: %w", f, err)
		}
	}
	return nil
}
