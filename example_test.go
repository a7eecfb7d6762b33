package budget_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/timebudget/budget"
)

// A request gets one budget at the edge; everything below reads what is left.
func ExampleStart() {
	ctx, cancel := budget.Start(context.Background(), 3*time.Second)
	defer cancel()

	// Hold back time to write the response.
	ctx = budget.WithReserve(ctx, 500*time.Millisecond)

	left, _ := budget.Remaining(ctx)
	avail, _ := budget.Available(ctx)
	fmt.Println("remaining:", left.Round(100*time.Millisecond))
	fmt.Println("available for work:", avail.Round(100*time.Millisecond))
	// Output:
	// remaining: 3s
	// available for work: 2.5s
}

// An Op refuses a call that cannot finish in the time left, before it starts,
// so a cheaper fallback can answer instead.
func ExampleOp_Do() {
	geometry := &budget.Op{Name: "geometry", Prior: time.Second}

	ctx, cancel := budget.Start(context.Background(), 200*time.Millisecond)
	defer cancel()

	err := geometry.Do(ctx, func(ctx context.Context) error {
		fmt.Println("never printed: 200ms cannot fit a call that needs 1s")
		return nil
	})
	fmt.Println(err)
	fmt.Println("refused before starting:", errors.Is(err, budget.ErrInsufficient))
	fmt.Println("an expiry:", errors.Is(err, context.DeadlineExceeded))
	// Output:
	// budget: geometry not started: too little time left
	// refused before starting: true
	// an expiry: false
}

// The ledger says where a request's budget went.
func ExampleLedger() {
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()

	resolve := &budget.Op{Name: "resolve"}
	geometry := &budget.Op{Name: "geometry", Prior: 5 * time.Second}
	_ = resolve.Do(ctx, func(context.Context) error { return nil })
	_ = geometry.Do(ctx, func(context.Context) error { return nil })

	for _, ev := range budget.LedgerFrom(ctx).Events() {
		line := ev.Kind.String() + " " + ev.Stage
		if ev.Outcome != budget.OutcomeNone {
			line += " " + ev.Outcome.String()
		}
		fmt.Println(line)
	}
	// Output:
	// arrival request
	// attempt resolve ok
	// refuse geometry insufficient
}

func ExampleRetry_Do() {
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	inventory := &budget.Op{Name: "inventory", Cap: 200 * time.Millisecond}
	r := &budget.Retry{Backoff: time.Millisecond}
	err := r.Do(ctx, inventory, func(ctx context.Context) error {
		n := budget.AttemptNumber(ctx) // what the wire layer tells the server
		fmt.Println("attempt", n)
		if n < 3 {
			return errors.New("inventory unavailable")
		}
		return nil
	})
	fmt.Println("err:", err)

	// The server asks for a 2 s pause that does not fit in what is left: the
	// loop stops at once instead of sleeping past the deadline, and keeps the
	// server's error.
	err = r.Do(ctx, inventory, func(ctx context.Context) error {
		return budget.RetryAfter(errors.New("503 busy"), 2*time.Second)
	})
	fmt.Println(errors.Is(err, budget.ErrInsufficient))
	fmt.Println(err)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// err: <nil>
	// true
	// budget: inventory not started: too little time left: 503 busy
}

func ExampleLadder_Do() {
	ctx, cancel := budget.Start(context.Background(), 500*time.Millisecond)
	defer cancel()
	ladder := budget.Ladder[string]{Rungs: []budget.Rung[string]{
		// Exact geometry typically needs 2 s: it cannot finish in 500 ms.
		{Op: &budget.Op{Name: "geometry", Prior: 2 * time.Second, ProbeEvery: -1},
			Fn: func(ctx context.Context) (string, error) { return "exact boundary", nil }},
		// The cached boundary needs about 5 ms.
		{Op: &budget.Op{Name: "cache", Prior: 5 * time.Millisecond},
			Fn: func(ctx context.Context) (string, error) { return "cached boundary", nil }},
	}}
	answer, res, err := ladder.Do(ctx)
	fmt.Println(answer, err)
	for _, r := range res.Rungs {
		fmt.Printf("%s: %s\n", r.Name, r.Outcome)
	}
	// Output:
	// cached boundary <nil>
	// geometry: insufficient
	// cache: ok
}

func ExampleGather_Do() {
	ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
	defer cancel()
	page := budget.Gather[string]{
		Reserve: 50 * time.Millisecond, // to render the page
		Branches: []budget.Branch[string]{
			{Name: "profile", Fn: func(ctx context.Context) (string, error) { return "alice", nil }},
			{Name: "recommendations", Optional: true, Fn: func(ctx context.Context) (string, error) {
				return "3 books", nil
			}},
			{Name: "ads", Optional: true, Fn: func(ctx context.Context) (string, error) {
				<-ctx.Done() // the ad server hangs
				return "", ctx.Err()
			}},
		},
	}
	res, err := page.Do(ctx)
	fmt.Println("err:", err, "incomplete:", res.Incomplete, "stragglers:", res.Stragglers)
	for _, b := range res.Branches {
		fmt.Printf("%s: %s %q\n", b.Name, b.Outcome, b.Value)
	}
	// Output:
	// err: <nil> incomplete: true stragglers: 1
	// profile: ok "alice"
	// recommendations: ok "3 books"
	// ads: expired ""
}

func ExampleQueue() {
	q := &budget.Queue[string]{Name: "reports"}
	leaving, cancel1 := budget.Start(context.Background(), 20*time.Millisecond)
	defer cancel1()
	waiting, cancel2 := budget.Start(context.Background(), time.Second)
	defer cancel2()
	_ = q.Put(leaving, "report for a caller who will have left")
	_ = q.Put(waiting, "report for a caller still waiting")
	time.Sleep(30 * time.Millisecond) // the consumer is busy

	item, itemCtx, err := q.Get(context.Background())
	fmt.Println(item, err)
	// Do the work in the item's own context: it carries the caller's budget.
	_, ok := itemCtx.Deadline()
	fmt.Println("has the caller's deadline:", ok)
	s := q.Stats()
	fmt.Println("served:", s.Served, "expired:", s.Expired)

	// An item that cannot wait and still leave its consumer the time it
	// needs is refused at once.
	strict := &budget.Queue[string]{Name: "renders", MinUseful: 50 * time.Millisecond}
	short, cancel3 := budget.Start(context.Background(), 10*time.Millisecond)
	defer cancel3()
	fmt.Println(errors.Is(strict.Put(short, "too late already"), budget.ErrInsufficient))
	// Output:
	// report for a caller still waiting <nil>
	// has the caller's deadline: true
	// served: 1 expired: 1
	// true
}

// A hedge starts a second attempt when the first has not answered by the
// op's latency quantile (here a fixed delay, since the op has not measured
// anything yet); the first attempt to succeed wins and the other is canceled.
func ExampleHedge_Do() {
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	search := &budget.Op{Name: "search"}
	h := &budget.Hedge{Delay: 10 * time.Millisecond}
	answer, err := budget.HedgeCall(ctx, h, search, func(ctx context.Context) (string, error) {
		if budget.AttemptNumber(ctx) == 1 {
			<-ctx.Done() // the first replica is stuck
			return "", ctx.Err()
		}
		return "from the hedge", nil
	})
	fmt.Println(answer, err)
	// Output: from the hedge <nil>
}

// A step loop for agent-style work stops with a partial result and a reason
// instead of starting a step it cannot finish.
func ExampleSteps_Run() {
	ctx, cancel := budget.Start(context.Background(), time.Second)
	defer cancel()
	var facts []string // the partial result
	loop := budget.Steps{Stage: "agent", Cap: 200 * time.Millisecond, MinUseful: 50 * time.Millisecond, Max: 5}
	res, err := loop.Run(ctx, func(ctx context.Context, n int) (bool, error) {
		facts = append(facts, fmt.Sprint("fact ", n))
		return n == 3, nil // the model says it is done after three steps
	})
	fmt.Println(res.Steps, res.Outcome, err, facts)
	// Output: 3 ok <nil> [fact 1 fact 2 fact 3]
}

// A Detacher runs work after the answer (an audit record, a cache write)
// with a bound of its own, and lets shutdown wait for it.
func ExampleDetacher() {
	var after budget.Detacher // one per server
	ctx, cancel := budget.Start(context.Background(), 100*time.Millisecond)
	err := after.Go(ctx, "audit", func(ctx context.Context) error {
		<-time.After(10 * time.Millisecond) // ctx is not canceled with the request
		return ctx.Err()
	})
	cancel() // the request is answered and its budget released
	fmt.Println("detached:", err)
	fmt.Println("shutdown:", after.Wait(context.Background()), "failed:", after.Failed())
	// Output:
	// detached: <nil>
	// shutdown: <nil> failed: 0
}

// A RetryQuota caps the retries of a client at a share of its requests. Its
// methods take the time as a parameter, so the arithmetic can be shown
// without waiting.
func ExampleRetryQuota() {
	q := &budget.RetryQuota{Ratio: 0.2, MinPerSecond: -1} // 20 % of requests, no floor
	now := time.Unix(1_700_000_000, 0)
	for range 10 {
		q.Deposit(now) // ten requests
	}
	fmt.Println("retries allowed:", q.Balance(now))
	fmt.Println(q.Withdraw(now), q.Withdraw(now), q.Withdraw(now))
	fmt.Println("suppressed:", q.Suppressed())
	// Output:
	// retries allowed: 2
	// true true false
	// suppressed: 1
}

// WithReserve holds back time for the caller's own work, such as writing the
// response or a last cheap fallback: attempts derived from the context end
// that much before the deadline, while the deadline itself stays.
func ExampleWithReserve() {
	ctx, cancel := budget.Start(context.Background(), 300*time.Millisecond)
	defer cancel()
	ctx = budget.WithReserve(ctx, 50*time.Millisecond)
	avail, _ := budget.Available(ctx)
	rem, _ := budget.Remaining(ctx)
	fmt.Println("reserved:", budget.Reserve(ctx))
	fmt.Println("available:", avail.Round(10*time.Millisecond), "of", rem.Round(10*time.Millisecond))
	// Output:
	// reserved: 50ms
	// available: 250ms of 300ms
}
