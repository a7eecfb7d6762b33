package format

import "testing"

// TestFormats pins how every report writes its figures, so the demo's
// table, its page and the simulator's report read alike.
func TestFormats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{Ms(0.46), "0.5ms"}, {Ms(12.4), "12ms"}, {Ms(1500), "1.50s"}, {Ms(295_000), "295s"},
		{Seconds(0), "0s"}, {Seconds(0.012), "12ms"}, {Seconds(2.5), "2.5s"}, {Seconds(1327.2), "1327s"},
		{Pct(0), "0%"}, {Pct(0.001), "<1%"}, {Pct(0.846), "85%"}, {Pct(1), "100%"},
		{Counts(map[string]int{"exact": 23, "cache": 97}), "cache 97, exact 23"},
		{Counts(map[string]int64{"b": 2, "a": 2}), "a 2, b 2"}, {Counts(map[string]int(nil)), "—"},
		{OrDash(false, "12ms"), "—"}, {OrDash(true, "12ms"), "12ms"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
