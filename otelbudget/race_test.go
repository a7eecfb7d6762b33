//go:build race

package otelbudget_test

// raceEnabled reports that the race detector is on: it slows every request
// about tenfold, so the heaviest tests send fewer.
const raceEnabled = true
