package httpbudget

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// lingerCase is one request in TestLingerFor: what happened to its host
// before, and whether it lingers.
type lingerCase struct {
	name   string
	linger time.Duration // the Transport's WithLinger
	before func(t *Transport, h string, now time.Time)
	want   time.Duration // lingerFor's answer
	stays  int           // of 10 requests past their deadline, how many linger
}

// TestLingerFor checks when and for how long a request lingers: by default
// toward a host that has shown it honours the budget, once a request to it
// ran out of time in flight or it refused one with Budget-Expired; toward another host only as its probe, one
// request per lingerWindow; a set linger always, backing off after
// futileLimit lingering requests in a row got no answer; a negative one
// never; and never more than the host's cap at once.
func TestLingerFor(t *testing.T) {
	t.Parallel()
	now := time.Now()
	expired := func(t *Transport, h string, now time.Time) { t.expiredInFlight(h, now) }
	trusted := func(t *Transport, h string, now time.Time) { t.honoured(h, now); t.expiredInFlight(h, now) }
	futile := func(t *Transport, h string, now time.Time) {
		trusted(t, h, now)
		st := t.hosts.get(h)
		for range futileLimit {
			st.lingering.Add(1)
			st.leave(now, false, false)
		}
	}
	for _, tc := range []lingerCase{
		{name: "default, first request to the host", want: DefaultLinger, stays: 1},
		{name: "default, known host, no expiry", before: func(t *Transport, h string, now time.Time) { t.hosts.add(h, now) }},
		{name: "default, untrusted, after an expiry", before: expired, want: DefaultLinger, stays: 1},
		{name: "default, untrusted, probed just now", before: func(t *Transport, h string, now time.Time) {
			expired(t, h, now)
			t.hosts.get(h).takeProbe(now)
		}},
		{name: "default, untrusted, probed a window ago", before: func(t *Transport, h string, now time.Time) {
			expired(t, h, now)
			t.hosts.get(h).takeProbe(now.Add(-lingerWindow - time.Second))
		}, want: DefaultLinger, stays: 1},
		{name: "default, trusted by a refusal just now", before: func(t *Transport, h string, now time.Time) { t.honoured(h, now) },
			want: DefaultLinger, stays: 10},
		{name: "default, trusted by a refusal a window ago", before: func(t *Transport, h string, now time.Time) {
			t.honoured(h, now.Add(-lingerWindow-time.Second))
		}},
		{name: "default, trusted, after an expiry", before: trusted, want: DefaultLinger, stays: 10},
		{name: "default, trusted, expiry a window ago", before: func(t *Transport, h string, now time.Time) {
			trusted(t, h, now.Add(-lingerWindow-time.Second))
		}},
		{name: "default, trust withdrawn after futile lingers", before: func(t *Transport, h string, now time.Time) {
			futile(t, h, now)
			t.hosts.get(h).takeProbe(now)
		}},
		{name: "default, futile lingers but one paid", before: func(t *Transport, h string, now time.Time) {
			futile(t, h, now)
			st := t.hosts.get(h)
			st.lingering.Add(1)
			st.leave(now, true, false)
			for range futileLimit {
				st.lingering.Add(1)
				st.leave(now, false, false)
			}
		}, want: DefaultLinger, stays: 10},
		{name: "set, unknown host", linger: 5 * time.Second, want: 5 * time.Second, stays: 10},
		{name: "off", linger: -1, before: trusted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := NewTransport(nil, WithLinger(tc.linger))
			const h = "svc.test:80"
			if tc.before != nil {
				tc.before(tr, h, now)
			}
			got, st := tr.lingerFor(now, h)
			if got != tc.want {
				t.Fatalf("lingers %v, want %v", got, tc.want)
			}
			if got == 0 {
				return
			}
			stays := 0
			for range 10 {
				x := newExchange(context.Background(), st, tc.linger > 0, now, got)
				if x.stay(now) {
					stays++
				}
			}
			if stays != tc.stays {
				t.Errorf("%d of 10 requests past their deadline linger, want %d", stays, tc.stays)
			}
		})
	}
}

// TestLingerBacksOff: with a set linger, after futileLimit lingering
// requests in a row got no answer, and none in lingerWindow, one request in
// probeEvery lingers, until a late answer comes.
func TestLingerBacksOff(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tr := NewTransport(nil, WithLinger(2*time.Second))
	const h = "hang.test:80"
	_, st := tr.lingerFor(now, h)
	for range futileLimit {
		st.lingering.Add(1)
		st.leave(now, false, false)
	}
	n := 0
	for range 10 * probeEvery {
		if d, _ := tr.lingerFor(now, h); d > 0 {
			n++
		}
	}
	if n != 10 {
		t.Errorf("after %d futile lingers, %d of %d requests lingered, want 10", futileLimit, n, 10*probeEvery)
	}
	st.lingering.Add(1)
	st.leave(now, true, false)
	if d, _ := tr.lingerFor(now, h); d != 2*time.Second {
		t.Errorf("after a paid linger: lingers %v, want 2s", d)
	}
}

// TestLingerCap: at most lingerCap requests linger toward a host at once,
// lingerCapPaid once it is trusted (a late answer came); a request
// that leaves makes room.
func TestLingerCap(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		name string
		paid bool
		want int
	}{
		{"no late answer", false, lingerCap},
		{"a late answer", true, lingerCapPaid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := NewTransport(nil, WithLinger(time.Second))
			_, st := tr.lingerFor(now, "svc.test:80")
			if tc.paid {
				st.lingering.Add(1)
				st.leave(now, true, false)
			}
			n := 0
			for range 2 * lingerCapPaid {
				if st.enter(now) {
					n++
				}
			}
			if n != tc.want {
				t.Fatalf("%d requests lingered at once, want %d", n, tc.want)
			}
			st.lingering.Add(-1)
			if !st.enter(now) {
				t.Error("a request that left made no room")
			}
		})
	}
}

// TestHostTableIsBounded: a Transport talking to many hosts remembers at
// most hostSlots of them, and a host it remembers is found again.
func TestHostTableIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var h hostTable
	for i := range 10 * hostSlots {
		name := "h" + strconv.Itoa(i) + ".test:80"
		if s := h.add(name, now); s == nil || s.name != name || h.get(name) != s {
			t.Fatalf("host %s not found right after it was added", name)
		}
	}
	n := 0
	for i := range h.slots {
		if h.slots[i].Load() != nil {
			n++
		}
	}
	if n > hostSlots {
		t.Errorf("%d hosts remembered, want at most %d", n, hostSlots)
	}
	// A host with lingering requests is kept over one without.
	busy := h.add("busy.test:80", now)
	busy.lingering.Add(1)
	for i := range 10 * hostSlots {
		h.add("more"+strconv.Itoa(i)+".test:80", now.Add(time.Second))
	}
	if h.get("busy.test:80") != busy {
		t.Error("a host with a lingering request was forgotten")
	}
}
