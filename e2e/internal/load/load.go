// Package load holds what the load commands of e2e (budgetload, failload)
// share: their connection pools, their measures of the process and the
// machine, and the raising of the open-file limit they need.
package load

import (
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
)

// Pool returns a transport that keeps up to 2n idle connections per host,
// so that n concurrent requests and their replacements reuse connections.
func Pool(n int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 2*n, 2*n
	return t
}

// Quantile returns the q-quantile of sorted (ascending), or zero when it
// is empty.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[max(0, min(len(sorted)-1, int(q*float64(len(sorted)))))]
}

// Ms returns d in milliseconds, to the microsecond.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// CPUTime returns the CPU time this process has used, user and system, or
// zero where it cannot be read.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadAvg returns the machine's one-minute load average, or "?" where
// /proc/loadavg cannot be read.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// FileLimit returns the process's limit on open files (RLIMIT_NOFILE), or
// zero where it cannot be read.
func FileLimit() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return int(min(lim.Cur, 1<<30))
}

// RaiseFiles raises the process's limit on open files to at least want.
// When it may not (raising the hard limit needs privilege), it raises the
// limit as far as the hard limit allows and returns the error; either way
// it returns the limit the process has after.
func RaiseFiles(want uint64) (int, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur >= want {
		return int(min(lim.Cur, 1<<30)), nil
	}
	raised := syscall.Rlimit{Cur: want, Max: max(lim.Max, want)}
	err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised)
	if err == nil {
		return int(min(want, 1<<30)), nil
	}
	part := syscall.Rlimit{Cur: max(lim.Cur, min(lim.Max, want)), Max: lim.Max}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &part) == nil {
		lim.Cur = part.Cur
	}
	return int(min(lim.Cur, 1<<30)), err
}
