package httpbudget

import (
	"hash/maphash"
	"sync/atomic"
	"time"
)

// hostSlots bounds how many hosts a Transport remembers. A host is kept in
// one of two slots chosen by its name's hash; when both hold other hosts,
// the one that is not lingering and was heard from least recently makes
// room. A host forgotten this way is treated as never seen: an expiry
// toward it closes the connection, as net/http does, which is the safe
// side. 128 slots of 8 bytes each cost a Transport 1 KiB.
const hostSlots = 128

// Per-host limits of lingering.
const (
	// trustWindow is how long a host that showed it honours the budget
	// stays trusted without showing it again.
	trustWindow = 10 * time.Minute
	// lingerCap bounds the requests lingering toward a host at once while
	// it is not trusted (a probe, or a linger set with WithLinger);
	// lingerCapPaid bounds them once it is. Lingering holds only
	// connections the requests already had, so the cap is set above the
	// size of a burst (10,000 failing at once) rather than below it.
	lingerCap     = 64
	lingerCapPaid = 16384
	// probeMaxShift bounds the back-off between probes of a host that has
	// not shown it honours the budget: lingerWindow << probeMaxShift.
	probeMaxShift = 4
)

var hostSeed = maphash.MakeSeed()

// hostTable is a Transport's bounded memory of the hosts it sends to. The
// zero hostTable is empty and ready to use; it is safe for concurrent use,
// and a lookup takes no lock and allocates nothing.
type hostTable struct {
	slots [hostSlots]atomic.Pointer[hostState]
}

// hostState is what a Transport knows about one host. Times are monotonic
// offsets from processStart, 0 for never (every store sets the low bit).
type hostState struct {
	name      string
	heard     atomic.Int64 // when the host last answered, expired or lingered
	trusted   atomic.Int64 // when it last showed it honours the budget
	expired   atomic.Int64 // when a request to it last ran out of time in flight
	paid      atomic.Int64 // when a lingering request last got its late answer
	probed    atomic.Int64 // when a request last lingered as a probe
	misses    atomic.Int32 // probes in a row that got no answer
	futile    atomic.Int32 // lingering requests in a row that got no answer
	probes    atomic.Uint32
	lingering atomic.Int32 // requests lingering now
}

func mono(now time.Time) int64 { return int64(now.Sub(processStart)) | 1 }

// within reports whether the time at (0: never) is less than d before now.
func within(at int64, now time.Time, d time.Duration) bool {
	return at != 0 && mono(now)-at < int64(d)
}

func (h *hostTable) index(name string) (int, int) {
	s := maphash.String(hostSeed, name)
	i := int(s % hostSlots)
	return i, (i + 1 + int((s>>32)%(hostSlots-1))) % hostSlots // never i
}

// get returns the state of host name, or nil when it is not remembered.
func (h *hostTable) get(name string) *hostState {
	i, j := h.index(name)
	if s := h.slots[i].Load(); s != nil && s.name == name {
		return s
	}
	if s := h.slots[j].Load(); s != nil && s.name == name {
		return s
	}
	return nil
}

// add returns the state of host name, making room for it when it is not
// remembered yet.
func (h *hostTable) add(name string, now time.Time) *hostState {
	for {
		if s := h.get(name); s != nil {
			return s
		}
		i, j := h.index(name)
		a, b := h.slots[i].Load(), h.slots[j].Load()
		slot, old := i, a
		if a != nil && (b == nil || a.keep(b)) {
			slot, old = j, b
		}
		s := &hostState{name: name}
		s.heard.Store(mono(now))
		if h.slots[slot].CompareAndSwap(old, s) {
			return s
		}
	}
}

// keep reports whether s is worth more than t: lingering requests first,
// then the host heard from more recently.
func (s *hostState) keep(t *hostState) bool {
	if ls, lt := s.lingering.Load() > 0, t.lingering.Load() > 0; ls != lt {
		return ls
	}
	return s.heard.Load() >= t.heard.Load()
}

// isTrusted reports whether the host showed it honours the budget within
// trustWindow.
func (s *hostState) isTrusted(now time.Time) bool { return within(s.trusted.Load(), now, trustWindow) }

// trust records that the host showed it honours the budget.
func (s *hostState) trust(now time.Time) {
	s.trusted.Store(mono(now))
	s.heard.Store(mono(now))
	if s.misses.Load() != 0 {
		s.misses.Store(0)
	}
}

// backingOff reports whether lingering toward the host stopped paying:
// futileLimit lingering requests in a row got no answer and none got one
// in lingerWindow.
func (s *hostState) backingOff(now time.Time) bool {
	return s.futile.Load() >= futileLimit && !within(s.paid.Load(), now, lingerWindow)
}

// probeDue reports whether a request that runs out of time toward an
// untrusted host may linger, to find out whether the host answers late:
// once per lingerWindow, doubling with each probe in a row that got no
// answer, up to lingerWindow << probeMaxShift.
func (s *hostState) probeDue(now time.Time) bool {
	at := s.probed.Load()
	return at == 0 || !within(at, now, lingerWindow<<min(s.misses.Load(), probeMaxShift))
}

// takeProbe claims the host's probe if it is due.
func (s *hostState) takeProbe(now time.Time) bool {
	at := s.probed.Load()
	if at != 0 && within(at, now, lingerWindow<<min(s.misses.Load(), probeMaxShift)) {
		return false
	}
	return s.probed.CompareAndSwap(at, mono(now))
}

// enter counts a request that starts lingering, unless the host's cap is
// reached; it reports whether the request may linger.
func (s *hostState) enter(now time.Time) bool {
	limit := int32(lingerCap)
	if s.isTrusted(now) {
		limit = lingerCapPaid
	}
	if s.lingering.Add(1) > limit {
		s.lingering.Add(-1)
		return false
	}
	return true
}

// leave records how a lingering request ended: its late answer came (paid)
// or the linger ran out first. A late answer shows the host answers after
// a deadline, so it is trusted; when lingering keeps not paying, the trust
// is withdrawn.
func (s *hostState) leave(now time.Time, paid, probe bool) {
	s.lingering.Add(-1)
	if paid {
		s.paid.Store(mono(now))
		s.trust(now)
		if s.futile.Load() != 0 {
			s.futile.Store(0)
		}
		return
	}
	if probe {
		s.misses.Add(1)
	}
	if s.futile.Add(1) >= futileLimit && !within(s.paid.Load(), now, lingerWindow) {
		s.trusted.Store(0)
	}
}
