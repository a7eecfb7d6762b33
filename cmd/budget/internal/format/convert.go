package format

import (
	"math"
	"time"
)

// Ratio returns n/of, or zero when of is zero.
func Ratio(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// Millis converts d to milliseconds, rounded to 0.1 ms, as the reports
// hold times.
func Millis(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*10) / 10
}

// Round3 rounds a ratio to three decimals for the reports.
func Round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// Duration converts milliseconds, as the reports hold them, back to a
// duration for printing.
func Duration(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
