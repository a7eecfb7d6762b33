package budget_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/timebudget/budget"
)

func TestRead(t *testing.T) {
	t.Parallel()
	started, cancel := budget.Config{Stage: "checkout"}.Start(context.Background(), time.Hour)
	defer cancel()
	plain, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		ok      bool
		stage   string
		reserve time.Duration
	}{
		{"no deadline", context.Background(), false, "", 0},
		{"a deadline without a budget", plain, true, "", 0},
		{"a budget", started, true, "checkout", 0},
		{"a budget with a reserve", budget.WithReserve(started, time.Minute), true, "checkout", time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, ok := budget.Read(tc.ctx)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				if r != (budget.Reading{}) {
					t.Errorf("reading without a deadline = %+v, want zero", r)
				}
				return
			}
			dl, _ := tc.ctx.Deadline()
			if !r.Deadline.Equal(dl) || r.Deadline.Sub(r.Now) != r.Remaining {
				t.Errorf("deadline %v, now %v, remaining %v: not one instant's figures (context's deadline %v)", r.Deadline, r.Now, r.Remaining, dl)
			}
			if r.Remaining <= 0 || r.Remaining > time.Hour {
				t.Errorf("Remaining = %v, want within the hour", r.Remaining)
			}
			if r.Stage != tc.stage || r.Reserve != tc.reserve || r.Available != r.Remaining-tc.reserve {
				t.Errorf("stage %q, reserve %v, available %v; want %q, %v, remaining less the reserve", r.Stage, r.Reserve, r.Available, tc.stage, tc.reserve)
			}
		})
	}
}

func TestReadAttempt(t *testing.T) {
	t.Parallel()
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	var got []int
	_, _ = budget.RetryCall(ctx, &budget.Retry{MaxAttempts: 2, Backoff: -1}, &budget.Op{Name: "dependency"}, func(ctx context.Context) (int, error) {
		r, _ := budget.Read(ctx)
		got = append(got, r.Attempt)
		return 0, errors.New("transient")
	})
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("attempt numbers read %v, want [1 2]", got)
	}
}

func TestReadAllocs(t *testing.T) {
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	ctx = budget.WithReserve(ctx, time.Second)
	if n := testing.AllocsPerRun(100, func() { _, _ = budget.Read(ctx) }); n != 0 {
		t.Errorf("Read allocates %v times, want 0", n)
	}
}

func BenchmarkRead(b *testing.B) {
	b.ReportAllocs()
	ctx, cancel := budget.Start(context.Background(), time.Hour)
	defer cancel()
	ctx = budget.WithReserve(ctx, time.Second)
	for b.Loop() {
		_, _ = budget.Read(ctx)
	}
}

func ExampleRead() {
	ctx, cancel := budget.Config{Stage: "checkout"}.Start(context.Background(), 2*time.Second)
	defer cancel()
	ctx = budget.WithReserve(ctx, 500*time.Millisecond)
	r, ok := budget.Read(ctx)
	fmt.Println(ok, r.Stage, r.Reserve, r.Available < 1500*time.Millisecond)
	// Output: true checkout 500ms true
}
