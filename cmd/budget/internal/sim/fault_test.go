package sim_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// faultTopology declares the services the fault tests name.
const faultTopology = `entry: api
budget: 100ms
services:
  api:
    calls: [{to: db}]
  db: {}
`

func TestParseFault(t *testing.T) {
	t.Parallel()
	top := parse(t, faultTopology)
	s, ms := time.Second, time.Millisecond
	good := []struct {
		in   string
		want sim.Fault
	}{
		{"db=hang", sim.Fault{Service: "db", Kind: sim.Hang}},
		{"db=slow:2s", sim.Fault{Service: "db", Kind: sim.Slow, Latency: 2 * s}},
		{"db=fail:0.5", sim.Fault{Service: "db", Kind: sim.Fail, P: 0.5}},
		{"db=error", sim.Fault{Service: "db", Kind: sim.Error}},
		{"db=hang@2s-5s", sim.Fault{Service: "db", Kind: sim.Hang, Start: 2 * s, End: 5 * s}},
		{"db=slow:200ms@2s-5s", sim.Fault{Service: "db", Kind: sim.Slow, Latency: 200 * ms, Start: 2 * s, End: 5 * s}},
		{"db=error@2s-5s", sim.Fault{Service: "db", Kind: sim.Error, Start: 2 * s, End: 5 * s}},
		{"db=hang:1/3@2s-5s", sim.Fault{Service: "db", Kind: sim.Hang, K: 1, N: 3, Start: 2 * s, End: 5 * s}},
		{"db=slow:200ms:2/5", sim.Fault{Service: "db", Kind: sim.Slow, Latency: 200 * ms, K: 2, N: 5}},
		{"db=error:3/3@0s-1m", sim.Fault{Service: "db", Kind: sim.Error, K: 3, N: 3, End: time.Minute}},
		{"db=fail:0.25@1.5s-2s", sim.Fault{Service: "db", Kind: sim.Fail, P: 0.25, Start: 1500 * ms, End: 2 * s}},
		{"db=hang@3s", sim.Fault{Service: "db", Kind: sim.Hang, Start: 3 * s}},
	}
	for _, tt := range good {
		got, err := sim.ParseFault(top, tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseFault(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		if again, err := sim.ParseFault(top, got.String()); err != nil || again != got {
			t.Errorf("%q renders as %q, which parses as %+v, %v", tt.in, got.String(), again, err)
		}
	}
	bad := []struct{ in, want string }{
		{"db", `"db" is not SERVICE=KIND`},
		{"=hang", `"=hang" is not SERVICE=KIND`},
		{"cache=hang", `unknown service "cache"`},
		{"db=explode", `unknown fault "explode"`},
		{"db=hang:2s", "hang takes no argument but :K/N"},
		{"db=error:0.5", "error takes no argument but :K/N"},
		{"db=slow", "slow needs a duration"},
		{"db=slow:1/3", "slow needs a duration"},
		{"db=slow:-1s", "slow needs a duration"},
		{"db=fail:2", "fail needs a probability in (0, 1]"},
		{"db=fail:0.5:1/2", "fail:P takes no K/N"},
		{"db=hang:0/3", `"0/3" is not K/N`},
		{"db=hang:4/3", `"4/3" is not K/N`},
		{"db=hang:1/x", `"1/x" is not K/N`},
		{"db=hang:1/3:", `"" is not K/N`},
		{"db=hang@", `start "" is not a duration`},
		{"db=hang@soon", `start "soon" is not a duration`},
		{"db=hang@-1s-5s", `start "" is not a duration`},
		{"db=hang@2s-", `end "" is not a duration`},
		{"db=hang@2s-later", `end "later" is not a duration`},
		{"db=hang@5s-2s", "the fault ends (2s) before it starts (5s)"},
		{"db=hang@2s-2s", "the fault ends (2s) before it starts (2s)"},
		{"db=hang@2s-5s-8s", `end "5s-8s" is not a duration`},
		{"db=hang@1000h-1001h", "start \"1000h\" is not a duration in [0, " + topology.MaxDuration.String()},
	}
	for _, tt := range bad {
		_, err := sim.ParseFault(top, tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseFault(%q): error %v, want one saying %q", tt.in, err, tt.want)
		}
	}
}

// FuzzParseFault: no --fault value makes ParseFault panic, and every value
// it accepts renders (String) as a value that parses to the same fault and
// that a run accepts.
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"db=hang", "db=slow:2s", "db=fail:0.5", "db=error", "db=hang@2s-5s",
		"db=slow:200ms@2s-5s", "db=error@2s-5s", "db=hang:1/3@2s-5s", "db=slow:200ms:2/5", "db=hang@3s",
		"db=hang@5s-2s", "db=hang:0/3", "db=fail:0.5:1/2", "db=hang@2s-5s-8s", "api=slow:1h@0s-1ms", "=", "db=@-"} {
		f.Add(s)
	}
	top, err := topology.Parse("fuzz.yaml", []byte(faultTopology))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ft, err := sim.ParseFault(top, s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), strconv.Quote(s)) {
				t.Fatalf("the error for %q does not quote it: %v", s, err)
			}
			return
		}
		again, err := sim.ParseFault(top, ft.String())
		if err != nil || again != ft {
			t.Fatalf("%q parses as %+v, which renders as %q, which parses as %+v, %v", s, ft, ft.String(), again, err)
		}
		if err := (sim.Config{Requests: 1, Faults: []sim.Fault{ft}}).Validate(top); err != nil {
			t.Fatalf("%q parses, but a run refuses it: %v", s, err)
		}
	})
}
