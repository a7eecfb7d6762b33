package main

import (
	"math"
	"slices"
	"time"
)

// quantile returns the q-quantile of ds by the nearest-rank method (the
// smallest value at or above which a share q of the values lie), or zero when
// ds is empty. It does not modify ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

func ratio(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// ms converts d to milliseconds, rounded to 0.1 ms for the reports.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*10) / 10
}

// round3 rounds a ratio to three decimals for the reports.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
