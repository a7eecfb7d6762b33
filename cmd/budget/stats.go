package main

import (
	"math"
	"time"
)

// ratio returns n/of, or zero when of is zero.
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
