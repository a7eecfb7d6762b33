//go:build !race

package audit_test

// raceSlowdown is 1: the race detector is off.
const raceSlowdown = 1
