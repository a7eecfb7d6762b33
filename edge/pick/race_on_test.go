//go:build race

package pick

// raceEnabled: the race detector slows the simulations about twentyfold.
const raceEnabled = true
