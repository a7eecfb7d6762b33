//go:build !race

package sdktest_test

// raceEnabled reports that the race detector is on: it slows every request
// about tenfold, so the heaviest tests send fewer.
const raceEnabled = false
