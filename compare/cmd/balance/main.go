// Command balance compares gRPC load balancers on callers with deadlines:
// three replicas on loopback, one of which turns slow (10 times its 5 ms
// latency) midway and then recovers, and callers whose budgets are drawn
// uniformly between 20 ms and 500 ms (with -fault CODE, replica 0 fails
// every call at once with that code instead of turning slow). It runs
// grpc-go's round_robin, least_request, weighted_round_robin (with ORCA
// reports) and pick_first, and grpcbudget's budget_aware, one after the
// other in one process, prints a table and, with -json, writes the figures
// to a file:
//
//	go run ./compare/cmd/balance -json balance.json
//
// See package github.com/timebudget/budget/compare/internal/balance for what
// each figure means.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/timebudget/budget/compare/internal/balance"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "balance:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("balance", flag.ContinueOnError)
	jsonPath := fs.String("json", "", "write the figures as JSON to this file")
	var cfg balance.Config
	fs.DurationVar(&cfg.Base, "base", 5*time.Millisecond, "a replica's latency")
	fs.IntVar(&cfg.SlowFactor, "slow-factor", 10, "how many times slower the slow replica turns")
	fs.IntVar(&cfg.Workers, "workers", 16, "callers in a closed loop")
	fs.DurationVar(&cfg.Healthy, "healthy", 3*time.Second, "length of the healthy phase, per variant, measured in slices of 250 ms taking the variants in turn")
	fs.DurationVar(&cfg.Slow, "slow", 3*time.Second, "length of the slow phase")
	fs.DurationVar(&cfg.Recovered, "recovered", 2*time.Second, "length of the phase after recovery")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the budgets' draws")
	fs.StringVar(&cfg.Fault, "fault", "slow", "what replica 0 does in the slow phase: slow, or fail every call at once with deadline_exceeded, unknown, resource_exhausted, unavailable or internal")
	variants := fs.String("variants", strings.Join(balance.Variants, ","), "the balancers to compare, comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Variants = strings.Split(*variants, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := balance.Compare(ctx, cfg)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tin_budget\tp99_ms\tsent_to_slow\trecovery_ms\thealthy_p50_ms\thealthy_rps\tcalls\t")
	for _, r := range rep.Runs {
		fmt.Fprintf(tw, "%s\t%.2f %%\t%.1f\t%.2f %%\t%.0f\t%.2f\t%.0f\t%d\t\n", r.Variant, 100*r.InBudget, r.P99Ms,
			100*r.SentToSlow, r.RecoveryMs, r.HealthyP50Ms, r.HealthyRPS, r.Calls)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *jsonPath == "" {
		return nil
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
}
