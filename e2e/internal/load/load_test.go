package load

import (
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	if Quantile(nil, 0.99) != 0 {
		t.Error("the quantile of nothing is not zero")
	}
	s := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, 1}, {0.5, 6}, {0.99, 10}, {1, 10}, {-1, 1}} {
		if got := Quantile(s, c.q); got != c.want {
			t.Errorf("Quantile(q=%v) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestRaiseFiles(t *testing.T) {
	before := FileLimit()
	if got, err := RaiseFiles(16); err != nil || got != before {
		t.Errorf("a limit the process has already: got %d, %v; want %d, nil", got, err, before)
	}
	got, err := RaiseFiles(1 << 40)
	if err == nil {
		t.Fatal("an open-file limit of 2^40 was accepted")
	}
	if got < before || got != FileLimit() {
		t.Errorf("after a refused raise the limit is %d (reported %d), was %d", FileLimit(), got, before)
	}
}

func TestMsAndPool(t *testing.T) {
	if Ms(1500*time.Microsecond) != 1.5 {
		t.Errorf("Ms(1.5ms) = %v", Ms(1500*time.Microsecond))
	}
	if p := Pool(10); p.MaxIdleConnsPerHost != 20 || p.MaxIdleConns != 20 {
		t.Errorf("Pool(10) keeps %d idle per host, %d in all", p.MaxIdleConnsPerHost, p.MaxIdleConns)
	}
}
