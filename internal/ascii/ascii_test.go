package ascii

import "testing"

func TestEqualFoldLower(t *testing.T) {
	for _, c := range []struct {
		s, lower string
		want     bool
	}{
		{"critical", "critical", true},
		{"CRITICAL", "critical", true},
		{"CrItIcAl", "critical", true},
		{"critica", "critical", false},
		{"criticals", "critical", false},
		{"", "", true},
		{"", "default", false},
		{"s\u212aip", "skip", false}, // the Kelvin sign is not a k
		{"DEFAULT", "defaulu", false},
		{"[", "{", false}, // '[' is 'Z'+1: not a letter, not folded
		{"@", "`", false}, // '@' is 'A'-1
	} {
		if got := EqualFoldLower(c.s, c.lower); got != c.want {
			t.Errorf("EqualFoldLower(%q, %q) = %v, want %v", c.s, c.lower, got, c.want)
		}
	}
}

var sink bool

func TestEqualFoldLowerAllocs(t *testing.T) {
	s, lower := "SHEDDABLE", "sheddable"
	if n := testing.AllocsPerRun(100, func() { sink = EqualFoldLower(s, lower) }); n != 0 {
		t.Errorf("EqualFoldLower allocates %v times, want 0", n)
	}
}
