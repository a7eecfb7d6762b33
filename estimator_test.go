package budget_test

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/timebudget/budget"
)

func TestEstimatorQuantilesWithinFivePercent(t *testing.T) {
	t.Parallel()
	var e budget.Estimator
	now := time.Now()
	// 1000 samples spread log-uniformly from 1µs to 10min.
	var samples []time.Duration
	for i := range 1000 {
		f := float64(i) / 999
		d := time.Duration(math.Exp(math.Log(1e3) + f*(math.Log(6e11)-math.Log(1e3))))
		samples = append(samples, d)
		e.RecordAt(now, d)
	}
	dist := e.Distribution(now)
	if dist.Count() != 1000 {
		t.Fatalf("Count = %d", dist.Count())
	}
	for _, q := range []float64{0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99} {
		want := samples[int(q*999)]
		got, ok := dist.Quantile(q)
		if !ok {
			t.Fatalf("Quantile(%v) not ok", q)
		}
		if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.05 {
			t.Errorf("Quantile(%v) = %v, want %v (relative error %.3f > 5%%)", q, got, want, rel)
		}
	}
	if c := dist.CDF(samples[500]); math.Abs(c-0.5) > 0.01 {
		t.Errorf("CDF(median) = %v, want about 0.5", c)
	}
}

func TestEstimatorFollowsShiftWithinTwoWindows(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := budget.Estimator{Window: time.Second}
		record := func(d time.Duration, span time.Duration) {
			end := time.Now().Add(span)
			for time.Now().Before(end) {
				e.Record(d)
				time.Sleep(10 * time.Millisecond)
			}
		}
		record(50*time.Millisecond, 3*time.Second)
		if m := e.Distribution(time.Now()).Median(); !near(m, 50*time.Millisecond) {
			t.Fatalf("median before the shift = %v, want about 50ms", m)
		}
		record(5*time.Second, 2*time.Second) // the dependency slows down
		if m := e.Distribution(time.Now()).Median(); !near(m, 5*time.Second) {
			t.Fatalf("median two windows after the shift = %v, want about 5s", m)
		}
	})
}

func near(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= 0.05*float64(want)
}

func TestEstimatorCensoredSamplesPushTheEstimateUp(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var plain, cut budget.Estimator
	for range 50 {
		plain.RecordAt(now, 10*time.Millisecond)
		cut.RecordAt(now, 10*time.Millisecond)
	}
	for range 50 {
		// Timed out after 100ms: they took at least that long.
		cut.RecordCensoredAt(now, 100*time.Millisecond)
	}
	if p := plain.Distribution(now).CDF(50 * time.Millisecond); p != 1 {
		t.Fatalf("plain CDF(50ms) = %v, want 1", p)
	}
	dist := cut.Distribution(now)
	if p := dist.CDF(50 * time.Millisecond); math.Abs(p-0.5) > 0.01 {
		t.Fatalf("with half the calls cut off at 100ms, CDF(50ms) = %v, want 0.5", p)
	}
	if dist.Censored() != 50 {
		t.Fatalf("Censored = %d", dist.Censored())
	}
	// Nothing finished past 100ms, so the 0.9 quantile is unknown, and
	// reported as at least the longest bound seen.
	q, ok := dist.Quantile(0.9)
	if ok || q < 100*time.Millisecond {
		t.Fatalf("Quantile(0.9) = %v, %v; want >= 100ms, false", q, ok)
	}
}

func TestEstimatorDropsSamplesOlderThanTwoWindows(t *testing.T) {
	t.Parallel()
	e := budget.Estimator{Window: time.Second}
	now := time.Now()
	e.RecordAt(now, time.Millisecond)
	e.RecordAt(now.Add(-5*time.Second), time.Hour) // too old to count
	for range 10 {
		e.RecordAt(now, time.Millisecond)
	}
	later := now.Add(2500 * time.Millisecond)
	if d := e.Distribution(now); d.Count() != 11 || !near(d.Median(), time.Millisecond) {
		t.Fatalf("Count = %d, median %v: want 11 samples of 1ms (the stale sample is ignored)", d.Count(), d.Median())
	}
	// 2.5 windows later the windows are empty, and the estimate is built
	// from the latest samples: a dependency called rarely is still known.
	if d := e.Distribution(later); d.Count() != 5 {
		t.Fatalf("Count 2.5 windows later = %d, want the latest 5", d.Count())
	}
	e.Reset()
	if n := e.Distribution(now).Count(); n != 0 {
		t.Fatalf("Count after Reset = %d", n)
	}
}

func TestEstimatorEmptyAndExtremes(t *testing.T) {
	t.Parallel()
	var empty, e budget.Estimator
	now := time.Now()
	d := empty.Distribution(now)
	if _, ok := d.Quantile(0.5); ok || d.CDF(time.Second) != 0 {
		t.Fatal("an empty distribution must report nothing")
	}
	for _, v := range []time.Duration{-time.Hour, 0, 1, math.MaxInt64, math.MinInt64} {
		e.RecordAt(now, v)
	}
	d = e.Distribution(now)
	if d.Count() != 5 {
		t.Fatalf("Count = %d, want 5", d.Count())
	}
	if q, _ := d.Quantile(1); q < 0 {
		t.Fatalf("Quantile(1) = %v", q)
	}
	if q, _ := d.Quantile(math.NaN()); q != 0 {
		t.Fatalf("Quantile(NaN) = %v", q)
	}
}

func FuzzEstimator(f *testing.F) {
	f.Add(int64(0), int64(1), int64(-1), false)
	f.Add(int64(math.MaxInt64), int64(math.MinInt64), int64(1e9), true)
	f.Add(int64(1500), int64(3e9), int64(7e11), true)
	f.Fuzz(func(t *testing.T, a, b, c int64, censor bool) {
		var e budget.Estimator
		now := time.Unix(1_700_000_000, 0)
		for i, v := range []int64{a, b, c, a ^ b, b / 3} {
			if censor && i%2 == 1 {
				e.RecordCensoredAt(now, time.Duration(v))
			} else {
				e.RecordAt(now, time.Duration(v))
			}
		}
		d := e.Distribution(now)
		prev := time.Duration(-1)
		prevCDF := -1.0
		for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
			got, _ := d.Quantile(q)
			if got < 0 || got < prev {
				t.Fatalf("quantiles not monotone: Quantile(%v) = %v after %v", q, got, prev)
			}
			prev = got
		}
		for _, x := range []time.Duration{0, time.Microsecond, time.Millisecond, time.Second, time.Hour, math.MaxInt64} {
			p := d.CDF(x)
			if p < 0 || p > 1 || p < prevCDF-1e-12 {
				t.Fatalf("CDF(%v) = %v after %v", x, p, prevCDF)
			}
			prevCDF = p
		}
	})
}
