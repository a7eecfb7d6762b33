//go:build !race

package main

// raceSlowdown is 1: the race detector is off.
const raceSlowdown = 1
