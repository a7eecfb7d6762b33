//go:build !unix

package httpbudget_test

import "time"

// cpuTime cannot read the process's CPU time here.
func cpuTime() (time.Duration, bool) { return 0, false }
