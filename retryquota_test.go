package budget_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

var refTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRetryBudgetFloorRatioAndExpiry(t *testing.T) {
	t.Parallel()
	var b budget.RetryQuota // Finagle's defaults: 10 s, 10/s, 20 %
	if got := b.Balance(refTime); got != 100 {
		t.Fatalf("idle balance %d, want the floor 10/s × 10s = 100", got)
	}
	for range 1000 {
		b.Deposit(refTime)
	}
	if got := b.Balance(refTime); got != 300 {
		t.Fatalf("balance after 1000 requests %d, want 100 + 20%% of 1000 = 300", got)
	}
	granted := 0
	for b.Withdraw(refTime.Add(time.Second)) {
		granted++
	}
	if granted != 300 || b.Suppressed() != 1 {
		t.Fatalf("granted %d, suppressed %d; want 300 and 1", granted, b.Suppressed())
	}
	// Deposits and withdrawals stop counting after the TTL.
	if got := b.Balance(refTime.Add(11 * time.Second)); got != 100 {
		t.Fatalf("balance after the TTL %d, want the floor again", got)
	}
}

func TestRetryBudgetConfiguredAndWithoutFloor(t *testing.T) {
	t.Parallel()
	b := budget.RetryQuota{TTL: time.Second, MinPerSecond: -1, Ratio: 0.5}
	if b.Withdraw(refTime) {
		t.Fatal("no floor and no requests: a retry was granted")
	}
	b.Deposit(refTime)
	b.Deposit(refTime)
	if !b.Withdraw(refTime) || b.Withdraw(refTime) {
		t.Fatal("two requests at 50 % must buy exactly one retry")
	}
	b.Deposit(refTime.Add(500 * time.Millisecond))
	b.Deposit(refTime.Add(500 * time.Millisecond))
	if got := b.Balance(refTime.Add(1400 * time.Millisecond)); got != 1 {
		t.Fatalf("balance %d: the first second's deposits and withdrawal must have expired, the later ones not", got)
	}
	none := budget.RetryQuota{MinPerSecond: -1, Ratio: -1}
	none.Deposit(refTime)
	if none.Balance(refTime) != 0 {
		t.Fatal("a negative ratio must deposit nothing")
	}
}

// Concurrent withdrawals never overdraw the balance.
func TestRetryBudgetConcurrentWithdrawalsNeverOverdraw(t *testing.T) {
	t.Parallel()
	b := &budget.RetryQuota{MinPerSecond: -1}
	for range 500 {
		b.Deposit(refTime) // 100 retries
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				if b.Withdraw(refTime) {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if g := granted.Load(); g > 100 || g < 90 {
		t.Fatalf("granted %d retries from a balance of 100", g)
	}
	if b.Balance(refTime) != int(100-granted.Load()) {
		t.Fatalf("balance %d after %d withdrawals", b.Balance(refTime), granted.Load())
	}
}

// Under a sustained outage the retry budget caps retries at about 20 % of
// requests (plus the floor), where the policy alone would triple the load.
func TestRetryBudgetCapsRetriesUnderSustainedOutage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		floor  float64
		lo, hi float64
	}{
		{"no floor", -1, 0.195, 0.205},
		{"default floor", 0, 0.20, 0.215}, // 20 % plus 10/s on 1000 requests/s
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				rb := &budget.RetryQuota{MinPerSecond: tc.floor}
				rec := &recorder{}
				// Throttling off: this measures the quota alone.
				op := &budget.Op{Name: "dep", Observer: rec, Throttle: -1}
				r := &budget.Retry{Quota: rb, Backoff: -1, MaxAttempts: 3}
				errDown := errors.New("down")
				var attempts, requests int
				for range 200 { // 20 s (two windows) at 1000 requests/s, all failing
					for range 100 {
						requests++
						_ = r.Do(context.Background(), op, func(context.Context) error { attempts++; return errDown })
					}
					time.Sleep(100 * time.Millisecond)
				}
				ratio := float64(attempts-requests) / float64(requests)
				if ratio < tc.lo || ratio > tc.hi {
					t.Fatalf("retries were %.3f of requests, want within [%.3f, %.3f]", ratio, tc.lo, tc.hi)
				}
				if got := int64(len(rec.of(budget.EventRefuse))); got != rb.Suppressed() || got == 0 {
					t.Fatalf("%d suppressed events, counter %d", got, rb.Suppressed())
				}
			})
		})
	}
}
