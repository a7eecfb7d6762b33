package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func blockedUntil(c chan struct{}) { <-c }

func TestFindSeesALeakAndItsEnd(t *testing.T) {
	c := make(chan struct{})
	go blockedUntil(c)
	leaks := Find(50 * time.Millisecond)
	if len(leaks) != 1 || !strings.Contains(leaks[0], "leakcheck.blockedUntil") {
		t.Fatalf("Find = %q, want the blocked goroutine", leaks)
	}
	close(c)
	if leaks := Find(time.Second); len(leaks) != 0 {
		t.Fatalf("after it ended, Find = %q", leaks)
	}
}
