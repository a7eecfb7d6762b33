package budget_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

var classes = []budget.Criticality{budget.Sheddable, budget.DefaultCriticality, budget.Critical}

func TestParseCriticality(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want budget.Criticality
		ok   bool
	}{
		{"critical", budget.Critical, true},
		{"CRITICAL", budget.Critical, true},
		{"Sheddable", budget.Sheddable, true},
		{"dEfAuLt", budget.DefaultCriticality, true},
		{"", budget.DefaultCriticality, false},
		{" critical", budget.DefaultCriticality, false},
		{"critical\n", budget.DefaultCriticality, false},
		{"critica\x00", budget.DefaultCriticality, false},
		{"\u212aritical", budget.DefaultCriticality, false}, // a Kelvin sign is not a k
		{"critical_plus", budget.DefaultCriticality, false},
		{"1", budget.DefaultCriticality, false},
		{strings.Repeat("critical", 1<<17), budget.DefaultCriticality, false},
	} {
		got, err := budget.ParseCriticality(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseCriticality(%.20q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && (len(err.Error()) > 160 || strings.ContainsAny(err.Error(), "\n\x00")) {
			t.Errorf("ParseCriticality(%.20q): error %q is long or holds control characters", tc.in, err)
		}
	}
	for _, c := range classes {
		if got, err := budget.ParseCriticality(c.String()); got != c || err != nil {
			t.Errorf("ParseCriticality(%q) = %v, %v", c.String(), got, err)
		}
	}
	if s := budget.Criticality(7).String(); s != "criticality(7)" {
		t.Errorf("Criticality(7).String() = %q", s)
	}
}

func TestCriticalityOnTheContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if c := budget.CriticalityFrom(ctx); c != budget.DefaultCriticality {
		t.Fatalf("unset: %v", c)
	}
	if budget.WithCriticality(ctx, budget.DefaultCriticality) != ctx {
		t.Error("WithCriticality with the class already carried made a new context")
	}
	crit := budget.WithCriticality(ctx, budget.Critical)
	if c := budget.CriticalityFrom(crit); c != budget.Critical {
		t.Errorf("WithCriticality(Critical): %v", c)
	}
	if c := budget.CriticalityFrom(budget.WithCriticality(crit, 100)); c != budget.Critical {
		t.Errorf("an out-of-range class is clamped: got %v", c)
	}
	if c := budget.CriticalityFrom(budget.WithCriticality(crit, -100)); c != budget.Sheddable {
		t.Errorf("an out-of-range class is clamped: got %v", c)
	}
	// A budget keeps its parent's class, and Config.Criticality sets one.
	bctx, cancel := budget.Start(crit, time.Second)
	defer cancel()
	if c := budget.CriticalityFrom(bctx); c != budget.Critical {
		t.Errorf("a budget under a critical context: %v", c)
	}
	sctx, cancel2 := budget.Config{Criticality: budget.Sheddable}.Start(crit, time.Second)
	defer cancel2()
	if c := budget.CriticalityFrom(sctx); c != budget.Sheddable {
		t.Errorf("Config.Criticality: %v", c)
	}
	if c := budget.CriticalityFrom(budget.WithReserve(sctx, time.Millisecond)); c != budget.Sheddable {
		t.Errorf("WithReserve lost the class: %v", c)
	}
}

func TestCriticalityFromDoesNotAllocate(t *testing.T) {
	ctx, cancel := budget.Config{Criticality: budget.Critical}.Start(context.Background(), time.Hour)
	defer cancel()
	ctx = budget.WithReserve(ctx, time.Millisecond)
	var c budget.Criticality
	if n := testing.AllocsPerRun(1000, func() { c = budget.CriticalityFrom(ctx) }); n != 0 {
		t.Errorf("CriticalityFrom allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { c, _ = budget.ParseCriticality("Sheddable") }); n != 0 {
		t.Errorf("ParseCriticality allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = budget.WithCriticality(ctx, budget.Critical) }); n != 0 {
		t.Errorf("WithCriticality with the class already carried allocates %v times", n)
	}
	_ = c
}

// An op that knows its dependency answers in 10 to 100 ms: for each time
// available, whatever admits a lower class admits every higher one, and
// there are times that admit default work but not sheddable, and critical
// work but not default.
func TestOpClassesAreOrdered(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	op := &budget.Op{Name: "dep", ProbeEvery: -1, Throttle: -1}
	for i := range 91 {
		op.Estimator.RecordAt(base, time.Duration(10+i)*time.Millisecond)
	}
	var shedOnly, defaultOnly bool
	for ms := 1; ms <= 150; ms++ {
		avail := time.Duration(ms) * time.Millisecond
		var admit [3]bool
		for i, c := range classes {
			dec := op.BeginAt(base, budget.Ask{Available: avail, Criticality: c})
			admit[i] = dec.Admit
			if dec.Admit {
				op.EndAt(base, base, budget.OutcomeCanceled, false) // says nothing of latency
			}
			if dec.Criticality != c {
				t.Fatalf("admission judged %v as %v", c, dec.Criticality)
			}
		}
		if (admit[0] && !admit[1]) || (admit[1] && !admit[2]) {
			t.Fatalf("%v available: sheddable, default, critical admitted %v: a lower class went where a higher one did not", avail, admit)
		}
		shedOnly = shedOnly || (!admit[0] && admit[1])
		defaultOnly = defaultOnly || (!admit[1] && admit[2])
	}
	if !shedOnly || !defaultOnly {
		t.Errorf("no time refused sheddable work alone (%v) or default work alone (%v)", shedOnly, defaultOnly)
	}
	// At 60 ms a default call is more likely than not to finish, a
	// sheddable one needs 3 in 4; at 25 ms (a 1 in 6 chance) only a
	// critical one goes.
	for _, tc := range []struct {
		avail time.Duration
		want  [3]bool
	}{{60 * time.Millisecond, [3]bool{false, true, true}}, {25 * time.Millisecond, [3]bool{false, false, true}}, {5 * time.Millisecond, [3]bool{}}} {
		for i, c := range classes {
			dec := op.BeginAt(base, budget.Ask{Available: tc.avail, Criticality: c})
			if dec.Admit {
				op.EndAt(base, base, budget.OutcomeCanceled, false)
			}
			if dec.Admit != tc.want[i] {
				t.Errorf("%v with %v available: admitted %v (p=%.2f), want %v", c, tc.avail, dec.Admit, dec.Probability, tc.want[i])
			}
			if i == 0 && !dec.Admit && tc.want[1] && !dec.Shed {
				t.Errorf("a sheddable call refused where a default one goes is not marked shed")
			}
		}
	}
}

// Limit's shares: sheddable work gets half of it, default work all but a
// quarter, critical work all of it; a slot frees when its attempt ends.
func TestOpLimitSharesByClass(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	op := &budget.Op{Name: "dep", Limit: 8}
	begin := func(c budget.Criticality) budget.Admission {
		return op.BeginAt(now, budget.Ask{Available: time.Second, Criticality: c})
	}
	for i := range 4 {
		if !begin(budget.Sheddable).Admit {
			t.Fatalf("sheddable attempt %d refused under half of Limit", i+1)
		}
	}
	if dec := begin(budget.Sheddable); dec.Admit || !dec.Shed {
		t.Fatalf("a fifth sheddable attempt with 4 of 8 in flight: %+v", dec)
	}
	for range 2 {
		if !begin(budget.DefaultCriticality).Admit {
			t.Fatal("default attempt refused below Limit − Limit/4")
		}
	}
	if dec := begin(budget.DefaultCriticality); dec.Admit || !dec.Shed {
		t.Fatalf("a default attempt with 6 of 8 in flight: %+v", dec)
	}
	for range 2 {
		if !begin(budget.Critical).Admit {
			t.Fatal("critical attempt refused below Limit")
		}
	}
	if dec := begin(budget.Critical); dec.Admit || !dec.Shed {
		t.Fatalf("a critical attempt with 8 of 8 in flight: %+v", dec)
	}
	op.EndAt(now, now.Add(time.Millisecond), budget.OutcomeOK, false)
	if !begin(budget.Critical).Admit {
		t.Fatal("a slot did not free when an attempt ended")
	}
}

// Op.Do reads the class from the context; a refusal for the class is shed,
// matches ErrInsufficient, and the function does not run. A function that
// panics gives its slot back.
func TestOpDoShedsByContextClass(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		op := &budget.Op{Name: "dep", Limit: 4}
		ctx, cancel := budget.Start(context.Background(), time.Second)
		defer cancel()
		release := make(chan struct{})
		block := func(ctx context.Context) error { <-release; return nil }
		done := make(chan error, 8)
		for _, c := range []budget.Criticality{budget.Sheddable, budget.Sheddable, budget.DefaultCriticality} {
			go func() { done <- op.Do(budget.WithCriticality(ctx, c), block) }()
			synctest.Wait()
		}
		ran := false
		for _, c := range []budget.Criticality{budget.Sheddable, budget.DefaultCriticality} {
			err := op.Do(budget.WithCriticality(ctx, c), func(context.Context) error { ran = true; return nil })
			var be *budget.Error
			if !errors.As(err, &be) || be.Outcome != budget.OutcomeShed || !errors.Is(err, budget.ErrInsufficient) ||
				err.Error() != "budget: dep not started: shed under load for its criticality" {
				t.Errorf("%v with 3 of 4 in flight: %v, want shed", c, err)
			}
		}
		if ran {
			t.Error("a shed attempt ran")
		}
		func() {
			defer func() { _ = recover() }()
			_ = op.Do(budget.WithCriticality(ctx, budget.Critical), func(context.Context) error { panic("boom") })
		}()
		go func() { done <- op.Do(budget.WithCriticality(ctx, budget.Critical), block) }()
		synctest.Wait()
		if err := op.Do(budget.WithCriticality(ctx, budget.Critical), block); !errors.Is(err, budget.ErrInsufficient) {
			t.Errorf("a critical attempt at Limit: %v", err)
		}
		close(release)
		for range 4 {
			if err := <-done; err != nil {
				t.Errorf("an admitted attempt: %v", err)
			}
		}
	})
}

// A simulated shortage on virtual time: a dependency with 16 workers, each
// request taking 15 to 25 ms of work in FIFO order, is offered three times
// what it can serve, 20 % critical, 50 % default and 30 % sheddable, each
// with 300 ms. The op in front (Limit 64, four times the workers) refuses
// sheddable work before default work and default work before critical work;
// no admitted request misses its deadline, critical work is all served, and
// the workers stay busy. The run is the same on every machine: virtual time
// and seeded draws.
func TestOpShortageRefusesLowerClassesFirst(t *testing.T) {
	t.Parallel()
	offered, admitted, inBudget, served, capacity := simulateShortage(3)
	share := func(i int) float64 { return float64(inBudget[i]) / float64(offered[i]) }
	t.Logf("in budget: sheddable %.3f, default %.3f, critical %.3f; %d served, %.2f of capacity",
		share(0), share(1), share(2), served, float64(served)/capacity)
	for i := range classes {
		if admitted[i] != inBudget[i] {
			t.Errorf("%v: %d admitted, %d in budget", classes[i], admitted[i], inBudget[i])
		}
	}
	if !(share(0) < share(1) && share(1) < share(2)) || share(2) < 0.99 {
		t.Errorf("shares in budget not ordered by class, or critical under 0.99: %.3f, %.3f, %.3f", share(0), share(1), share(2))
	}
	if float64(served) < 0.95*capacity {
		t.Errorf("served %d, under 0.95 of the %.0f the workers could", served, capacity)
	}
}

// The same dependency offered 0.8 of what it can serve: the op refuses
// nothing, and everything is served in time.
func TestOpNoShortageRefusesNothing(t *testing.T) {
	t.Parallel()
	offered, admitted, inBudget, _, _ := simulateShortage(0.8)
	if offered != admitted || admitted != inBudget {
		t.Errorf("offered %v, admitted %v, in budget %v", offered, admitted, inBudget)
	}
}

// simulateShortage runs the simulation of TestOpShortageRefusesLowerClassesFirst
// at load times the dependency's capacity, and returns per class (sheddable,
// default, critical) the requests offered, admitted and served in budget, then
// the total served in budget and what the workers could serve in the run.
func simulateShortage(load float64) (offered, admitted, inBudget [3]int, served int, capacity float64) {
	const (
		workers = 16
		work    = 20 * time.Millisecond
		budgetT = 300 * time.Millisecond
		n       = 30000
	)
	rng := rand.New(rand.NewPCG(22, 1))
	op := &budget.Op{Name: "backend", Limit: 4 * workers, Rand: rand.NewPCG(22, 2)}
	rate := load * workers / work.Seconds() // requests a second
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	type running struct{ start, end time.Time }
	var inFlight []running // admitted and not ended, sorted by end
	free := make([]time.Time, workers)
	for i := range free {
		free[i] = start
	}
	for range n {
		now = now.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		for len(inFlight) > 0 && !inFlight[0].end.After(now) {
			op.EndAt(inFlight[0].start, inFlight[0].end, budget.OutcomeOK, false)
			inFlight = inFlight[1:]
		}
		i := 1
		switch p := rng.Float64(); {
		case p < 0.2:
			i = 2
		case p < 0.5:
			i = 0
		}
		offered[i]++
		if !op.BeginAt(now, budget.Ask{Available: budgetT, Criticality: classes[i]}).Admit {
			continue
		}
		admitted[i]++
		w := slices.IndexFunc(free, func(t time.Time) bool { return t.Equal(slices.MinFunc(free, time.Time.Compare)) })
		begin := now
		if free[w].After(now) {
			begin = free[w] // waits for the first worker to free up
		}
		end := begin.Add(work/2 + time.Duration(rng.Int64N(int64(work))))
		free[w] = end
		if end.Sub(now) <= budgetT {
			inBudget[i]++
		}
		at, _ := slices.BinarySearchFunc(inFlight, end, func(r running, t time.Time) int { return r.end.Compare(t) })
		inFlight = slices.Insert(inFlight, at, running{now, end})
	}
	served = inBudget[0] + inBudget[1] + inBudget[2]
	capacity = now.Sub(start).Seconds() * workers / work.Seconds()
	return offered, admitted, inBudget, served, capacity
}

func BenchmarkCriticalityFrom(b *testing.B) {
	ctx, cancel := budget.Config{Criticality: budget.Critical}.Start(context.Background(), time.Hour)
	defer cancel()
	ctx = budget.WithReserve(ctx, time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		if budget.CriticalityFrom(ctx) != budget.Critical {
			b.Fatal("wrong class")
		}
	}
}

func BenchmarkParseCriticality(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if c, err := budget.ParseCriticality("Sheddable"); c != budget.Sheddable || err != nil {
			b.Fatal(c, err)
		}
	}
}
