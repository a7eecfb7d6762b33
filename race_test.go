//go:build race

package budget_test

func init() { raceEnabled = true }
