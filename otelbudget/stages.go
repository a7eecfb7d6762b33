package otelbudget

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/timebudget/budget"
)

// Attribute keys of the metrics. They are the only keys the observer ever
// sets, and every value comes from a closed list (an outcome, a reason, an
// event kind) or from the bounded set of stage names.
const (
	keyStage   = "stage"
	keyEvent   = "event"
	keyOutcome = "outcome"
	keyReason  = "reason"
)

// outcomeSlots bounds the outcomes that get attribute sets of their own;
// an outcome past it (none exists today) shares the last slot.
const outcomeSlots = 16

// Refusal reasons beyond the outcomes: deadline headers that were ignored.
const (
	reasonSkew      = outcomeSlots
	reasonMalformed = outcomeSlots + 1
	reasonSlots     = outcomeSlots + 2
)

// Remaining-time samples are taken at these events.
const (
	atArrival = iota
	atAttempt
	atFallback
	atSlots
)

var atNames = [atSlots]string{atArrival: "arrival", atAttempt: "attempt", atFallback: "fallback"}

func outcomeSlot(o budget.Outcome) int { return min(int(o), outcomeSlots-1) }

func reasonName(i int) string {
	switch i {
	case reasonSkew:
		return "skew"
	case reasonMalformed:
		return "malformed"
	}
	return budget.Outcome(i).String()
}

// measureOpts holds one attribute set as the options the instruments take,
// built once so that a measurement allocates nothing on our side.
type measureOpts struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

// slot builds its attribute set on first use and keeps it.
type slot struct{ p atomic.Pointer[measureOpts] }

// opts returns the options for {stage, key=value}; an empty key gives
// {stage} alone.
func (s *slot) opts(stage, key, value string) *measureOpts {
	if m := s.p.Load(); m != nil {
		return m
	}
	kv := []attribute.KeyValue{attribute.String(keyStage, stage)}
	if key != "" {
		kv = append(kv, attribute.String(key, value))
	}
	opt := metric.WithAttributeSet(attribute.NewSet(kv...))
	s.p.CompareAndSwap(nil, &measureOpts{add: []metric.AddOption{opt}, rec: []metric.RecordOption{opt}})
	return s.p.Load()
}

// stageSet holds the attribute sets of one stage value.
type stageSet struct {
	name      string
	plain     slot
	remaining [atSlots]slot
	used      [outcomeSlots]slot
	wait      [outcomeSlots]slot
	drops     [outcomeSlots]slot
	refusals  [reasonSlots]slot
	balance   [2]slot // eject, recover
}

func (s *stageSet) stage() *measureOpts { return s.plain.opts(s.name, "", "") }

// balanceBy returns the options of a balancer's ejection (k is
// budget.EventEject) or recovery (budget.EventRecover) of a replica.
func (s *stageSet) balanceBy(k budget.EventKind) *measureOpts {
	if k == budget.EventEject {
		return s.balance[0].opts(s.name, keyEvent, k.String())
	}
	return s.balance[1].opts(s.name, keyEvent, budget.EventRecover.String())
}

func (s *stageSet) at(i int) *measureOpts { return s.remaining[i].opts(s.name, keyEvent, atNames[i]) }

func (s *stageSet) usedBy(o budget.Outcome) *measureOpts {
	i := outcomeSlot(o)
	return s.used[i].opts(s.name, keyOutcome, budget.Outcome(i).String())
}

func (s *stageSet) waitBy(o budget.Outcome) *measureOpts {
	i := outcomeSlot(o)
	return s.wait[i].opts(s.name, keyOutcome, budget.Outcome(i).String())
}

func (s *stageSet) dropBy(o budget.Outcome) *measureOpts {
	i := outcomeSlot(o)
	return s.drops[i].opts(s.name, keyReason, budget.Outcome(i).String())
}

func (s *stageSet) refusal(i int) *measureOpts {
	return s.refusals[i].opts(s.name, keyReason, reasonName(i))
}

// stages maps stage names to their attribute sets, admitting the first limit
// names and sending every later one to other. Lookups of known names take no
// lock and allocate nothing; a name past the limit costs one map miss and
// one atomic load.
//
// A quarter of the limit is held for the names of work the code runs
// (attempts, fallbacks, hedges, queues, detached work: Op and queue names,
// always chosen in code). Names first seen on the events of a boundary
// (arrivals, refusals, ignored headers), where an adapter may name the stage
// after what a caller sent (a host, an unregistered method), cannot take
// that room, so however many of them come, an Op's name is still reported
// as itself.
type stages struct {
	limit    int
	reserve  int         // of limit, for names first seen on work events
	known    sync.Map    // string -> *stageSet
	full     atomic.Bool // every slot taken
	edgeFull atomic.Bool // every slot but the reserve taken
	other    stageSet

	mu sync.Mutex // serializes admitting a new name
	n  int
}

func newStages(limit int) *stages {
	return &stages{limit: limit, reserve: limit / 4, other: stageSet{name: OtherStage}}
}

// get returns the attribute sets of name, first seen on a work event when
// work is set.
func (s *stages) get(name string, work bool) *stageSet {
	if v, ok := s.known.Load(name); ok {
		return v.(*stageSet)
	}
	if s.full.Load() || !work && s.edgeFull.Load() {
		return &s.other
	}
	return s.admit(name, work)
}

func (s *stages) admit(name string, work bool) *stageSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.known.Load(name); ok {
		return v.(*stageSet)
	}
	if s.n >= s.limit {
		s.full.Store(true)
		return &s.other
	}
	if !work && s.n >= s.limit-s.reserve {
		s.edgeFull.Store(true)
		return &s.other
	}
	set := &stageSet{name: name}
	s.known.Store(name, set)
	s.n++
	return set
}
