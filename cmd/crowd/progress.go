package main

import (
	"io"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"
)

// progress reports a run of a known number of frames (headless) as it
// goes: on a terminal one line rewritten in place (at most 5 times a
// second, erased at the end); otherwise, for logs and pipes, a line at
// each quarter of the run. It allocates nothing per frame, so that the
// summary's allocation count is the frame loop's own.
type progress struct {
	out      io.Writer
	total    int
	tty      bool
	quarter  int // non-terminal: the quarters of the run reported
	last     time.Time
	buf      []byte
	reported bool
}

// newProgress returns nil (no reports) when the run has no known length
// or the user asked for quiet.
func newProgress(out io.Writer, total int, quiet bool) *progress {
	if total <= 0 || quiet {
		return nil
	}
	p := &progress{out: out, total: total, buf: make([]byte, 0, 64)}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.tty = true
	}
	return p
}

// frame reports that done frames of total have been issued.
func (p *progress) frame(done int) {
	if p == nil {
		return
	}
	if p.tty {
		now := time.Now()
		if done < p.total && now.Sub(p.last) < 200*time.Millisecond {
			return
		}
		p.last = now
		p.buf = append(p.buf[:0], "\rframe "...)
	} else {
		q := 4 * done / p.total // quarters completed
		if q <= p.quarter {
			return
		}
		p.quarter = q
		p.buf = append(p.buf[:0], "frames "...)
	}
	p.buf = strconv.AppendInt(p.buf, int64(done), 10)
	p.buf = append(p.buf, '/')
	p.buf = strconv.AppendInt(p.buf, int64(p.total), 10)
	if !p.tty {
		p.buf = append(p.buf, '\n')
	}
	p.out.Write(p.buf)
	p.reported = true
}

// end erases the terminal line (the summary follows).
func (p *progress) end() {
	if p != nil && p.tty && p.reported {
		io.WriteString(p.out, "\r\033[K")
	}
}
