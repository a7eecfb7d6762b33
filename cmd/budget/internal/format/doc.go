// Package format writes numbers and durations for a person, once for every
// report of the command: milliseconds as 0.5ms, 12ms, 1.50s or 295s, ratios as
// whole percentages, counts largest first. The demo's table and page and the
// simulator's report all format through it, so one figure reads the same
// everywhere.
package format
