// Command overload runs the overload head to head: the same service graph,
// with its bottleneck in a CPU-bound backend process, protected in turn by
// nothing, careful per-call timeouts, failsafe-go (bulkhead, adaptive
// limiter, priority limiter), go-zero's adaptive shedder, Kratos' BBR
// limiter and budget, under open-loop load at multiples of the capacity it
// measures first, on three workloads (uniform, mixed budgets and work,
// fan-out). See package
// github.com/timebudget/budget/compare/internal/overload.
//
// From the repository root:
//
//	go run ./compare/cmd/overload [-json FILE] [-svg FILE] [-check] [-duration 4s] [-warmup 2s] [-workloads uniform,mixed,fanout] [-budgets 100ms:0.3,500ms:0.4,3s:0.3] [-costs 1ms:0.7,20ms:0.3] ...
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/timebudget/budget/compare/internal/overload"
)

func main() {
	overload.ServeBackendIfChild()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "overload:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg overload.Config
	jsonOut := flag.String("json", "", "also write the report as JSON to `file`")
	svgOut := flag.String("svg", "", "also draw goodput against offered load as an SVG chart to `file`")
	flag.DurationVar(&cfg.Duration, "duration", 4*time.Second, "how long each variant is measured at each load")
	flag.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "how long each variant runs at a load before it is measured")
	flag.DurationVar(&cfg.CapacityDuration, "capacity-duration", 4*time.Second, "how long the capacity is measured")
	flag.Float64Var(&cfg.Capacity, "capacity", 0, "use this capacity (requests/s) instead of measuring it")
	flag.DurationVar(&cfg.Work, "work", 4*time.Millisecond, "CPU time of one request's work in the backend")
	flag.IntVar(&cfg.BackendProcs, "backend-procs", 1, "GOMAXPROCS of the backend process")
	flag.DurationVar(&cfg.Budget, "budget", 300*time.Millisecond, "every request's budget in the uniform and fan-out workloads")
	workloads := flag.String("workloads", strings.Join(overload.Workloads(), ","), "workloads to run, comma-separated")
	budgets := flag.String("budgets", "100ms:0.3,500ms:0.4,3s:0.3", "the mixed workload's budgets, as value:share pairs")
	costs := flag.String("costs", "1ms:0.7,20ms:0.3", "the mixed workload's CPU time a request in the backend, as value:share pairs")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the arrivals and classes")
	loads := flag.String("loads", "0.8,1.5,3", "offered loads, as multiples of the capacity, comma-separated")
	variants := flag.String("variants", strings.Join(overload.Variants(), ","), "variants to run, comma-separated")
	check := flag.Bool("check", false, "after the report, list the issue's targets the budget variant missed and exit 1 if any")
	flag.Parse()
	for _, s := range strings.Split(*loads, ",") {
		var l float64
		if _, err := fmt.Sscan(strings.TrimSpace(s), &l); err != nil {
			return fmt.Errorf("-loads: %q is not a number", s)
		}
		cfg.Loads = append(cfg.Loads, l)
	}
	for _, v := range strings.Split(*variants, ",") {
		cfg.Variants = append(cfg.Variants, strings.TrimSpace(v))
	}
	for _, w := range strings.Split(*workloads, ",") {
		cfg.Workloads = append(cfg.Workloads, strings.TrimSpace(w))
	}
	var err error
	if cfg.Budgets, err = overload.ParseMix(*budgets); err != nil {
		return fmt.Errorf("-budgets: %w", err)
	}
	if cfg.Costs, err = overload.ParseMix(*costs); err != nil {
		return fmt.Errorf("-costs: %w", err)
	}
	cfg.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := overload.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := rep.WriteTable(os.Stdout); err != nil {
		return err
	}
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if *svgOut != "" {
		f, err := os.Create(*svgOut)
		if err != nil {
			return err
		}
		if err := rep.WriteSVG(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if *check {
		if miss := rep.Misses(); len(miss) > 0 {
			return fmt.Errorf("%d targets missed:\n  %s", len(miss), strings.Join(miss, "\n  "))
		}
		fmt.Println("every target met")
	}
	return nil
}
