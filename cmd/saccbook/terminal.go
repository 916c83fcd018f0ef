package main

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// terminal is the learner's terminal, as watch needs it: a way into single-key
// mode and back. Tests stand in a fake for it.
type terminal interface {
	// raw puts the terminal in raw mode (every key at once, no echo, no line
	// editing, Ctrl-C a key like the others) and returns what puts it back.
	raw() (restore func(), err error)
}

// terminalOf is the terminal behind stdin, or nil when stdin is not one (a
// pipe, a file, a test's reader).
func terminalOf(stdin io.Reader) terminal {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return osTerminal{int(f.Fd())}
}

// isScreen reports whether out is a terminal, which watch may clear.
func isScreen(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

type osTerminal struct{ fd int }

func (t osTerminal) raw() (func(), error) {
	old, err := term.MakeRaw(t.fd)
	if err != nil {
		return nil, err
	}
	return func() { term.Restore(t.fd, old) }, nil
}

// crlf writes to a terminal in raw mode, which no longer turns "\n" into
// "\r\n" itself: without the carriage return each line would start where the
// last one ended.
type crlf struct{ w io.Writer }

func (c crlf) Write(p []byte) (int, error) {
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// clearScreen moves the cursor home and clears the screen (ECMA-48 CUP and
// ED 2), as watch does before each run.
const clearScreen = "\x1b[H\x1b[2J"
