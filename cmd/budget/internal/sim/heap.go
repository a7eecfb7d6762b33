package sim

// eventKind says what happens when an event fires.
type eventKind uint8

const (
	evArrive       eventKind = iota // a new request reaches the entry
	evWorkDone                      // an invocation's own work is done
	evAttemptTimer                  // a caller's timer on one attempt fires
	evBackoffDone                   // a caller's pause before a retry ends
	evDeadline                      // the deadline handed to an invocation passes
	evLocalDone                     // a local fallback (a cache) answers
)

// event is one entry of the simulation's agenda. Events are ordered by time,
// then by the order they were scheduled, so a run is deterministic.
type event struct {
	at   int64 // virtual nanoseconds
	seq  uint64
	gen  uint64 // the invocation's token or generation when scheduled
	id   int32  // invocation index
	kind eventKind
}

func (e *event) before(o *event) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	return e.seq < o.seq
}

// agenda is a 4-ary min-heap of events: shallower than a binary heap, and
// the four children of a node share a cache line or two. It is written out
// rather than built on container/heap so that pushing and popping neither
// allocate nor go through an interface.
type agenda struct {
	ev  []event
	seq uint64
}

func (a *agenda) push(at int64, kind eventKind, id int32, gen uint64) {
	a.seq++
	a.ev = append(a.ev, event{at: at, seq: a.seq, id: id, gen: gen, kind: kind})
	i := len(a.ev) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !a.ev[i].before(&a.ev[p]) {
			break
		}
		a.ev[i], a.ev[p] = a.ev[p], a.ev[i]
		i = p
	}
}

func (a *agenda) pop() (event, bool) {
	n := len(a.ev)
	if n == 0 {
		return event{}, false
	}
	top := a.ev[0]
	n--
	a.ev[0] = a.ev[n]
	a.ev = a.ev[:n]
	i := 0
	for {
		l := 4*i + 1
		if l >= n {
			break
		}
		m := l
		for c := l + 1; c < l+4 && c < n; c++ {
			if a.ev[c].before(&a.ev[m]) {
				m = c
			}
		}
		if !a.ev[m].before(&a.ev[i]) {
			break
		}
		a.ev[i], a.ev[m] = a.ev[m], a.ev[i]
		i = m
	}
	return top, true
}
