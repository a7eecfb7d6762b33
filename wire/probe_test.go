package wire_test

import (
	"net/http"
	"testing"

	"github.com/timebudget/budget/wire"
)

// TestDecideProbe: a trusted Budget-Probe of "1" marks the decision as a
// probe; "0", an absent header, an untrusted one and a malformed one do not,
// and a malformed one is counted, and refused under a strict policy. One
// "0" beside a "1" is not a probe: a hop cannot make a request a probe by
// appending a value.
func TestDecideProbe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		p         wire.Policy
		vals      []string
		probe     bool
		malformed int
		refused   bool
	}{
		{"probe", wire.Policy{}, []string{"1"}, true, 0, false},
		{"spaces around", wire.Policy{}, []string{" 1 "}, true, 0, false},
		{"not a probe", wire.Policy{}, []string{"0"}, false, 0, false},
		{"absent", wire.Policy{}, nil, false, 0, false},
		{"untrusted", wire.Policy{Trust: wire.SourcesNone}, []string{"1"}, false, 0, false},
		{"trusted alone", wire.Policy{Trust: wire.SourceProbe}, []string{"1"}, true, 0, false},
		{"one says no", wire.Policy{}, []string{"1", "0"}, false, 0, false},
		{"list", wire.Policy{}, []string{"1,1"}, true, 0, false},
		{"malformed", wire.Policy{}, []string{"true"}, false, 1, false},
		{"malformed beside", wire.Policy{}, []string{"1", "yes"}, true, 1, false},
		{"strict malformed", wire.Policy{Strict: true}, []string{"2"}, false, 1, true},
	} {
		h := http.Header{}
		for _, v := range tc.vals {
			h.Add(wire.HeaderBudgetProbe, v)
		}
		for _, hdr := range []wire.Header{wire.HTTPHeader(h), wire.Metadata{"budget-probe": tc.vals}} {
			d, err := tc.p.Decide(hdr, now)
			if d.Probe != tc.probe || d.Malformed != tc.malformed || (err != nil) != tc.refused {
				t.Errorf("%s over %T: probe %v, malformed %d, err %v; want %v, %d, refused %v",
					tc.name, hdr, d.Probe, d.Malformed, err, tc.probe, tc.malformed, tc.refused)
			}
			if tc.malformed > 0 && !d.MalformedFrom.Has(wire.SourceProbe) {
				t.Errorf("%s: MalformedFrom %v, want Budget-Probe", tc.name, d.MalformedFrom)
			}
		}
	}
	if got := wire.SourceProbe.Header(); got != wire.HeaderBudgetProbe {
		t.Errorf("SourceProbe.Header() = %q", got)
	}
	if !wire.SourcesDefault.Has(wire.SourceProbe) {
		t.Error("SourcesDefault does not trust Budget-Probe")
	}
}

func FuzzBudgetProbe(f *testing.F) {
	addSeeds(f, "1", "0", "01", "1 ", "true", "\u0661", "11")
	f.Fuzz(func(t *testing.T, v string) {
		p, ok, err := wire.ParseBudgetProbe(v)
		checkErr(t, wire.HeaderBudgetProbe, v, ok, err)
		if !ok {
			if p {
				t.Fatalf("Parse(%q) = probe without ok", v)
			}
			return
		}
		if want := v == wire.ProbeValue; p != want || v != "1" && v != "0" {
			t.Fatalf("Parse(%q) = %v", v, p)
		}
		d, derr := (&wire.Policy{}).Decide(wire.Metadata{"budget-probe": {v}}, now)
		if derr != nil || d.Probe != p {
			t.Fatalf("Decide over %q = %+v, %v", v, d, derr)
		}
	})
}
