package budget

import (
	"math/rand/v2"
	"testing"
	"time"
)

// An estimate scans only the buckets a window's bounds cover: it must be
// the very estimate a scan of every bucket gives, and the bounds must
// cover every sample, concurrent rotations and resets included.
func TestBoundedScanChangesNothing(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var e Estimator
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for k := range 2000 {
		now := base.Add(time.Duration(k) * 7 * time.Millisecond)
		d := time.Duration(r.ExpFloat64() * float64(time.Duration(1+r.IntN(50))*time.Millisecond))
		e.record(mono(now), d, r.IntN(4) == 0)
		if k%500 == 499 {
			e.Reset()
		}
		if k%13 != 0 {
			continue
		}
		m := mono(now)
		got := e.compute(m, 5)
		// The same counts, scanned whole.
		want := &Distribution{}
		var u, c [nBuckets]float64
		ep := floorDiv(m, e.window())
		for s := range e.slots {
			slot := &e.slots[s]
			weight := 1.0
			switch slot.epoch.Load() {
			case ep:
			case ep - 1:
				weight = 1 - float64(m-ep*e.window())/float64(e.window())
			default:
				continue
			}
			lo, hi := slot.bounds()
			for i := range u {
				if (slot.counts[i].Load() > 0 || slot.censored[i].Load() > 0) && (i < lo || i > hi) {
					t.Fatalf("sample %d: bucket %d holds samples outside the bounds [%d, %d]", k, i, lo, hi)
				}
				u[i] += weight * float64(slot.counts[i].Load())
				c[i] += weight * float64(slot.censored[i].Load())
			}
		}
		total := 0.0
		for i := range u {
			total += u[i] + c[i]
		}
		if total < 5 {
			u, c, _, _ = e.latest(m, 5)
		}
		want.fill(&u, &c, 0, nBuckets-1)
		same := true
		for i := range nBuckets {
			same = same && got.cdfAt(i) == want.cdfAt(i)
		}
		if !same || got.n != want.n || got.horizon != want.horizon || got.top != want.top || got.p99 != want.p99 {
			t.Fatalf("sample %d: the bounded scan's estimate differs from the whole scan's", k)
		}
	}
}
