package budget

import (
	"testing"
	"time"
	"unsafe"
)

// stepWall returns t with its wall clock moved by d and its monotonic
// reading kept: what time.Now returns after the system clock was stepped
// (NTP, a resumed VM, an operator) while the monotonic clock ran on. The
// standard library offers no way to build such a time, so this relies on
// time.Time's layout (a wall word whose bits 30–62 hold seconds when the
// top bit says a monotonic reading is present) and checks the result.
func stepWall(t *testing.T, tm time.Time, d time.Duration) time.Time {
	t.Helper()
	type layout struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	if unsafe.Sizeof(tm) != unsafe.Sizeof(layout{}) {
		t.Fatal("time.Time's layout is not the one this test knows: update stepWall")
	}
	out := tm
	l := (*layout)(unsafe.Pointer(&out))
	if l.wall>>63 == 0 {
		t.Fatal("the time carries no monotonic reading")
	}
	l.wall = uint64(int64(l.wall) + int64(d/time.Second)<<30)
	if out.Sub(tm) != 0 || out.Round(0).Sub(tm.Round(0)) != d {
		t.Fatal("time.Time's layout is not the one this test knows: update stepWall")
	}
	return out
}

// Regression: windows and probe intervals used the wall clock
// (now.UnixNano()): a one-hour backward step froze an op on its last
// estimate, with no probe in ten minutes. Every time is now an offset on the
// monotonic clock.
func TestWallClockStepsMoveNothing(t *testing.T) {
	t.Parallel()
	base := time.Now()
	var e Estimator
	for i := range 20 {
		e.RecordAt(base.Add(time.Duration(i)*time.Millisecond), 10*time.Millisecond)
	}
	stepped := stepWall(t, base.Add(20*time.Millisecond), -time.Hour)
	e.RecordAt(stepped, 10*time.Millisecond)
	if n := e.Distribution(stepped).Count(); n != 21 {
		t.Fatalf("after a one-hour step back the estimator counts %d samples, want 21", n)
	}

	// An op that refuses a hung dependency keeps probing across a step.
	op := &Op{Name: "dep", Prior: 5 * time.Millisecond}
	for range 10 {
		op.Estimator.RecordCensoredAt(base, time.Second)
	}
	probes := 0
	for i := range 600 { // ten minutes, one refusal a second
		now := stepWall(t, base.Add(time.Duration(i)*time.Second), -time.Hour)
		dec := op.admit(mono(now), Ask{Available: 500 * time.Millisecond}, DefaultCriticality)
		if !dec.Admit {
			continue
		}
		// The dependency still hangs: every attempt is cut off.
		took := 500 * time.Millisecond
		if dec.Probe {
			probes++
			took = 10 * time.Millisecond
		}
		op.ended(mono(now), mono(now.Add(took)), took, OutcomeExpired, dec.Probe)
	}
	if probes < 30 {
		t.Fatalf("%d probes in ten minutes after a one-hour step back", probes)
	}
}
