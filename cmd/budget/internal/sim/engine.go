package sim

import (
	"math/rand/v2"
	"time"

	"github.com/timebudget/budget"
)

// state of an invocation.
const (
	stQueued  uint8 = iota // waiting for a worker
	stWorking              // doing its own work
	stCalling              // waiting for a callee or a local rung
	stBackoff              // pausing before a retry
	stDone
)

// inv is one invocation of a service: a request being served by it on behalf
// of a caller (another invocation, or the user at the entry).
type inv struct {
	svc      int32
	parent   int32 // -1: the user
	req      int32
	child    int32 // the callee invocation being waited for, or -1
	step     int16 // index of the current call
	rung     int16 // 0: the call itself; k: its k-th fallback
	attempt  int16
	state    uint8
	gone     bool   // the caller stopped waiting
	probe    bool   // the current attempt is its op's probe
	probeIn  bool   // its caller sent it as a probe, or as part of one
	holds    bool   // holds a worker
	gen      uint64 // the slot's generation, bumped at each reuse
	tok      uint64 // matches the one event the invocation waits for
	deadline int64  // handed deadline, or never
	orphanAt int64  // when the request it serves was given up, or never
	start    int64  // when it took its worker
	attStart int64  // when the current attempt started
	lat      int64  // its own work's time, when drawn before it started
	drawn    bool
}

type queued struct {
	id  int32
	gen uint64
}

type pool struct {
	free        int32
	q           []queued
	head        int
	dispatching bool
}

type engine struct {
	m   *model
	cfg Config
	pat Pattern
	rng *rand.Rand

	now   int64
	ag    agenda
	invs  []inv
	free  []int32
	pools []pool
	// ops are the dependencies' budget.Op in the admission pattern, one
	// per model.ops entry; nil in the others.
	ops []budget.Op
	tok uint64
	// trace, when not nil, is told every admission and every end of an
	// attempt the ops see (tests check sim against a standalone Op).
	trace func(step)

	// requests
	arrive  []int64
	entryOf []int32
	done    []bool
	lat     []int64
	outcome []uint8
	sent    int
	ended   int
	first   int64
	last    int64

	giveUps    []int32 // requests by arrival; those before giveUpHead are past
	giveUpHead int

	waste   int64 // nanoseconds of worker time after the request was given up
	refused []int64
	// faulty marks the requests that called, or tried to call, a service
	// with a fault.
	faulty []bool
	cutOff int
	events int64

	// faultCalls counts, per Config.Faults entry, the calls that started
	// while the fault was on, for its K of N.
	faultCalls []int64
	// rec follows, per Config.Faults entry, the answers of the faulty
	// services, for the recovery figures.
	rec []recTrack
	// lastSent is when the last request was sent.
	lastSent int64
	// until is the virtual time up to which requests are sent beyond
	// cfg.Requests, and maxSent the most that may be sent (see
	// Config.runsUntil).
	until   int64
	maxSent int
}

// wantMore reports whether another request should be sent now.
func (e *engine) wantMore() bool {
	return e.sent < e.cfg.Requests || (e.now < e.until && e.sent < e.maxSent)
}

const (
	outInBudget uint8 = iota + 1
	outLate
	outFailed
)

func newEngine(m *model, cfg Config, p Pattern) *engine {
	e := &engine{m: m, cfg: cfg, pat: p,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		pools:   make([]pool, m.pools),
		arrive:  make([]int64, 0, cfg.Requests),
		entryOf: make([]int32, 0, cfg.Requests),
		done:    make([]bool, 0, cfg.Requests),
		lat:     make([]int64, 0, cfg.Requests),
		outcome: make([]uint8, 0, cfg.Requests),
		refused: make([]int64, len(m.svcs)),
		faulty:  make([]bool, 0, cfg.Requests),

		until:      int64(cfg.runsUntil()),
		maxSent:    cfg.maxRequests(),
		faultCalls: make([]int64, len(cfg.Faults)),
		rec:        make([]recTrack, len(cfg.Faults)),
	}
	for i := range e.rec {
		e.rec[i].first = never
	}
	for i := range e.pools {
		e.pools[i].free = m.poolSize[i]
	}
	if p == Admission {
		e.ops = make([]budget.Op, len(m.ops))
		for i := range e.ops {
			setUp(&e.ops[i], m, cfg.Seed, i)
		}
	}
	return e
}

// setUp configures op as the budget.Op of dependency i, as a user would:
// named after the callee, with the callee's prior, every other field at
// its default, and a random source of its own, so that the run is the
// same for a seed.
func setUp(op *budget.Op, m *model, seed uint64, i int) {
	callee := m.ops[i].callee
	op.Name, op.Prior = m.names[callee], time.Duration(m.svcs[callee].prior)
	op.Rand = rand.NewPCG(seed, uint64(i)+1)
}

// origin is virtual time zero as the ops see it: a time with no monotonic
// reading, on a whole hour, so that their windows fall the same way in
// every process (see the root package's processStart).
var origin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns virtual time v as a time.Time for the ops.
func at(v int64) time.Time { return origin.Add(time.Duration(v)) }

// step is one admission (begin) or end of an attempt, as an op saw it.
type step struct {
	op         int32
	req        int32 // the request the attempt serves
	begin      bool
	now, start int64 // virtual ns: the admission or end; the attempt's start
	available  int64 // for an admission
	asked      bool  // for an admission: asked as a probe (Ask.Probe)
	admitted   bool  // for an admission: whether the attempt started
	probe      bool
	outcome    budget.Outcome // for an end
}

// admit asks dependency op whether x's attempt may start with left ns
// available, and reports whether it may and the bound it gets beyond left
// (a probe's; 0 for none). The attempt is asked as a probe when x serves
// one (see sendsProbe).
func (e *engine) admit(x *inv, op int32, left int64) (ok bool, bound int64) {
	dec := e.ops[op].BeginAt(at(e.now), budget.Ask{Available: time.Duration(left), Probe: x.probeIn})
	x.probe = dec.Probe
	if e.trace != nil {
		e.trace(step{op: op, req: x.req, begin: true, now: e.now, available: left, asked: x.probeIn, admitted: dec.Admit, probe: dec.Probe})
	}
	return dec.Admit, int64(dec.Cap)
}

// sendsProbe reports whether x's current attempt goes to its callee as a
// probe, so that the callee's own calls ask their ops as probes
// (budget.Ask.Probe), as budget.WithProbe marks a call's context across a
// hop: when x's op admitted the attempt as a probe (budget.Admission.Probe),
// or x itself serves a probe sent from further up. This is the one place
// that decides what crosses a hop.
func sendsProbe(x *inv) bool { return x.probe || x.probeIn }

// attemptEnded tells x's op, in the admission pattern, how x's current attempt
// ended.
func (e *engine) attemptEnded(id int32, outcome budget.Outcome) {
	if e.pat != Admission {
		return
	}
	x := &e.invs[id]
	op := e.m.svcs[x.svc].calls[x.step].rungs[x.rung].op
	e.ops[op].EndAt(at(x.attStart), at(e.now), outcome, x.probe)
	if e.trace != nil {
		e.trace(step{op: op, req: x.req, now: e.now, start: x.attStart, probe: x.probe, outcome: outcome})
	}
}

func (e *engine) nextTok() uint64 { e.tok++; return e.tok }

func (e *engine) run() {
	if e.cfg.Rate > 0 {
		e.ag.push(0, evArrive, -1, 0)
	} else {
		for range min(e.cfg.Concurrency, e.maxSent) {
			e.ag.push(0, evArrive, -1, 0)
		}
	}
	limit := GiveUpFactor * e.m.budget
	for e.ended < e.sent || e.wantMore() {
		// The next user to give up, when that comes before the agenda's
		// next event (ties go to the user, as if scheduled first).
		for e.giveUpHead < len(e.giveUps) && e.done[e.giveUps[e.giveUpHead]] {
			e.giveUpHead++
		}
		if e.giveUpHead < len(e.giveUps) {
			r := e.giveUps[e.giveUpHead]
			if at := e.arrive[r] + limit; len(e.ag.ev) == 0 || at <= e.ag.ev[0].at {
				e.giveUpHead++
				e.events++
				e.now = at
				e.giveUp(r)
				continue
			}
		}
		if e.giveUpHead > 4096 && e.giveUpHead*2 > len(e.giveUps) {
			n := copy(e.giveUps, e.giveUps[e.giveUpHead:])
			e.giveUps, e.giveUpHead = e.giveUps[:n], 0
		}
		ev, ok := e.ag.pop()
		if !ok {
			break
		}
		e.events++
		e.now = ev.at
		switch ev.kind {
		case evArrive:
			e.arrival()
		default:
			x := &e.invs[ev.id]
			if ev.kind == evDeadline {
				if x.gen == ev.gen && x.state != stDone && x.state != stQueued {
					e.expire(ev.id)
				}
				continue
			}
			if x.tok != ev.gen || x.state == stDone {
				continue // stale
			}
			switch ev.kind {
			case evWorkDone, evLocalDone:
				e.nextCall(ev.id)
			case evAttemptTimer:
				e.attemptTimedOut(ev.id)
			case evBackoffDone:
				e.tryAttempt(ev.id)
			}
		}
	}
	// The run ends when the last request ends; work still going on is
	// counted up to this moment, as budget demo counts it when it stops its
	// services.
	for i := range e.invs {
		x := &e.invs[i]
		if x.state != stDone && x.holds && x.orphanAt != never {
			e.waste += e.now - max(x.orphanAt, x.start)
		}
	}
}

func (e *engine) newInv(svc, parent, req int32, deadline, orphanAt int64) int32 {
	var id int32
	if n := len(e.free); n > 0 {
		id = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		e.invs = append(e.invs, inv{})
		id = int32(len(e.invs) - 1)
	}
	x := &e.invs[id]
	*x = inv{svc: svc, parent: parent, req: req, child: -1, step: -1, gen: x.gen + 1,
		deadline: deadline, orphanAt: orphanAt, state: stQueued}
	return id
}

func (e *engine) arrival() {
	if !e.wantMore() {
		return // a closed-loop user whose next request is not needed
	}
	r := e.sent
	e.sent++
	e.lastSent = e.now
	e.arrive = append(e.arrive, 0)
	e.entryOf = append(e.entryOf, 0)
	e.done = append(e.done, false)
	e.lat = append(e.lat, 0)
	e.outcome = append(e.outcome, 0)
	e.faulty = append(e.faulty, false)
	if e.cfg.Rate > 0 && e.wantMore() {
		gap := int64(e.rng.ExpFloat64() / e.cfg.Rate * 1e9)
		e.ag.push(e.now+gap, evArrive, -1, 0)
	}
	if r == 0 {
		e.first = e.now
	}
	e.arrive[r] = e.now
	deadline := int64(never)
	if e.pat.budgetAware() {
		deadline = e.now + e.m.budget
	}
	id := e.newInv(e.m.entry, -1, int32(r), deadline, never)
	e.entryOf[r] = id
	// Users give up in the order they arrived, so their give-ups wait in
	// arrival order rather than in the agenda.
	e.giveUps = append(e.giveUps, int32(r))
	e.start(id)
}

// start gives x a worker of its pool, or queues it.
func (e *engine) start(id int32) {
	p := &e.pools[e.m.svcs[e.invs[id].svc].pool]
	if p.free > 0 && !p.dispatching {
		p.free--
		e.begin(id)
		return
	}
	p.q = append(p.q, queued{id, e.invs[id].gen})
	if !p.dispatching {
		e.dispatch(p)
	}
}

// begin starts x's own work; x holds a worker.
func (e *engine) begin(id int32) {
	x := &e.invs[id]
	x.holds, x.start, x.state = true, e.now, stWorking
	s := &e.m.svcs[x.svc]
	if x.deadline <= e.now {
		// Handed a deadline that has passed: refused on arrival.
		e.finish(id, false)
		return
	}
	lat := x.lat
	if !x.drawn {
		lat = e.ownLatency(s)
	}
	if lat == failNow {
		e.finish(id, false)
		return
	}
	if x.deadline != never && (x.parent < 0 || x.gone) {
		// Only the entry's deadline needs an event of its own, and that of
		// a callee whose caller is gone: a callee's deadline is otherwise
		// its caller's attempt timer, which expires it (see abandon).
		e.ag.push(x.deadline, evDeadline, id, x.gen)
	}
	if lat != never {
		x.tok = e.nextTok()
		e.ag.push(e.now+lat, evWorkDone, id, x.tok)
	}
}

// failNow is the own latency of a call that a Fail fault fails at once.
const failNow = -1

// ownLatency draws how long one request's own work at s, starting now,
// takes: never for a call a fault hangs (or, when the fault ends, the time
// until it ends and then its usual work), failNow for one that fails.
func (e *engine) ownLatency(s *svcInfo) int64 {
	lat := s.lat.draw(e.rng)
	f := &s.fault
	if f.Kind == 0 || !f.on(e.now) {
		return lat
	}
	if f.N > 0 {
		c := e.faultCalls[s.faultAt]
		e.faultCalls[s.faultAt]++
		if c%int64(f.N) >= int64(f.K) {
			return lat
		}
	}
	switch f.Kind {
	case Hang:
		if f.End == 0 {
			return never
		}
		return int64(f.End) - e.now + lat
	case Slow:
		lat = int64(f.Latency)
	case Fail:
		if e.rng.Float64() < f.P {
			lat = failNow
		}
	case Error:
		lat = failNow
	}
	return lat
}

// nextCall moves x to its next call, or finishes it when it has made them all.
func (e *engine) nextCall(id int32) {
	x := &e.invs[id]
	calls := e.m.svcs[x.svc].calls
	for {
		x.step++
		if int(x.step) >= len(calls) {
			e.finish(id, true)
			return
		}
		c := &calls[x.step]
		if c.share >= 1 || e.rng.Float64() < c.share {
			break
		}
	}
	x.rung, x.attempt = 0, 0
	e.tryAttempt(id)
}

// tryAttempt makes one attempt of x's current call at its current rung.
func (e *engine) tryAttempt(id int32) {
	x := &e.invs[id]
	c := &e.m.svcs[x.svc].calls[x.step]
	r := &c.rungs[x.rung]
	x.state = stCalling
	if r.svc >= 0 && e.m.svcs[r.svc].fault.Kind != 0 {
		e.faulty[x.req] = true
	}
	if r.svc < 0 {
		x.tok = e.nextTok()
		e.ag.push(e.now+r.local.draw(e.rng), evLocalDone, id, x.tok)
		return
	}
	t := r.timeout
	if t == 0 || e.pat == NoTimeout {
		t = never
	}
	if e.pat.budgetAware() {
		left := x.deadline - e.now
		if e.pat == Admission && int(x.rung) < len(c.rungs)-1 {
			left -= c.rungs[len(c.rungs)-1].need
		}
		ok := left > 0
		if e.pat == Admission {
			// The dependency's budget.Op decides, as it would in Do:
			// estimate, stall check, probes, throttling.
			var bound int64
			ok, bound = e.admit(x, r.op, left)
			if bound > 0 {
				t = min(t, bound)
			}
		}
		if !ok {
			e.refused[r.svc]++
			x.attempt = int16(c.retries) // a refusal is not retried
			e.attemptFailed(id)
			return
		}
		t = min(t, left)
	}
	deadline := int64(never)
	if e.pat.budgetAware() {
		deadline = e.now + t
	}
	orphan := int64(never)
	if x.orphanAt != never {
		orphan = e.now
	}
	// A callee that makes no calls of its own and gets a worker at once
	// ends when its own work does. When that is known to come before the
	// timeout, the timer would only ever fire stale, so it is not set:
	// about a third of all events in a large tree.
	timer, drawn, lat := t != never, false, int64(0)
	if cs := &e.m.svcs[r.svc]; timer && len(cs.calls) == 0 {
		if p := &e.pools[cs.pool]; p.free > 0 && !p.dispatching {
			lat, drawn = e.ownLatency(cs), true
			timer = lat == never || lat >= t
		}
	}
	child := e.newInv(r.svc, id, x.req, deadline, orphan)
	e.invs[child].lat, e.invs[child].drawn = lat, drawn
	e.invs[child].probeIn = sendsProbe(&e.invs[id])
	x = &e.invs[id] // newInv may have grown the slice
	x.child, x.attStart = child, e.now
	x.tok = e.nextTok()
	if timer {
		e.ag.push(e.now+t, evAttemptTimer, id, x.tok)
	}
	e.start(child)
}

// childDone is called when x's callee answered (ok) or failed.
func (e *engine) childDone(id, child int32, ok bool) {
	x := &e.invs[id]
	if x.child != child {
		return
	}
	x.child = -1
	x.tok = e.nextTok()
	// A callee that ran out of the time it was handed was cut off (a
	// censored sample: "longer than this"); one that answered, or failed
	// by itself, ended as it did.
	switch {
	case ok:
		e.attemptEnded(id, budget.OutcomeOK)
	case e.invs[child].deadline <= e.now:
		e.attemptEnded(id, budget.OutcomeExpired)
	default:
		e.attemptEnded(id, budget.OutcomeFailed)
	}
	if ok {
		e.nextCall(id)
	} else {
		e.attemptFailed(id)
	}
}

func (e *engine) attemptTimedOut(id int32) {
	x := &e.invs[id]
	child := x.child
	if child < 0 {
		return
	}
	x.child = -1
	x.tok = e.nextTok()
	e.attemptEnded(id, budget.OutcomeExpired)
	e.abandon(child)
	e.attemptFailed(id)
}

// attemptFailed retries x's call, moves to its next fallback, or fails x.
func (e *engine) attemptFailed(id int32) {
	x := &e.invs[id]
	c := &e.m.svcs[x.svc].calls[x.step]
	if x.rung == 0 && int(x.attempt) < c.retries {
		x.attempt++
		if !e.pat.budgetAware() || e.now+c.backoff < x.deadline {
			if c.backoff == 0 {
				e.tryAttempt(id)
				return
			}
			x.state = stBackoff
			x.tok = e.nextTok()
			e.ag.push(e.now+c.backoff, evBackoffDone, id, x.tok)
			return
		}
	}
	x.rung++
	x.attempt = 0
	if int(x.rung) < len(c.rungs) {
		e.tryAttempt(id)
		return
	}
	e.finish(id, false)
}

// expire stops x at the deadline it was handed.
func (e *engine) expire(id int32) {
	if c := e.invs[id].child; c >= 0 {
		e.invs[id].child = -1
		// The attempt was cut off by the deadline: as far as the caller
		// knows, the callee would have needed longer.
		e.attemptEnded(id, budget.OutcomeExpired)
		e.abandon(c)
	}
	e.finish(id, false)
}

// abandon is called when x's caller stops waiting for it.
func (e *engine) abandon(id int32) {
	x := &e.invs[id]
	if x.state == stDone {
		return
	}
	x.gone = true
	for c := id; c >= 0 && e.invs[c].orphanAt == never; c = e.invs[c].child {
		e.invs[c].orphanAt = e.now
	}
	if !e.m.svcs[x.svc].cancellable {
		// It runs on until it ends or the deadline handed to it passes. A
		// callee's deadline has no event of its own (its caller's attempt
		// timer stands for it), so once the caller is gone it gets one.
		switch {
		case x.state == stQueued || x.deadline == never:
		case x.deadline <= e.now:
			e.expire(id)
		default:
			e.ag.push(x.deadline, evDeadline, id, x.gen)
		}
		return
	}
	if c := x.child; c >= 0 {
		x.child = -1
		// Its caller gone, x gives up its attempt: canceled, which says
		// nothing of the callee's latency.
		e.attemptEnded(id, budget.OutcomeCanceled)
		e.abandon(c)
	}
	e.finish(id, false)
}

// finish ends x, frees its worker and tells its caller, if still waiting.
func (e *engine) finish(id int32, ok bool) {
	x := &e.invs[id]
	if x.state == stDone {
		return
	}
	x.state = stDone
	x.tok = e.nextTok()
	parent, gone, req := x.parent, x.gone, x.req
	if fa := e.m.svcs[x.svc].faultAt; ok && fa >= 0 && !gone && x.orphanAt == never && !e.done[req] {
		e.rec[fa].answer(e.now, &e.cfg.Faults[fa])
	}
	if x.holds {
		x.holds = false
		if x.orphanAt != never {
			e.waste += e.now - max(x.orphanAt, x.start)
		}
		p := &e.pools[e.m.svcs[x.svc].pool]
		p.free++
		e.dispatch(p)
	} else {
		// Still in a queue: the new generation makes its entry stale.
		x.gen++
	}
	switch {
	case gone:
	case parent < 0:
		e.requestDone(req, ok)
	default:
		e.childDone(parent, id, ok)
	}
	// Only now may the slot be reused: the caller read it above.
	e.free = append(e.free, id)
}

// dispatch hands free workers of p to queued invocations, first come first
// served, skipping those that ended while queued. It loops rather than
// recursing, so a long queue of calls that fail at once does not grow the
// stack.
func (e *engine) dispatch(p *pool) {
	if p.dispatching {
		return
	}
	p.dispatching = true
	for p.free > 0 && p.head < len(p.q) {
		q := p.q[p.head]
		p.head++
		x := &e.invs[q.id]
		if x.gen != q.gen || x.state != stQueued {
			continue
		}
		if e.m.svcs[x.svc].cancellable && x.gone {
			continue
		}
		p.free--
		e.begin(q.id)
	}
	if p.head > 1024 && p.head*2 > len(p.q) {
		n := copy(p.q, p.q[p.head:])
		p.q, p.head = p.q[:n], 0
	}
	p.dispatching = false
}

func (e *engine) requestDone(r int32, ok bool) {
	if e.done[r] {
		return
	}
	lat := e.now - e.arrive[r]
	out := outFailed
	if ok {
		out = outLate
		if lat <= e.m.budget {
			out = outInBudget
		}
	}
	e.record(r, lat, out)
}

func (e *engine) giveUp(r int32) {
	if e.done[r] {
		return
	}
	e.cutOff++
	e.record(r, e.now-e.arrive[r], outFailed)
	e.abandon(e.entryOf[r])
}

func (e *engine) record(r int32, lat int64, out uint8) {
	e.done[r] = true
	e.lat[r], e.outcome[r] = lat, out
	e.ended++
	e.last = e.now
	if e.cfg.Rate == 0 && e.wantMore() {
		e.ag.push(e.now+ThinkTime, evArrive, -1, 0)
	}
}
