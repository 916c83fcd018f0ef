package lineio

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

type step struct {
	line    string
	tooLong bool
	got     bool
	eof     bool
}

func TestReadLine(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []step
	}{
		{"lines", "a\nbb\n", []step{{"a", false, true, false}, {"bb", false, true, false}, {"", false, false, true}}},
		{"last line without newline", "a\nbb", []step{{"a", false, true, false}, {"bb", false, true, true}}},
		{"too long, then on", "xxxxxxxxxxxx\nok\n", []step{{"", true, true, false}, {"ok", false, true, false}, {"", false, false, true}}},
		{"exactly the limit", "12345678\n", []step{{"12345678", false, true, false}, {"", false, false, true}}},
		{"empty input", "", []step{{"", false, false, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A reader buffer smaller than the lines makes ReadSlice return in pieces.
			br := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
			var line []byte
			for i, w := range tc.want {
				var tooLong, got bool
				var err error
				line, tooLong, got, err = ReadLine(br, line[:0], 8)
				if string(line) != w.line || tooLong != w.tooLong || got != w.got || (err == io.EOF) != w.eof {
					t.Fatalf("read %d: %q tooLong=%v got=%v err=%v; want %+v", i, line, tooLong, got, err, w)
				}
			}
		})
	}
}

type failing struct{ s string }

func (f *failing) Read(p []byte) (int, error) {
	if f.s == "" {
		return 0, errors.New("connection reset")
	}
	n := copy(p, f.s)
	f.s = f.s[n:]
	return n, nil
}

func TestALineCutByAnErrorIsNotAnswered(t *testing.T) {
	br := bufio.NewReader(&failing{"half a li"})
	_, _, got, err := ReadLine(br, nil, 64)
	if got || err == nil || err == io.EOF {
		t.Fatalf("got=%v err=%v, want an unanswered line and the reader's error", got, err)
	}
}
