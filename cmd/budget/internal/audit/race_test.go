//go:build race

package audit_test

// raceSlowdown is how much slower the race detector makes the code under
// test, to scale wall-clock bounds by: 5 to 10 times, by its documentation.
const raceSlowdown = 10
