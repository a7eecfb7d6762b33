package topology_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

func parseFile(t *testing.T, path string) (*topology.Topology, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return topology.Parse(filepath.Base(path), data)
}

func TestParseSeed(t *testing.T) {
	t.Parallel()
	top, err := parseFile(t, "testdata/good/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if top.Entry != "edge" || top.Budget != 3*time.Second {
		t.Errorf("entry %q budget %s", top.Entry, top.Budget)
	}
	if want := []string{"edge", "search", "db"}; !reflect.DeepEqual(top.Names, want) {
		t.Errorf("names %v, want %v", top.Names, want)
	}
	c := top.Services["search"].Calls[0]
	want := topology.Call{To: "db", Timeout: 1500 * time.Millisecond, Retries: 2, Backoff: 50 * time.Millisecond, Share: 1, Pos: topology.Pos{Line: 10, Col: 9}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("search's call = %+v, want %+v", c, want)
	}
	if l := top.Services["db"].Latency; l.P50 != 5*time.Millisecond || l.P99 != 80*time.Millisecond {
		t.Errorf("db latency %+v", l)
	}
	if c, _ := top.Cycle(); c != nil {
		t.Errorf("cycle %v in a tree", c)
	}
	if o, ok := top.Order(); !ok || !reflect.DeepEqual(o, []string{"edge", "search", "db"}) {
		t.Errorf("order %v %v", o, ok)
	}
}

func TestParseExtended(t *testing.T) {
	t.Parallel()
	top, err := parseFile(t, "testdata/good/extended.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := top.Services["edge"]
	if e.Workers != 50 || len(e.Calls) != 2 || len(e.Calls[1].Fallback) != 2 {
		t.Fatalf("edge %+v", e)
	}
	fb := e.Calls[1].Fallback
	if fb[0].To != "simplified" || fb[0].Timeout != 100*time.Millisecond || fb[1].Local != "cache" || fb[1].Latency.P99 != 2*time.Millisecond {
		t.Errorf("fallbacks %+v", fb)
	}
	if e.Calls[0].Share != 0.5 || e.Calls[1].Share != 1 {
		t.Errorf("shares %g, %g", e.Calls[0].Share, e.Calls[1].Share)
	}
	if !top.Services["resolve"].Cancellable || top.Services["geometry"].Cancellable {
		t.Error("cancellable not read")
	}
	if top.HostOf("simplified") != "geometry" || top.HostOf("geometry") != "geometry" {
		t.Error("host not read")
	}
	if got := e.Calls[1].Callees(); !reflect.DeepEqual(got, []string{"geometry", "simplified"}) {
		t.Errorf("callees %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want string
	}{
		{"syntax", "syntax.yaml:4:1: bad YAML: did not find expected ',' or '}'"},
		{"unknown-service", `unknown-service.yaml:6:14: service edge: call: to: unknown service "cache"`},
		{"unknown-field", `unknown-field.yaml:6:31: service edge: call: unknown field "retry" (known: to, timeout, retries, backoff, share, fallback)`},
		{"negative-timeout", "negative-timeout.yaml:6:27: service edge: call: timeout: -1s is negative"},
		{"zero-timeout", "zero-timeout.yaml:6:27: service edge: call: timeout: must be more than zero"},
		{"no-unit", `no-unit.yaml:6:27: service edge: call: timeout: "2" has no unit; write it as 2ms or 2s`},
		{"bad-budget", `bad-budget.yaml:2:9: budget: "soon" is not a duration such as 150ms or 2s`},
		{"missing-entry", "missing-entry.yaml:1:1: missing entry: name the service a request enters at"},
		{"unknown-entry", `unknown-entry.yaml:1:8: entry: unknown service "front"`},
		{"missing-budget", "missing-budget.yaml:1:1: missing budget: how long a user waits at the entry, such as 3s"},
		{"negative-retries", "negative-retries.yaml:6:40: service edge: call: retries: -1 is outside [0, 100]"},
		{"negative-backoff", "negative-backoff.yaml:6:40: service edge: call: backoff: -5ms is negative"},
		{"p99-below-p50", "p99-below-p50.yaml:6:31: service db: latency: p99 20ms is below p50 80ms"},
		{"p99-missing", "p99-missing.yaml:6:14: service db: latency: give both p50 and p99"},
		{"missing-to", "missing-to.yaml:6:9: service edge: call: missing to: name the callee"},
		{"duplicate-service", `duplicate-service.yaml:5:3: services: "edge" appears twice`},
		{"zero-workers", "zero-workers.yaml:5:14: service edge: workers: 0 is outside [1, 1000000]"},
		{"fallback-both", "fallback-both.yaml:8:13: service edge: call: fallback: give exactly one of to (a service) or local (such as cache)"},
		{"calls-not-list", "calls-not-list.yaml:5:12: service edge: calls must be a list"},
		{"empty", "empty.yaml:1:1: empty file: want entry, budget and services"},
		{"share", `share.yaml:6:38: service edge: call: share: "1.5" is not a fraction in (0, 1]`},
		{"not-mapping", "not-mapping.yaml:1:1: the file must be a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			_, err := parseFile(t, "testdata/bad/"+tt.file+".yaml")
			if err == nil {
				t.Fatal("no error")
			}
			var te *topology.Error
			if !errors.As(err, &te) {
				t.Fatalf("error %T is not a *topology.Error: %v", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestCycle(t *testing.T) {
	t.Parallel()
	src := `entry: a
budget: 1s
services:
  a:
    calls: [{to: b, timeout: 500ms}]
  b:
    calls: [{to: c, timeout: 200ms}]
  c:
    calls:
      - to: d
        fallback: [{to: b}]
  d: {}
`
	top, err := topology.Parse("cycle.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c, at := top.Cycle()
	if want := []string{"b", "c", "b"}; !reflect.DeepEqual(c, want) {
		t.Errorf("cycle %v, want %v", c, want)
	}
	if at != (topology.Pos{Line: 10, Col: 9}) {
		t.Errorf("cycle closes at %+v", at)
	}
	if _, ok := top.Order(); ok {
		t.Error("Order succeeded on a cycle")
	}
}

// FuzzParse checks that no input makes Parse panic, that every error has a
// position, and that no accepted name holds a control or bidirectional
// formatting character.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/good", "testdata/bad"} {
		files, _ := filepath.Glob(dir + "/*.yaml")
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, err := topology.Parse("fuzz.yaml", data)
		if err != nil {
			var te *topology.Error
			if !errors.As(err, &te) || te.Pos.Line < 1 || te.Pos.Col < 1 {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		if _, ok := top.Services[top.Entry]; !ok {
			t.Fatalf("entry %q not a service", top.Entry)
		}
		if len(data) > topology.MaxFileSize {
			t.Fatalf("accepted %d bytes", len(data))
		}
		for _, name := range top.Names {
			for _, r := range name {
				if r <= ' ' || (r >= 0x7f && r <= 0x9f) || r == 0x61c || r == 0x200e || r == 0x200f ||
					(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
					t.Fatalf("name %q holds %U", name, r)
				}
			}
		}
		top.Cycle()
		top.Order()
	})
}

// TestParseTimeoutBudget checks "timeout: budget", a call with no timeout
// of its own that spends the rest of its caller's budget.
func TestParseTimeoutBudget(t *testing.T) {
	t.Parallel()
	src := "entry: a\nbudget: 1s\nservices:\n  a:\n    calls:\n      - {to: b, timeout: budget}\n      - {to: b, timeout: 50ms}\n      - {to: b}\n  b: {}\n"
	top, err := topology.Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	calls := top.Services["a"].Calls
	if !calls[0].Budget || calls[0].Timeout != 0 || calls[1].Budget || calls[2].Budget {
		t.Errorf("calls %+v: want only the first to spend the budget, with no timeout of its own", calls)
	}
}
