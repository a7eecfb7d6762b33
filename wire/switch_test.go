package wire_test

import (
	"sync"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

func TestSwitchZeroIsOff(t *testing.T) {
	t.Parallel()
	var s wire.Switch
	if s.Load() != nil {
		t.Fatal("zero Switch holds a policy")
	}
	d, err := s.Decide(wire.Metadata{"request-timeout-ms": {"0"}}, now)
	if err != nil || d != (wire.Decision{}) {
		t.Fatalf("off: Decide = %+v, %v; want nothing", d, err)
	}
}

func TestSwitchStoreCopies(t *testing.T) {
	t.Parallel()
	var s wire.Switch
	p := &wire.Policy{Default: time.Second}
	s.Store(p)
	p.Default = time.Hour // the caller reuses its value; the stored policy must not change
	if got := s.Load().Default; got != time.Second {
		t.Fatalf("stored Default = %v; want 1s", got)
	}
	s.Store(nil)
	if s.Load() != nil {
		t.Fatal("Store(nil) did not turn enforcement off")
	}
}

// TestSwitchConcurrent swaps policies while readers decide; run with -race. Each reader
// must always see one whole policy: never a mix of two, never a torn value.
func TestSwitchConcurrent(t *testing.T) {
	t.Parallel()
	policies := []*wire.Policy{
		{Default: time.Second},
		nil, // the kill switch
		{Default: 2 * time.Second, Max: 2 * time.Second},
		{Trust: wire.SourcesNone, Default: 3 * time.Second},
	}
	allowed := map[time.Duration]bool{0: true, time.Second: true, 2 * time.Second: true, 3 * time.Second: true}
	var s wire.Switch
	s.Store(policies[0])
	h := wire.HTTPHeader{}

	const readers, rounds = 8, 2000
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan string, readers)
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				d, err := s.Decide(h, now)
				if err != nil || !allowed[d.Remaining] || d.HasDeadline != (d.Remaining != 0) {
					errs <- "inconsistent decision"
					return
				}
				_ = s.Load()
			}
		})
	}
	for i := range rounds {
		s.Store(policies[i%len(policies)])
	}
	close(done)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
