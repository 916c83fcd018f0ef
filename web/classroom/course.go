package classroom

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/saccbook/saccbook/workbook"
)

// Course is a course's directory: the course key every student's hunt
// variants come from, the instructor's token, the join code that the join URL
// carries, and the database. Everything is made on first start and read again
// on every later one, so a restart keeps the URLs, the cookies and the
// variants.
type Course struct {
	Dir        string
	Key        *workbook.HuntKey // Course set, no learner: each student's id is theirs
	Instructor string            // the instructor token
	JoinCode   string            // the join URL's secret
	Made       bool              // this start made the course
}

// The files of a course directory.
const (
	keyFile        = "course-key.json"
	instructorFile = "instructor-token"
	joinFile       = "join-code"
)

// OpenCourse opens the course in dir, making what is missing. random is where
// new secrets come from (nil: crypto/rand).
func OpenCourse(dir string, random io.Reader) (*Course, error) {
	if random == nil {
		random = rand.Reader
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("course directory: %w", err)
	}
	c := &Course{Dir: dir}
	keyPath := filepath.Join(dir, keyFile)
	k, err := workbook.ReadHuntKey(keyPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		b := make([]byte, workbook.HuntKeySize)
		if _, err := io.ReadFull(random, b); err != nil {
			return nil, fmt.Errorf("make the course key: %w", err)
		}
		k = &workbook.HuntKey{Key: b, Course: true}
		// A course's key names no learner (each student's id is theirs), so
		// it is written as an instructor hands it out.
		if err := os.WriteFile(keyPath, k.Marshal(), 0o600); err != nil {
			return nil, fmt.Errorf("save the course key: %w", err)
		}
		c.Made = true
	case err != nil:
		// Every student's variants and the server's grades come from this
		// key, so the way out is the file back, not a new one.
		return nil, fmt.Errorf("course key: %w (restore the file from a copy; a new key would give every student new variants)", err)
	}
	k.Course, k.Learner = true, ""
	c.Key = k
	if c.Instructor, err = secret(filepath.Join(dir, instructorFile), random); err != nil {
		return nil, err
	}
	if c.JoinCode, err = secret(filepath.Join(dir, joinFile), random); err != nil {
		return nil, err
	}
	return c, nil
}

// secret reads a token file, or makes it: 32 random bytes, in hex, readable
// by the instructor only.
func secret(path string, random io.Reader) (string, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(data))
		if len(s) < 32 || strings.Trim(s, "0123456789abcdef") != "" {
			return "", fmt.Errorf("%s: not a token (delete it to make a new one)", path)
		}
		return s, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	s, err := newToken(random)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("save %s: %w", path, err)
	}
	return s, nil
}

// newToken is 32 bytes from random (nil: crypto/rand), in hex.
func newToken(random io.Reader) (string, error) {
	if random == nil {
		random = rand.Reader
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
