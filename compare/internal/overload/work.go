package overload

import (
	"context"
	"crypto/sha256"
	"sync/atomic"
	"time"
)

// unit is the CPU time of one unit of backend work. Work checks its context
// between units, so a request whose caller left stops within about a unit.
const unit = 250 * time.Microsecond

// sink keeps the compiler from dropping the hashing.
var sink atomic.Uint32

// spin runs rounds of SHA-256 over a 32-byte block.
func spin(rounds int) {
	var b [32]byte
	for range rounds {
		b = sha256.Sum256(b[:])
	}
	sink.Store(uint32(b[0]))
}

// calibrate returns how many rounds of spin take one unit of CPU. It times
// several trials of about 2 ms and keeps the fastest, the one least
// disturbed by other work on the machine. The unit is therefore nominal:
// the CPU figures of a run apportion the backend's measured CPU time by
// units instead (see summarize).
func calibrate() int {
	const trial = 10000 // about 2 ms
	spin(4 * trial)     // let the CPU reach its working clock first
	best := time.Duration(1<<63 - 1)
	for range 30 {
		start := time.Now()
		spin(trial)
		if d := time.Since(start); d < best {
			best = d
		}
	}
	best = max(best, time.Microsecond)
	return max(1, int(int64(unit)*trial/int64(best)))
}

// work runs units of work, checking ctx before each. It returns how many
// units ran, and ctx's error when it stopped early.
func work(ctx context.Context, rounds, units int, ran *atomic.Int64) error {
	for range units {
		if err := ctx.Err(); err != nil {
			return err
		}
		spin(rounds)
		ran.Add(1)
	}
	return nil
}
