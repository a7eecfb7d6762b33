package sim

import (
	"math"

	"github.com/timebudget/budget/cmd/budget/internal/format"
)

// Recovery windows: the answer rate after a fault is measured in windows of
// RecoveryWindow, or, when the rate before the fault gives fewer than
// RecoveryMinAnswers answers in one, of the time that many answers took
// before the fault (rounded up to a whole millisecond), so that a window
// is not judged on a handful of answers.
const (
	RecoveryWindow     = int64(100e6)
	RecoveryMinAnswers = 20
	// RecoveryShare is the share of the answer rate before the fault that
	// counts as recovered.
	RecoveryShare = 0.9
)

// Recovery is how soon the faulty service answered again after a fault
// that ends. Field names are stable: they appear in report.json.
//
// An answer from the service is a call to it that succeeded while its
// caller, and every caller up to the user, still waited for it. The time
// to the first answer runs from the fault's end to the first such answer
// at or after it. The rate before the fault is the answers in [0, start)
// over start, from the run's first request to the fault's start. After the
// fault, time is cut into windows [end + k·w, end + (k+1)·w) of width w
// (WindowMs: 100 ms, or longer, see RecoveryWindow), and the time to 90 %
// of the rate before the fault is (k+1)·w for the first window with at
// least 0.9 × rate × w answers. Only windows that end before the last
// request is sent count: after it, the traffic itself winds down. A figure
// that was not reached within the run is "never" (null in report.json),
// never 0; the time to 90 % has none when no answer came before the fault
// (a fault from the start of the run).
type Recovery struct {
	// Fault is the fault, as --fault takes it.
	Fault string `json:"fault"`
	// Ended reports whether the fault ended before the last request was
	// sent; when it did not, neither figure can be reached.
	Ended bool `json:"fault_ended"`
	// PreFaultPerSecond is the rate of answers before the fault.
	PreFaultPerSecond float64 `json:"pre_fault_answers_per_second"`
	// WindowMs is the width of the windows the rate after the fault is
	// measured in.
	WindowMs float64 `json:"window_ms"`
	// FirstAnswerMs is the time from the fault's end to the first answer,
	// null when none came; FirstAnswer says the same in words, "never"
	// for null.
	FirstAnswerMs *float64 `json:"first_answer_ms"`
	FirstAnswer   string   `json:"first_answer"`
	// RateMs is the time from the fault's end to the end of the first
	// window with 90 % of the rate before the fault, null when no window
	// reached it; Rate says the same in words: "never", or "n/a" when
	// there was no rate before the fault.
	RateMs *float64 `json:"rate_90_ms"`
	Rate   string   `json:"rate_90"`
}

// recTrack follows the answers of the services one fault is injected into,
// in the order of virtual time.
type recTrack struct {
	pre   int64 // answers before the fault's start
	first int64 // the first answer at or after its end, or never
	// After the end: the window being counted, its answers, and the end of
	// the first window that reached the rate (0: none yet), all relative to
	// the fault's end. w is 0 until the first answer after the end.
	w         int64
	need      float64
	win, n    int64
	recovered int64
}

// window returns the width of the recovery windows, in ns, and the answers
// a window needs, given pre answers in the start ns before the fault; 0, 0
// when there is no rate before the fault.
func window(pre, start int64) (w int64, need float64) {
	if pre == 0 || start <= 0 {
		return 0, 0
	}
	rate := float64(pre) / float64(start) // answers per ns
	w = RecoveryWindow
	if rate*float64(w) < RecoveryMinAnswers {
		w = int64(math.Ceil(RecoveryMinAnswers/rate/1e6)) * 1e6
	}
	return w, RecoveryShare * rate * float64(w)
}

// answer records an answer at virtual time now from a service under f.
func (r *recTrack) answer(now int64, f *Fault) {
	switch {
	case now < int64(f.Start):
		r.pre++
		return
	case f.End == 0 || now < int64(f.End):
		return // during the fault
	}
	t := now - int64(f.End)
	if r.first == never {
		r.first = now
		r.w, r.need = window(r.pre, int64(f.Start))
	}
	if r.w == 0 || r.recovered > 0 {
		return
	}
	k := t / r.w
	if k != r.win {
		r.close()
		r.win, r.n = k, 0
	}
	r.n++
}

// close judges the window being counted.
func (r *recTrack) close() {
	if r.recovered == 0 && r.w > 0 && float64(r.n) >= r.need {
		r.recovered = (r.win + 1) * r.w
	}
}

// figures returns the recovery from f, for a run whose last request was
// sent at lastSent.
func (r *recTrack) figures(f *Fault, lastSent int64) Recovery {
	out := Recovery{Fault: f.String(), Ended: int64(f.End) <= lastSent, FirstAnswer: "never", Rate: "never"}
	w, _ := window(r.pre, int64(f.Start))
	if f.Start > 0 {
		out.PreFaultPerSecond = float64(r.pre) / f.Start.Seconds()
	}
	out.WindowMs = float64(w) / 1e6
	if r.first != never {
		ms := float64(r.first-int64(f.End)) / 1e6
		out.FirstAnswerMs, out.FirstAnswer = &ms, format.Ms(ms)
	}
	if w == 0 {
		out.Rate = "n/a"
		return out
	}
	end := r.recovered
	if end == 0 && r.first != never {
		// The last window counted was not judged yet.
		c := *r
		c.close()
		end = c.recovered
	}
	if end > 0 && int64(f.End)+end <= lastSent {
		ms := float64(end) / 1e6
		out.RateMs, out.Rate = &ms, format.Ms(ms)
	}
	return out
}
