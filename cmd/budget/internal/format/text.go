package format

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Ms formats milliseconds for a person: 0.5ms, 12ms, 1.50s, 295s. Three
// significant figures at most: a report compares magnitudes, and a fourth
// digit of a measurement on a shared machine is noise.
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

// Seconds formats seconds as Ms does milliseconds below a second, and as
// 1.5s or 295s above: 0s, 12ms, 2.5s, 1327s.
func Seconds(s float64) string {
	switch {
	case s == 0:
		return "0s"
	case s < 1:
		return Ms(s * 1000)
	case s < 100:
		return fmt.Sprintf("%.1fs", s)
	}
	return fmt.Sprintf("%.0fs", s)
}

// Pct formats a ratio as a whole percentage; a share above zero but below
// one percent is "<1%", so it never reads as none.
func Pct(r float64) string {
	if r > 0 && r < 0.005 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", 100*r)
}

// Counts renders a map of counts, largest first, such as "cache 97, exact
// 23"; "—" when there are none.
func Counts[N int | int64](m map[string]N) string {
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

// OrDash returns s when ok, and "—" (nothing to show) otherwise.
func OrDash(ok bool, s string) string {
	if !ok {
		return "—"
	}
	return s
}
