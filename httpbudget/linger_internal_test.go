package httpbudget

import (
	"testing"
	"time"
)

// TestLingerFor checks when and for how long a request lingers: by default
// only within lingerWindow of an expiry in flight, and for one request in
// probeEvery after futileLimit lingering requests in a row got no answer,
// until one does; a set linger always; a negative one never.
func TestLingerFor(t *testing.T) {
	now := time.Now()
	def := NewTransport(nil)
	if got := def.lingerFor(now); got != 0 {
		t.Errorf("default, no expiry yet: lingers %v, want 0", got)
	}
	def.expiredInFlight()
	for _, tc := range []struct {
		at   time.Time
		want time.Duration
	}{
		{now, DefaultLinger},
		{now.Add(lingerWindow / 2), DefaultLinger},
		{now.Add(lingerWindow + time.Second), 0}, // the window has passed
	} {
		if got := def.lingerFor(tc.at); got != tc.want {
			t.Errorf("default, %v after an expiry: lingers %v, want %v", tc.at.Sub(now), got, tc.want)
		}
	}

	// A server that never answers: after futileLimit lingers in vain, one
	// request in probeEvery lingers.
	for range futileLimit {
		def.lingered(false)
	}
	n := 0
	for range 10 * probeEvery {
		if def.lingerFor(now) > 0 {
			n++
		}
	}
	if n != 10 {
		t.Errorf("after %d futile lingers, %d of %d requests lingered, want 10", futileLimit, n, 10*probeEvery)
	}
	def.lingered(true) // a late answer came: linger again
	if got := def.lingerFor(now); got != DefaultLinger {
		t.Errorf("after a paid linger: lingers %v, want %v", got, DefaultLinger)
	}
	// A burst under load: many lingers in a row run out, but one paid
	// within the window, so lingering stays on.
	for range 10 * futileLimit {
		def.lingered(false)
	}
	if got := def.lingerFor(now); got != DefaultLinger {
		t.Errorf("futile lingers, one paid just now: lingers %v, want %v", got, DefaultLinger)
	}
	def.paidAt.Store(int64(now.Sub(processStart) - 2*lingerWindow)) // the last paid linger is old
	n = 0
	for range 10 * probeEvery {
		if def.lingerFor(now) > 0 {
			n++
		}
	}
	if n != 10 {
		t.Errorf("futile lingers, the last paid %v ago: %d of %d requests lingered, want 10", 2*lingerWindow, n, 10*probeEvery)
	}

	set := NewTransport(nil, WithLinger(5*time.Second))
	for range 2 * futileLimit {
		set.lingered(false)
	}
	if got := set.lingerFor(now); got != 5*time.Second {
		t.Errorf("WithLinger(5s), no expiry, futile: lingers %v, want 5s", got)
	}
	off := NewTransport(nil, WithLinger(-1))
	off.expiredInFlight()
	if got := off.lingerFor(now); got != 0 {
		t.Errorf("WithLinger(-1) after an expiry: lingers %v, want 0", got)
	}
	var zero Transport
	zero.expiredInFlight()
	if got := zero.lingerFor(now); got != DefaultLinger {
		t.Errorf("zero Transport after an expiry: lingers %v, want %v", got, DefaultLinger)
	}
}
