package wire

import (
	"time"
)

// DefaultSkew is the clock-disagreement threshold used when none is given: 250 ms. It is
// well above the offset between NTP-disciplined clocks in one data centre (a few
// milliseconds) plus a cross-region transit (100 to 200 ms), and small enough that a
// wrong clock can take at most a quarter of a second from a budget, since an absolute
// value may shorten the budget by no more than the threshold.
const DefaultSkew = 250 * time.Millisecond

// maxValues is how many comma-separated elements of one source Extract reads, counting
// empty ones. A legitimate sender writes one; the limit keeps a megabyte of "1,1,1,..."
// from costing a megabyte of parsing. Elements beyond it are not read, and the source
// counts one malformed value.
const maxValues = 16

// Extraction is what [Extract] found in a request's headers. It is a plain value and safe
// to copy.
type Extraction struct {
	// Deadline is the winning deadline, now plus Remaining. It is the zero Time when no
	// trusted source gave a usable value (Source is then 0).
	Deadline time.Time
	// Remaining is the time left under the winning value, measured from now. It is
	// zero or negative when the deadline has already passed.
	Remaining time.Duration
	// Source is the single source whose value won, or 0 when none did. Ties go to the
	// relative sources, this library's own header first.
	Source Sources
	// Malformed counts the malformed values seen in trusted sources, each element of a
	// comma-separated or repeated field counting once.
	Malformed int
	// MalformedFrom is the set of trusted sources that had a malformed value.
	MalformedFrom Sources
	// Skew reports that an absolute value was ignored because it disagreed with the
	// clock: it would have cut the budget by more than the threshold below the
	// strictest relative value, or, with no relative value, it lay further in the past
	// than the threshold.
	Skew bool
	// SkewFrom is the set of sources whose values were ignored for skew.
	SkewFrom Sources

	bad badValue // the first malformed value, for Err
}

type badValue struct {
	f *field
	v string
	r reason
}

// Err returns a [*ParseError] describing the first malformed value seen, or nil when
// there was none. It allocates; call it only when the error will be used.
func (x Extraction) Err() error {
	if x.bad.f == nil {
		return nil
	}
	return newParseError(x.bad.f.name, x.bad.v, x.bad.r)
}

// Extract reads every source in trust from h and returns the strictest usable deadline,
// measured from now. It is the policy-free core of [Policy.Decide].
//
// Each source may appear as repeated fields, comma-separated values or both; every value
// is read (up to 16 per source), empty elements are skipped and spaces or tabs around
// an element are ignored, as HTTP's list syntax allows. Malformed values are counted and
// otherwise ignored. Relative values need no shared clock and are always usable.
// Absolute values are usable only when consistent with the clock: with relative values
// present, an absolute value may be earlier than the strictest of them by at most skew
// (it then wins, which charges the request's transit time to its budget); with none, it
// may lie in the past by at most skew (it then means the request expired). An absolute
// value outside those bounds sets Skew and is ignored. One later than the relative values
// is not evidence of skew: proxies legitimately shorten relative timeouts, and it could
// not win anyway. A skew of zero or less means [DefaultSkew].
//
// A nil h or an empty trust reads nothing. Extract does not allocate when h is an
// [HTTPHeader] or a [Metadata] (other Header implementations cost what their Values
// costs). It costs about 25 ns per trusted source, most of it the map lookup: about
// 200 ns for [SourcesDefault] over a typical http.Header. It is safe for concurrent use.
func Extract(h Header, trust Sources, skew time.Duration, now time.Time) Extraction {
	return extract(h, trust, skew, now, 0)
}

// extract is Extract for a request that waited queued before now, after it was sent:
// relative values count from its sending, so queued is taken off each of them, and an
// absolute value alone may lie in the past by skew plus queued. queued is zero or more.
func extract(h Header, trust Sources, skew time.Duration, now time.Time, queued time.Duration) Extraction {
	var x Extraction
	trust &= SourcesAll
	if h == nil || trust == 0 {
		return x
	}
	if skew <= 0 {
		skew = DefaultSkew
	}
	hh, isHTTP := h.(HTTPHeader)
	md, isMetadata := h.(Metadata)

	e := extractor{now: now, floor: subSat(-skew, queued), queued: queued}
	absolute := false
	for i := range fields {
		f := &fields[i]
		if f.kind.absolute() && !absolute {
			// Every relative value has been read: fix the earliest an absolute
			// value may be. best is not negative here, so best-skew cannot overflow.
			absolute = true
			if e.have {
				e.floor = e.best - skew
			}
		}
		if trust&f.src == 0 {
			continue
		}
		var vals []string
		switch {
		case isHTTP:
			vals = hh[f.canonical]
		case isMetadata:
			vals = md[f.lower]
		default:
			vals = h.Values(f.lower)
		}
		e.read(&x, f, vals)
	}
	if e.have {
		x.Source = e.src
		x.Remaining = e.best
		x.Deadline = now.Add(e.best)
	}
	return x
}

// extractor holds Extract's running state.
type extractor struct {
	now    time.Time
	floor  time.Duration // the earliest an absolute value may be, from now
	queued time.Duration // how long the request waited since it was sent
	best   time.Duration
	src    Sources
	have   bool
}

// read takes every element of every value of one source.
func (e *extractor) read(x *Extraction, f *field, vals []string) {
	eachValue(vals, f, x, func(elem string) reason {
		e.take(x, f, elem) // counts what is malformed itself
		return reasonNone
	})
}

// take parses one element and keeps it if it is the strictest usable value so far.
func (e *extractor) take(x *Extraction, f *field, v string) {
	var d time.Duration
	var r reason
	switch f.kind {
	case kindMillis:
		d, r = parseMillis(v, f.digits)
	case kindGRPC:
		d, r = parseGRPC(v)
	default:
		var t time.Time
		if t, r = parseInstant(v, f.kind); r == reasonNone {
			d = t.Sub(e.now) // saturates instead of overflowing
			if d < e.floor {
				x.Skew = true
				x.SkewFrom |= f.src
				return
			}
		}
	}
	if r != reasonNone {
		x.malformed(f, v, r)
		return
	}
	if !f.kind.absolute() {
		d = subSat(d, e.queued)
	}
	if !e.have || d < e.best {
		e.best, e.src, e.have = d, f.src, true
	}
}

func (x *Extraction) malformed(f *field, v string, r reason) {
	x.Malformed++
	x.MalformedFrom |= f.src
	if x.bad.f == nil {
		x.bad = badValue{f: f, v: v, r: r}
	}
}
