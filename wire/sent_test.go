package wire_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

// TestPolicyDecideSent checks how a wait in a queue is charged: relative values count
// from when the request was sent, unless the sender's clock is ahead of ours.
func TestPolicyDecideSent(t *testing.T) {
	t.Parallel()
	now := time.Now()
	msAt := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }
	ms := time.Millisecond
	for _, tc := range []struct {
		name      string
		p         wire.Policy
		h         wire.Metadata
		sent      time.Duration // from now; 0 means unknown
		remaining time.Duration
		source    wire.Sources
		has, skew bool
		err       error
	}{
		{name: "waited 2s of 5s", h: wire.Metadata{"request-timeout-ms": {"5000"}}, sent: -2 * time.Second,
			remaining: 3 * time.Second, source: wire.SourceRequestTimeout, has: true},
		{name: "waited past its budget", h: wire.Metadata{"request-timeout-ms": {"1000"}}, sent: -3 * time.Second,
			remaining: -2 * time.Second, source: wire.SourceRequestTimeout, has: true, err: wire.ErrExpired},
		{name: "sent unknown: counts from now", h: wire.Metadata{"request-timeout-ms": {"1000"}},
			remaining: time.Second, source: wire.SourceRequestTimeout, has: true},
		{name: "sent slightly ahead, within the skew", h: wire.Metadata{"request-timeout-ms": {"1000"}}, sent: 100 * ms,
			remaining: time.Second, source: wire.SourceRequestTimeout, has: true},
		{name: "sent an hour ahead: clocks disagree, no hour added", h: wire.Metadata{"request-timeout-ms": {"1000"}}, sent: time.Hour,
			remaining: time.Second, source: wire.SourceRequestTimeout, has: true, skew: true},
		{name: "pair agreeing with the wait: the absolute value wins a tie-break only when stricter",
			h: wire.Metadata{"request-timeout-ms": {"1000"}, "request-deadline": {msAt(590 * ms)}}, sent: -400 * ms,
			remaining: 590 * ms, source: wire.SourceRequestDeadline, has: true},
		{name: "absolute alone, in the past by less than the wait plus skew: expired, not skew",
			h: wire.Metadata{"request-deadline": {msAt(-time.Second)}}, sent: -3 * time.Second,
			remaining: -time.Second, source: wire.SourceRequestDeadline, has: true, err: wire.ErrExpired},
		{name: "absolute alone, further in the past than the wait: skew",
			h: wire.Metadata{"request-deadline": {msAt(-time.Hour)}}, sent: -time.Second, skew: true},
		{name: "untrusted: Default, whatever the wait", p: wire.Policy{Trust: wire.SourcesNone, Default: time.Second},
			h: wire.Metadata{"request-timeout-ms": {"9999999999"}}, sent: -time.Hour, remaining: time.Second, has: true},
		{name: "Max caps a long budget", p: wire.Policy{Max: time.Minute},
			h: wire.Metadata{"request-timeout-ms": {"9999999999"}}, sent: -time.Second, remaining: time.Minute, source: wire.SourceRequestTimeout, has: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sent time.Time
			if tc.sent != 0 {
				sent = now.Add(tc.sent)
			}
			d, err := tc.p.DecideSent(tc.h, sent, now)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			// An absolute value is whole milliseconds, hence the tolerance.
			if d.HasDeadline != tc.has || d.Skew != tc.skew || d.Source != tc.source ||
				d.Remaining < tc.remaining-ms || d.Remaining > tc.remaining+ms {
				t.Errorf("DecideSent = %+v; want deadline %v, %v left, source %v, skew %v", d, tc.has, tc.remaining, tc.source, tc.skew)
			}
		})
	}
}

func TestPolicyDecideSentNil(t *testing.T) {
	t.Parallel()
	var p *wire.Policy
	d, err := p.DecideSent(wire.Metadata{"request-timeout-ms": {"1"}}, time.Now().Add(-time.Hour), time.Now())
	if err != nil || d.HasDeadline {
		t.Errorf("nil policy: %+v, %v; want no deadline and no refusal", d, err)
	}
}

// TestHTTPHeaderRequestAttempt: the attempt number is read on every arrival, so its
// lookup must not canonicalize (allocate) the name.
func TestHTTPHeaderRequestAttempt(t *testing.T) {
	h := wire.HTTPHeader(http.Header{wire.HeaderRequestAttempt: {"2"}})
	for _, name := range []string{"request-attempt", wire.HeaderRequestAttempt} {
		if v := h.Values(name); len(v) != 1 || v[0] != "2" {
			t.Errorf("Values(%q) = %q", name, v)
		}
		if n := testing.AllocsPerRun(100, func() { _ = h.Values(name) }); n != 0 {
			t.Errorf("Values(%q) allocates %v times", name, n)
		}
	}
}

// FuzzDecideSent: whatever the headers and the time sent, a sender's clock can never
// add time (the budget is never more than the largest relative value, or Max), and a
// Decision is consistent with its error.
func FuzzDecideSent(f *testing.F) {
	f.Add("5000", "1700000003000", int64(-2000))
	f.Add("1000", "", int64(3_600_000))
	f.Add("x", "-1", int64(0))
	f.Add("9999999999", "999999999999999", int64(-1<<40))
	f.Fuzz(func(t *testing.T, rt, rd string, sentMs int64) {
		h := wire.Metadata{"request-timeout-ms": {rt}, "request-deadline": {rd}}
		var sent time.Time
		if sentMs != 0 {
			sent = now.Add(time.Duration(sentMs%(1<<40)) * time.Millisecond)
		}
		p := wire.Policy{Max: time.Hour}
		d, err := p.DecideSent(h, sent, now)
		if (err != nil) != d.Refused() || d.Remaining > time.Hour {
			t.Fatalf("DecideSent = %+v, %v", d, err)
		}
		if rel, ok, _ := wire.ParseRequestTimeout(rt); ok && d.Source != 0 && d.Remaining > rel {
			t.Fatalf("DecideSent gave %v, more than the %v asked for", d.Remaining, rel)
		}
	})
}
