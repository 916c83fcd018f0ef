// Package lineio reads a line-oriented protocol (qtest, the monitor) with memory
// bounded whatever the peer sends: a line longer than the limit is consumed up to
// its newline and reported as too long, so the session can answer it with an
// error and go on with the next line.
package lineio

import (
	"bufio"
	"bytes"
	"io"
)

// ReadLine reads one line into line (without its newline). got reports whether
// there is a line to answer: a complete line, or a last line cut short by EOF. A
// line longer than max is consumed up to its newline but not kept, and tooLong is
// set. err is io.EOF after the last line, or the reader's error; a line cut short
// by a real error is not reported as got.
func ReadLine(br *bufio.Reader, line []byte, max int) (_ []byte, tooLong, got bool, err error) {
	seen := false
	for {
		frag, err := br.ReadSlice('\n')
		seen = seen || len(frag) > 0
		content := bytes.TrimSuffix(frag, []byte{'\n'})
		if !tooLong {
			if len(line)+len(content) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, content...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == nil:
			return line, tooLong, true, nil
		case err == io.EOF:
			return line, tooLong, seen, io.EOF
		default:
			return line, tooLong, false, err
		}
	}
}
