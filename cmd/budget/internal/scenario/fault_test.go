package scenario

import "testing"

func TestParseFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // formatFaults of the result
	}{
		{"", "none"},
		{"none", "none"},
		{"geometry=hang", "geometry=hang"},
		{"payment=slowdown:1s,geometry=hang", "geometry=hang,payment=slowdown:1s"},
		{"pricing=slow:250ms", "pricing=slow:250ms"},
		{"inventory=fail", "inventory=fail"},
		{"payment=slowdown:2s@0.25", "payment=slowdown:2s@0.25"},
		{"resolve=none", "none"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseFaults(tt.in)
			if err != nil {
				t.Fatalf("parseFaults(%q): %v", tt.in, err)
			}
			if s := FormatFaults(got); s != tt.want {
				t.Errorf("parseFaults(%q) = %s, want %s", tt.in, s, tt.want)
			}
		})
	}
	for _, bad := range []string{"geometry=hang,geometry=fail", "=hang", "geometry=hang:1s", "geometry=slow:-1s", "geometry=slow:2m"} {
		if _, err := ParseFaults(bad); err == nil {
			t.Errorf("parseFaults(%q) succeeded, want an error", bad)
		}
	}
}
