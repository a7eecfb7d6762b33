package sim_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// FuzzRun simulates every topology the parser accepts, with a fault on its
// entry's first callee: no input may make the simulation panic or lose a
// request.
func FuzzRun(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "../topology/testdata/good/*.yaml", "../audit/testdata/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			for kind := range uint8(4) {
				f.Add(data, kind, uint64(1))
			}
			f.Add(data, uint8(8|16|1), uint64(1)) // hang:1/3@1ms-20ms
			f.Add(data, uint8(8|32), uint64(1))   // error@1ms-20ms
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8, seed uint64) {
		top, err := topology.Parse("fuzz.yaml", data)
		if err != nil || len(top.Names) > 50 || top.Budget > 10*60e9 {
			return
		}
		cfg := sim.Config{Requests: 40, Concurrency: 4, Seed: seed, Workers: 2, Horizon: 30 * time.Millisecond}
		if kind&4 != 0 {
			cfg.Rate, cfg.Concurrency = 1000, 0
		}
		if calls := top.Services[top.Entry].Calls; len(calls) > 0 {
			ft := sim.Fault{Service: calls[0].To}
			switch kind % 4 {
			case 1:
				ft.Kind = sim.Hang
			case 2:
				ft.Kind, ft.Latency = sim.Slow, top.Budget
			case 3:
				ft.Kind, ft.P = sim.Fail, 0.5
			}
			if kind&32 != 0 {
				ft.Kind = sim.Error
			}
			if kind&16 != 0 && ft.Kind != sim.Fail && ft.Kind != 0 {
				ft.K, ft.N = 1, 3
			}
			if kind&8 != 0 {
				ft.Start, ft.End = time.Millisecond, 20*time.Millisecond
			}
			if ft.Kind != 0 {
				cfg.Faults = []sim.Fault{ft}
			}
		}
		res, err := sim.Run(top, cfg)
		if err != nil {
			var we *sim.WorkError
			if c, _ := top.Cycle(); c == nil && !errors.As(err, &we) {
				t.Fatalf("Run: %v", err)
			}
			return
		}
		for _, r := range res {
			// A fault that ends makes the run go on past it.
			if r.Requests != 40 && (len(cfg.Faults) == 0 || !cfg.Faults[0].Ends() || r.Requests < 40) {
				t.Fatalf("%s: %d requests ended, want 40", r.Pattern, r.Requests)
			}
			for _, rc := range r.Recovery {
				if (rc.FirstAnswerMs == nil) != (rc.FirstAnswer == "never") || (rc.FirstAnswerMs != nil && *rc.FirstAnswerMs < 0) {
					t.Fatalf("%s: recovery %+v", r.Pattern, rc)
				}
			}
		}
	})
}
