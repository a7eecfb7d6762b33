package httpbudget

import (
	"testing"
	"time"
)

// TestLingerFor checks when and for how long a request lingers: by default
// only within lingerWindow of an expiry in flight, for DefaultLinger or the
// request's own time left, whichever is less; a set linger always; a
// negative one never.
func TestLingerFor(t *testing.T) {
	now := time.Now()
	def := NewTransport(nil)
	if got := def.lingerFor(now, time.Second); got != 0 {
		t.Errorf("default, no expiry yet: lingers %v, want 0", got)
	}
	def.expiredInFlight()
	for _, tc := range []struct {
		at         time.Time
		left, want time.Duration
	}{
		{now, time.Second, DefaultLinger},
		{now, 20 * time.Millisecond, 20 * time.Millisecond}, // a short budget holds its connection briefly
		{now.Add(lingerWindow / 2), time.Second, DefaultLinger},
		{now.Add(lingerWindow + time.Second), time.Second, 0}, // the window has passed
	} {
		if got := def.lingerFor(tc.at, tc.left); got != tc.want {
			t.Errorf("default, %v after an expiry, %v left: lingers %v, want %v", tc.at.Sub(now), tc.left, got, tc.want)
		}
	}
	if got := NewTransport(nil, WithLinger(5*time.Second)).lingerFor(now, time.Millisecond); got != 5*time.Second {
		t.Errorf("WithLinger(5s): lingers %v, want 5s", got)
	}
	off := NewTransport(nil, WithLinger(-1))
	off.expiredInFlight()
	if got := off.lingerFor(now, time.Second); got != 0 {
		t.Errorf("WithLinger(-1) after an expiry: lingers %v, want 0", got)
	}
	var zero Transport
	zero.expiredInFlight()
	if got := zero.lingerFor(now, time.Second); got != DefaultLinger {
		t.Errorf("zero Transport after an expiry: lingers %v, want %v", got, DefaultLinger)
	}
}
