package workbook

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The bug hunts' side of the workspace: the learner's key, from which every
// hunt's variant is derived (package sacc/hunt), and the hunts' records in the
// progress file.

// HuntKeyFile holds the learner's hunt key, relative to the root: next to the
// progress file, readable by its owner only, and ignored by git (a learner who
// commits their work should not publish the key their answers derive from).
const HuntKeyFile = "exercises/.saccbook-hunt-key"

// HuntKeySize is the key's length in bytes: an HMAC-SHA256 key of a full block
// of hash output.
const HuntKeySize = 32

// HuntKey is the key file's content.
type HuntKey struct {
	Key []byte // HuntKeySize bytes
	// Learner is the learner's id: with the key, it decides every variant. A
	// course's key file, as an instructor hands it out, may have none; the
	// learner gives theirs when taking it in.
	Learner string
	// Course is set when the key came from a course (saccbook hunt key
	// --import) rather than being made on this machine.
	Course bool
}

// huntKeyJSON is the file's form.
type huntKeyJSON struct {
	Note    string `json:"note"`
	Key     string `json:"key"`
	Learner string `json:"learner"`
	Origin  string `json:"origin,omitempty"` // "local" or "course"
}

const huntKeyNote = "saccbook's key for the bug hunts: with the learner id, it decides every hunt's variant. A new key gives new variants (your scores stay). Anyone with this file and the source can work out your hunts' answers: it keeps the game fair, not secret."

// ValidLearner checks a learner id: 1 to 64 characters of printable text, no
// spaces at either end.
func ValidLearner(id string) error {
	switch {
	case id == "":
		return errors.New("learner id is empty")
	case len(id) > 64:
		return fmt.Errorf("learner id %.20q… is longer than 64 bytes", id)
	case !utf8.ValidString(id):
		return errors.New("learner id is not UTF-8 text")
	case strings.TrimSpace(id) != id:
		return fmt.Errorf("learner id %q starts or ends with a space", id)
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("learner id %q holds a character that does not print", id)
		}
	}
	return nil
}

// ParseHuntKey reads a key file's content.
func ParseHuntKey(data []byte) (*HuntKey, error) {
	var j huntKeyJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("not a hunt key file: %v", err)
	}
	key, err := hex.DecodeString(j.Key)
	if err != nil || len(key) != HuntKeySize {
		return nil, fmt.Errorf("its key is not %d bytes in hex", HuntKeySize)
	}
	if j.Learner != "" {
		if err := ValidLearner(j.Learner); err != nil {
			return nil, err
		}
	}
	switch j.Origin {
	case "", "local", "course":
	default:
		return nil, fmt.Errorf("origin %q: want local or course", j.Origin)
	}
	return &HuntKey{Key: key, Learner: j.Learner, Course: j.Origin == "course"}, nil
}

// Marshal is the key file's content.
func (k *HuntKey) Marshal() []byte {
	origin := "local"
	if k.Course {
		origin = "course"
	}
	data, _ := json.MarshalIndent(huntKeyJSON{Note: huntKeyNote, Key: hex.EncodeToString(k.Key), Learner: k.Learner, Origin: origin}, "", "  ")
	return append(data, '\n')
}

// ErrNoHuntKey is a workspace whose key has not been made yet.
var ErrNoHuntKey = errors.New("no hunt key yet")

// ReadHuntKey reads a key file that was handed out, such as a course's: a
// missing file is the error of opening it, and one that does not parse says
// so with no advice to delete it, since a course's variants and grades hang
// on that very file.
func ReadHuntKey(path string) (*HuntKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hunt key file: %w", err)
	}
	k, err := ParseHuntKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return k, nil
}

// LoadHuntKey reads a key file. A missing file is ErrNoHuntKey; one that does not
// parse is an error that says how to start afresh.
func LoadHuntKey(path string) (*HuntKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoHuntKey)
	}
	if err != nil {
		return nil, err
	}
	k, err := ParseHuntKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v (delete it and saccbook makes a new key: your hunts' variants change, your scores stay)", path, err)
	}
	return k, nil
}

// EnsureHuntKey loads the workspace's key, making one on first use: 32 random
// bytes and the learner id given, in a file only its owner may read. made says
// whether it was made now.
func EnsureHuntKey(root, learner string, random io.Reader) (k *HuntKey, made bool, err error) {
	path := filepath.Join(root, HuntKeyFile)
	k, err = LoadHuntKey(path)
	if !errors.Is(err, ErrNoHuntKey) {
		return k, false, err
	}
	if err := ValidLearner(learner); err != nil {
		return nil, false, err
	}
	if random == nil {
		random = rand.Reader
	}
	k = &HuntKey{Key: make([]byte, HuntKeySize), Learner: learner}
	if _, err := io.ReadFull(random, k.Key); err != nil {
		return nil, false, fmt.Errorf("make a hunt key: %w", err)
	}
	// O_EXCL: if another saccbook made the key meanwhile, use that one.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		k, err = LoadHuntKey(path)
		return k, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("make a hunt key: %w", err)
	}
	_, err = f.Write(k.Marshal())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, false, fmt.Errorf("make a hunt key: %w", err)
	}
	return k, true, nil
}

// SaveHuntKey replaces the key file at path in one step (a course's key taken
// in), readable by its owner only.
func SaveHuntKey(path string, k *HuntKey) error {
	if len(k.Key) != HuntKeySize {
		return fmt.Errorf("hunt key: %d bytes, want %d", len(k.Key), HuntKeySize)
	}
	if err := ValidLearner(k.Learner); err != nil {
		return err
	}
	return writeAtomic(path, k.Marshal(), ".saccbook-hunt-key-*")
}

// writeAtomic replaces path with data through a temporary file in the same
// directory (created with mode 0600) and a rename: a reader sees the old file or
// the new one, never a part.
func writeAtomic(path string, data []byte, pattern string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// ---------------------------------------------------------------------------
// Scores

// The hunts' scoring: a hunt is worth HuntWorth, each wrong submission before it
// is solved costs HuntPenalty, and a solved hunt scores at least HuntFloor.
const (
	HuntWorth   = 10
	HuntPenalty = 2
	HuntFloor   = 2
)

// HuntScore is what solving a hunt scores after wrong wrong submissions.
func HuntScore(wrong int) int { return max(HuntFloor, HuntWorth-HuntPenalty*wrong) }

// HuntStatus is where a learner is with a hunt.
type HuntStatus string

const (
	HuntNotStarted HuntStatus = "not started"
	HuntStarted    HuntStatus = "started"
	HuntSolved     HuntStatus = "solved"
)

// HuntProgress is one hunt's record.
type HuntProgress struct {
	Status  HuntStatus `json:"status"`
	Wrong   int        `json:"wrong,omitempty"`   // wrong submissions before it was solved
	Score   int        `json:"score,omitempty"`   // points, once solved
	Started string     `json:"started,omitempty"` // when it was first started or submitted, RFC 3339
	Solved  string     `json:"solved,omitempty"`  // when it was solved, RFC 3339
	Learner string     `json:"learner,omitempty"` // whose variant was solved
}

// Hunt returns the record of hunt n, creating it.
func (p *Progress) Hunt(n int) *HuntProgress {
	key := strconv.Itoa(n)
	h := p.Hunts[key]
	if h == nil {
		h = &HuntProgress{Status: HuntNotStarted}
		if p.Hunts == nil {
			p.Hunts = map[string]*HuntProgress{}
		}
		p.Hunts[key] = h
	}
	return h
}

// HuntStatusOf is hunt n's record without creating one.
func (p *Progress) HuntStatusOf(n int) HuntProgress {
	if h := p.Hunts[strconv.Itoa(n)]; h != nil {
		return *h
	}
	return HuntProgress{Status: HuntNotStarted}
}

// Start notes that the hunt was started (once).
func (h *HuntProgress) Start(now time.Time) {
	if h.Status == HuntNotStarted || h.Status == "" {
		h.Status = HuntStarted
	}
	if h.Started == "" {
		h.Started = now.UTC().Format(time.RFC3339)
	}
}

// Submit records a graded submission and reports whether it counted. Once a
// hunt is solved nothing changes any more: later submissions are answered but
// neither cost nor earn anything, so the score stays the one first earned.
func (h *HuntProgress) Submit(solved bool, learner string, now time.Time) bool {
	if h.Status == HuntSolved {
		return false
	}
	h.Start(now)
	if !solved {
		h.Wrong++
		return true
	}
	h.Status, h.Score, h.Learner = HuntSolved, HuntScore(h.Wrong), learner
	h.Solved = now.UTC().Format(time.RFC3339)
	return true
}

// Worth is what the hunt scores if solved now (its score, once solved).
func (h HuntProgress) Worth() int {
	if h.Status == HuntSolved {
		return h.Score
	}
	return HuntScore(h.Wrong)
}

// checkHunts rejects hunt records that cannot have been written by saccbook:
// a progress file edited by hand into nonsense is reported, not trusted.
func (p *Progress) checkHunts() error {
	for k, h := range p.Hunts {
		if n, err := strconv.Atoi(k); err != nil || n < 1 || h == nil {
			return fmt.Errorf("hunts: %q is not a hunt's record", k)
		}
		switch {
		case h.Status != HuntNotStarted && h.Status != HuntStarted && h.Status != HuntSolved:
			return fmt.Errorf("hunt %s: status %q", k, h.Status)
		case h.Wrong < 0 || h.Score < 0 || h.Score > HuntWorth:
			return fmt.Errorf("hunt %s: %d wrong, score %d", k, h.Wrong, h.Score)
		}
	}
	return nil
}
