package format

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Ratio returns n/of, or zero when of is zero.
func Ratio(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// Millis converts d to milliseconds, rounded to 0.1 ms for the reports.
func Millis(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*10) / 10
}

// Round3 rounds a ratio to three decimals for the reports.
func Round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// Ms formats milliseconds for a person: 0.5ms, 12ms, 1.50s, 295s.
func Ms(v float64) string {
	switch {
	case v >= 10_000:
		return fmt.Sprintf("%.0fs", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fms", v)
}

// Pct formats a ratio as a whole percentage.
func Pct(r float64) string { return fmt.Sprintf("%.0f%%", 100*r) }

// Counts renders a map of counts, largest first, such as "cache 97, exact 23".
func Counts(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// Duration converts milliseconds, as the report holds them, back to a
// duration for printing.
func Duration(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
