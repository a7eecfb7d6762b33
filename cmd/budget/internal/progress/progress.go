package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress writes one line about the run in progress to stderr. On a terminal
// the line is rewritten in place; elsewhere (a log, a pipe, CI) a line is
// written when each part of the run starts, so the output stays readable.
type Progress struct {
	// w is where progress goes, stderr in the command; tty says whether
	// it is a terminal, where the line is redrawn in place; start is when
	// the run began.
	w     io.Writer
	tty   bool
	start time.Time

	parts int // parts of the run in all
	part  int // the current part, from 1

	// mu guards the rest: what part runs and how far it is (done of
	// total requests), when the line was last drawn (last, to draw at most
	// a few times a second) and how wide it was (width, to blank it).
	mu    sync.Mutex
	what  string
	done  int
	total int
	last  time.Time
	width int
}

// New returns a progress reporter writing to w for a run of parts
// pattern runs.
func New(w io.Writer, parts int) *Progress {
	return &Progress{w: w, tty: isTerminal(w), start: time.Now(), parts: parts}
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Begin announces a part of the run of total steps.
func (p *Progress) Begin(scenario, part string, total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.part++
	p.what = fmt.Sprintf("[%d/%d] %s · %s", p.part, p.parts, scenario, part)
	p.done, p.total = 0, total
	if !p.tty {
		fmt.Fprintf(p.w, "demo: %5.1fs  %s (%d requests)\n", time.Since(p.start).Seconds(), p.what, total)
		return
	}
	p.drawLocked()
}

// Step counts one step of the current part. It is safe to call from several
// goroutines; a terminal is redrawn at most every 50 ms.
func (p *Progress) Step() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.tty && (time.Since(p.last) > 50*time.Millisecond || p.done == p.total) {
		p.drawLocked()
	}
}

// drawLocked redraws the progress line (in place on a terminal); p.mu is
// held.
func (p *Progress) drawLocked() {
	p.last = time.Now()
	line := fmt.Sprintf("demo: %5.1fs  %s  %d/%d", time.Since(p.start).Seconds(), p.what, p.done, p.total)
	pad := ""
	if n := p.width - len([]rune(line)); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.width = len([]rune(line))
	fmt.Fprint(p.w, "\r"+line+pad)
}

// Finish ends the progress line.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.width > 0 {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.width)+"\r")
	}
	fmt.Fprintf(p.w, "demo: done in %.1fs\n", time.Since(p.start).Seconds())
}
