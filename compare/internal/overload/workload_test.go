package overload

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseMix(t *testing.T) {
	m, err := ParseMix(" 100ms:0.3, 500ms:0.4,3s ")
	if err != nil {
		t.Fatal(err)
	}
	want := []Weighted{{100 * time.Millisecond, 0.3}, {500 * time.Millisecond, 0.4}, {3 * time.Second, 1}}
	if len(m) != len(want) {
		t.Fatalf("ParseMix = %v, want %v", m, want)
	}
	for i := range m {
		if m[i] != want[i] {
			t.Fatalf("ParseMix = %v, want %v", m, want)
		}
	}
	if got := FormatMix(m); got != "100ms:0.3,500ms:0.4,3s:1" {
		t.Errorf("FormatMix = %q", got)
	}
	for _, c := range []struct{ in, want string }{
		{"", "no value:share"},
		{"fast:1", `"fast" is not a duration`},
		{"1ms:x", `share "x"`},
		{"1ms:-1", `share "-1"`},
		{"-1ms:1", "not a positive duration"},
		{"1ms:+Inf", `share "+Inf"`},
	} {
		if _, err := ParseMix(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseMix(%q) = %v, want an error saying %s", c.in, err, c.want)
		}
	}
}

// FuzzParseMix checks that ParseMix never panics, and that what it accepts
// is positive and reads back the same.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"100ms:0.3,500ms:0.4,3s:0.3", "1ms:0.7,20ms:0.3", "1s", ":", "1ms:NaN", "1ms:1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMix(s)
		if err != nil {
			return
		}
		for _, w := range m {
			if w.Value <= 0 || !(w.Share > 0) || math.IsInf(w.Share, 0) {
				t.Fatalf("ParseMix(%q) accepted %v", s, w)
			}
		}
		if _, err := ParseMix(FormatMix(m)); err != nil {
			t.Fatalf("ParseMix(FormatMix(ParseMix(%q))): %v", s, err)
		}
	})
}
