// Package leakcheck fails a test binary whose tests leave goroutines running.
//
// The root module of budget promises to depend on nothing outside the standard
// library, and Go has no test-only requirements, so its packages cannot use
// go.uber.org/goleak (the nested modules do). This package does the same job
// the same way: after the tests, it lists the goroutines still alive, ignores
// the runtime's and the testing package's own, and retries for a while so
// goroutines that are already finishing get to exit.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Main runs the tests of m and then exits non-zero if goroutines they started
// are still running after a grace period of up to five seconds. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaks := Find(5 * time.Second); len(leaks) > 0 {
			fmt.Fprintf(os.Stderr, "leakcheck: %d goroutine(s) still running after the tests:\n\n%s\n",
				len(leaks), strings.Join(leaks, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// Find returns the stacks of goroutines other than the caller's and the
// runtime's that are still running, waiting up to grace for them to finish.
func Find(grace time.Duration) []string {
	deadline := time.Now().Add(grace)
	wait := time.Millisecond
	for {
		leaks := interesting()
		if len(leaks) == 0 || time.Now().After(deadline) {
			return leaks
		}
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}

var ignored = []string{
	"testing.(*M).",
	"testing.tRunner",
	"testing.runFuzzTests",
	"testing.runFuzzing",
	"os/signal.signal_recv",
	"os/signal.loop",
	"runtime.ensureSigM",
	"runtime/trace.Start",
	"created by runtime.gc",
	"runtime.goexit0",
}

func interesting() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	stacks := strings.Split(string(buf), "\n\n")
	for i, s := range stacks {
		if i == 0 { // the calling goroutine
			continue
		}
		if isIgnored(s) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func isIgnored(stack string) bool {
	for _, p := range ignored {
		if strings.Contains(stack, p) {
			return true
		}
	}
	// Goroutines whose every frame is in the runtime (finalizers, sweepers).
	lines := strings.Split(stack, "\n")
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "/") || strings.HasPrefix(l, "created by runtime") {
			continue
		}
		if !strings.HasPrefix(l, "runtime.") && !strings.HasPrefix(l, "internal/") {
			return false
		}
	}
	return true
}
