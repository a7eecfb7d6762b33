package main

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunSmall runs every pattern at a small scale, as the command does,
// and checks what does not depend on the machine's speed: every request is
// accounted for, none of the budget patterns reads an expired budget as a
// 200 OK, the careful pattern's hops time out on their own clocks, and the
// hops of the budget patterns saw deadlines no later than their callers'.
// The figures themselves are for BENCHMARKS.md, not for a test.
func TestRunSmall(t *testing.T) {
	const n, rounds = 10, 1
	patterns := []string{"budget", "careful", "admit", "shared"}
	res, err := run(patterns, n, 1, rounds, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range patterns {
		r := res[i]
		if got := r.expired + r.timer + r.ok + r.other; got != n*rounds {
			t.Errorf("%s: %d answers counted, want %d", p, got, n*rounds)
		}
		if r.ok != 0 {
			t.Errorf("%s: %d answers were 200 OK from a backend that hangs", p, r.ok)
		}
		if len(r.over) != n*rounds {
			t.Errorf("%s: %d overshoots recorded, want %d", p, len(r.over), n*rounds)
		}
		if p == "careful" {
			continue
		}
		for hop, ms := range r.margins {
			for _, m := range ms {
				if m < 0 {
					t.Errorf("%s: hop %d's deadline was %v after its caller's", p, hop, -m)
					break
				}
			}
		}
	}
	if _, err := run([]string{"nonsense"}, 1, 0, 1, time.Millisecond); err == nil {
		t.Error("an unknown pattern was accepted")
	}
}
