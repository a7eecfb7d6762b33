//go:build !race

package pgxbudget_test

// raceEnabled reports that the race detector is on: sync.Pool drops what it
// holds at random then, so allocation counts are not those of a normal build.
const raceEnabled = false
