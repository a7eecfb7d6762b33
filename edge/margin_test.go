package edge_test

import (
	"testing"
	"time"

	"github.com/timebudget/budget/edge"
)

func TestFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		fixed   time.Duration
		samples []time.Duration
		left    time.Duration
		want    time.Duration
	}{
		{"adaptive, nothing seen: the floor", 0, nil, time.Second, edge.MarginFloor},
		{"adaptive, bounded by the share", 0, nil, 8 * ms, 800 * time.Microsecond},
		{"adaptive, follows lateness up", 0, []time.Duration{4 * ms}, time.Second, edge.MarginFloor + 4*ms},
		{"adaptive, capped", 0, []time.Duration{time.Minute, time.Minute, time.Minute, time.Minute}, time.Second, edge.MarginCap},
		{"adaptive, capped by the share", 0, []time.Duration{40 * ms, 40 * ms}, 100 * ms, 100 * ms / edge.MarginShare},
		{"adaptive, falls slowly", 0, []time.Duration{4 * ms, 0}, time.Second, edge.MarginFloor + 4*(ms-ms/32)},
		{"fixed", 3 * ms, []time.Duration{time.Minute}, time.Second, 3 * ms},
		{"fixed, bounded by the share", 3 * ms, nil, 20 * ms, 2 * ms},
		{"off", -1, []time.Duration{time.Minute}, time.Second, 0},
		{"nothing left", 0, nil, -ms, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := edge.NewMarginKeeper(tc.fixed)
			for _, s := range tc.samples {
				k.Observe(s)
			}
			if got := k.For(tc.left); got != tc.want {
				t.Errorf("For(%v) = %v, want %v", tc.left, got, tc.want)
			}
		})
	}
}

func TestNilKeeper(t *testing.T) {
	t.Parallel()
	var k *edge.MarginKeeper
	k.Observe(ms)
	if got := k.For(time.Second); got != 0 {
		t.Errorf("nil Keeper: %v, want 0", got)
	}
}

func BenchmarkFor(b *testing.B) {
	b.ReportAllocs()
	k := edge.NewMarginKeeper(0)
	for b.Loop() {
		k.Observe(ms)
		_ = k.For(100 * ms)
	}
}

func TestObserveTransit(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_700_000_000_000)
	cases := []struct {
		name     string
		rel, abs string
		want     time.Duration // the margin after 64 samples, nothing late
	}{
		{"5 ms on the way", "100", "1700000000095", edge.MarginFloor + 5*ms - ms/8},
		{"no transit", "100", "1700000000100", edge.MarginFloor},
		{"clocks disagree", "100", "1699999999000", edge.MarginFloor},
		{"malformed", "x", "1700000000100", edge.MarginFloor},
		{"absent", "100", "", edge.MarginFloor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := edge.NewMarginKeeper(0)
			for range 64 {
				k.ObserveTransit(now, tc.rel, tc.abs)
			}
			if got := k.For(time.Second); got < tc.want || got > tc.want+ms/8 {
				t.Errorf("margin %v, want about %v", got, tc.want)
			}
		})
	}
}
