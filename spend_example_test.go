package budget_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/timebudget/budget"
)

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
