// Package report is the line format the end-to-end programs print on
// standard output: one JSON object per line, first the address a program
// listens on, then one line per request it served. Times are Unix
// nanoseconds on the wall clock, which the processes of one machine share;
// durations are nanoseconds measured on each process's monotonic clock.
package report

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// Line is one line of a program's report.
type Line struct {
	// Listen is the address the program listens on (first line only).
	Listen string `json:"listen,omitempty"`

	Hop       string `json:"hop,omitempty"`       // "edge", "service" or "backend"
	ID        string `json:"id,omitempty"`        // the request's id, the same at every hop
	Arrived   int64  `json:"arrived,omitempty"`   // when the handler started
	Remaining int64  `json:"remaining,omitempty"` // the handler's time left on arrival
	Deadline  int64  `json:"deadline,omitempty"`  // Arrived + Remaining
	Sent      int64  `json:"sent,omitempty"`      // when the call to the next hop was made
	Done      int64  `json:"done,omitempty"`      // when the handler finished
	Status    string `json:"status,omitempty"`    // the answer: an HTTP status or a gRPC code
	// Answered reports that the call to the next hop ended with that hop's
	// answer while this hop's own budget was still live, rather than being
	// canceled when this hop's deadline came.
	Answered bool `json:"answered,omitempty"`

	// The backend's orphan-work probe, for the request's work.
	WorkStart    int64 `json:"work_start,omitempty"`
	GaveUp       int64 `json:"gave_up,omitempty"` // zero when the work finished first
	WorkStop     int64 `json:"work_stop,omitempty"`
	Orphaned     int64 `json:"orphaned,omitempty"`      // how long the work went on after GaveUp
	PastDeadline int64 `json:"past_deadline,omitempty"` // WorkStop less the work's own deadline
}

var (
	mu  sync.Mutex
	enc = json.NewEncoder(os.Stdout)
)

// Print writes l as one line on standard output. It is safe for concurrent
// use.
func Print(l Line) {
	mu.Lock()
	defer mu.Unlock()
	_ = enc.Encode(l)
}

// Wall returns t as Unix nanoseconds, or zero for the zero time.
func Wall(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
