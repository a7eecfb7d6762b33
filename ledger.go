package budget

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ledger is the bounded record of where one request's budget went. Every
// budget started with [Start] carries one; [LedgerFrom] returns it. It keeps
// at most a fixed number of events (see [Config.LedgerCapacity]) and counts
// the rest, so a runaway loop cannot make it grow without bound.
//
// A Ledger is safe for concurrent use: the branches of a fan-out record into
// the same ledger. A nil *Ledger records nothing and renders as empty.
type Ledger struct {
	start  time.Time
	budget time.Duration

	mu      sync.Mutex
	limit   int
	events  []Event
	dropped int
}

// ledgerInitial is how many events a new ledger has room for before it first
// grows: most requests record a handful, so the full capacity is not
// allocated up front.
const ledgerInitial = 4

// init prepares a ledger whose first events go into buf's spare capacity.
func (l *Ledger) init(start time.Time, budget time.Duration, capacity int, buf []Event) {
	if capacity == 0 {
		capacity = defaultLedgerCapacity
	}
	l.start, l.budget, l.limit = start, budget, capacity
	l.events = buf[:0:min(cap(buf), capacity)]
}

func (l *Ledger) add(ev Event) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if len(l.events) < l.limit {
		l.events = append(l.events, ev)
	} else {
		l.dropped++
	}
	l.mu.Unlock()
}

// Start returns when the request's budget started.
func (l *Ledger) Start() time.Time {
	if l == nil {
		return time.Time{}
	}
	return l.start
}

// Budget returns the whole budget the request started with.
func (l *Ledger) Budget() time.Duration {
	if l == nil {
		return 0
	}
	return l.budget
}

// Events returns a copy of the recorded events in the order they were added.
func (l *Ledger) Events() []Event {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Dropped returns how many events arrived after the ledger was full and were
// counted but not stored.
func (l *Ledger) Dropped() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// String renders the ledger as a waterfall a person can read: one line per
// event with its offset from the start, its duration, the time that was left
// when it began, and a bar placing it within the budget.
//
//	budget 300ms
//	     +0.0ms  arrival   request                  left 300.0ms
//	     +0.1ms  attempt   geometry    250.0ms  left 299.9ms  expired  |██████████████████████████  |
func (l *Ledger) String() string {
	if l == nil {
		return ""
	}
	events := l.Events()
	var b strings.Builder
	b.WriteString("budget ")
	b.WriteString(fmtMs(l.budget))
	if d := l.Dropped(); d > 0 {
		b.WriteString(" (")
		b.WriteString(strconv.Itoa(d))
		b.WriteString(" more events not kept)")
	}
	b.WriteByte('\n')
	stageW := 5
	for _, ev := range events {
		stageW = max(stageW, len(ev.Stage))
	}
	const barW = 30
	outcomeW := len("retry_suppressed")
	for _, ev := range events {
		line := make([]byte, 0, 120)
		line = appendPad(line, "+"+fmtMs(ev.Offset), 10, true)
		line = append(line, "  "...)
		line = appendPad(line, ev.Kind.String(), 17, false)
		line = appendPad(line, ev.Stage, stageW+2, false)
		dur := ""
		if ev.Duration != 0 {
			dur = fmtMs(ev.Duration)
		}
		line = appendPad(line, dur, 10, true)
		line = append(line, "  left "...)
		line = appendPad(line, fmtMs(ev.Remaining), 9, true)
		line = append(line, "  "...)
		outcome := ""
		if ev.Outcome != OutcomeNone {
			outcome = ev.Outcome.String()
		}
		// The outcome column has a fixed width so that every row's bar
		// starts in the same column.
		line = appendPad(line, outcome, outcomeW, false)
		if l.budget > 0 && ev.Duration > 0 {
			from := int(int64(barW) * int64(ev.Offset) / int64(l.budget))
			to := int(int64(barW) * int64(ev.Offset+ev.Duration) / int64(l.budget))
			from, to = min(max(from, 0), barW), min(max(to, from+1), barW)
			line = append(line, "  |"...)
			for i := range barW {
				if i >= from && i < to {
					line = append(line, "█"...)
				} else {
					line = append(line, ' ')
				}
			}
			line = append(line, '|')
		}
		b.WriteString(strings.TrimRight(string(line), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

func appendPad(dst []byte, s string, width int, right bool) []byte {
	pad := width - len([]rune(s))
	if right {
		for ; pad > 0; pad-- {
			dst = append(dst, ' ')
		}
	}
	dst = append(dst, s...)
	if !right {
		for ; pad > 0; pad-- {
			dst = append(dst, ' ')
		}
	}
	return dst
}

// fmtMs formats d in milliseconds with one decimal, such as "12.5ms".
func fmtMs(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
}

// ledgerJSON is the JSON form of a ledger; durations are in milliseconds.
type ledgerJSON struct {
	BudgetMs float64     `json:"budget_ms"`
	Dropped  int         `json:"dropped,omitempty"`
	Events   []eventJSON `json:"events"`
}

type eventJSON struct {
	Kind        string  `json:"kind"`
	Stage       string  `json:"stage"`
	OffsetMs    float64 `json:"offset_ms"`
	DurationMs  float64 `json:"duration_ms,omitempty"`
	RemainingMs float64 `json:"remaining_ms"`
	NeededMs    float64 `json:"needed_ms,omitempty"`
	Outcome     string  `json:"outcome,omitempty"`
	Attempt     int     `json:"attempt,omitempty"`
	Probe       bool    `json:"probe,omitempty"`
	Error       string  `json:"error,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MarshalJSON renders the ledger as a JSON object with budget_ms, dropped and
// an events array; every duration is in milliseconds. Error messages are
// redacted with [RedactError]: the JSON travels in logs and to debug pages,
// and must not carry the API keys of a request URL.
func (l *Ledger) MarshalJSON() ([]byte, error) {
	out := ledgerJSON{BudgetMs: ms(l.Budget()), Dropped: l.Dropped(), Events: []eventJSON{}}
	for _, ev := range l.Events() {
		e := eventJSON{
			Kind: ev.Kind.String(), Stage: ev.Stage, OffsetMs: ms(ev.Offset),
			DurationMs: ms(ev.Duration), RemainingMs: ms(ev.Remaining), NeededMs: ms(ev.Needed),
			Attempt: ev.Attempt, Probe: ev.Probe,
		}
		if ev.Outcome != OutcomeNone {
			e.Outcome = ev.Outcome.String()
		}
		if ev.Err != nil {
			e.Error = RedactError(ev.Err) // no URL query strings or user info
		}
		out.Events = append(out.Events, e)
	}
	return json.Marshal(out)
}

// ServerTiming renders the ledger as the value of an HTTP Server-Timing header
// (W3C Server Timing): one metric per event that has a duration, named
// "<kind>-<stage>" with characters outside the token set replaced by '_', its
// duration in milliseconds and the outcome as its description, followed by a
// "budget" metric whose duration is the whole budget. Instants are left out to
// keep the header short.
func (l *Ledger) ServerTiming() string {
	if l == nil {
		return ""
	}
	var b []byte
	for _, ev := range l.Events() {
		if ev.Duration <= 0 {
			continue
		}
		b = appendToken(b, ev.Kind.String())
		b = append(b, '-')
		b = appendToken(b, ev.Stage)
		b = append(b, ";dur="...)
		b = strconv.AppendFloat(b, ms(ev.Duration), 'f', 1, 64)
		if ev.Outcome != OutcomeNone {
			b = append(b, `;desc="`...)
			b = appendToken(b, ev.Outcome.String())
			b = append(b, '"')
		}
		b = append(b, ", "...)
	}
	b = append(b, "budget;dur="...)
	b = strconv.AppendFloat(b, ms(l.budget), 'f', 1, 64)
	return string(b)
}

// appendToken appends s keeping only RFC 9110 token characters.
func appendToken(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
			dst = append(dst, c)
		default:
			dst = append(dst, '_')
		}
	}
	return dst
}
