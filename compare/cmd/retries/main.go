// Command retries measures what retries cost across hops: a chain of three
// callers over loopback (the client, a front hop and a middle hop, each
// retrying up to 3 attempts) in front of a dependency that (a) fails every
// call at once, (b) hangs, (c) fails 30 % of calls, or (d) makes a side
// effect and then does not answer in time (the payment case). The variants
// are naive retries, failsafe-go's retry policy with its retry budget,
// grpc-go's retry policy with retryThrottling, and budget as a user writes
// it (see variants.go). For each it reports the calls that reached the
// dependency per offered request (amplification; naive retries make up to
// 27), the side effects made twice or more, the share of requests answered
// with success within their budget, and the 99th percentile latency.
//
// From the repository root:
//
//	go run ./compare/cmd/retries [-json FILE] [-check] [-requests 200] [-concurrency 20] [-budget 500ms] [-variants ...] [-faults ...]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// config is one run of the harness.
type config struct {
	Requests    int           // offered requests per variant and fault
	Concurrency int           // requests in flight at once
	Budget      time.Duration // every request's budget at the client
	Seed        uint64        // seed of the flaky dependency's failures
	Variants    []string
	Faults      []string
}

// result is one variant under one fault, as the JSON report holds it.
type result struct {
	Variant       string  `json:"variant"`
	Fault         string  `json:"fault"`
	Offered       int     `json:"offered"`
	CallsAtBottom int     `json:"calls_at_bottom"`
	Amplification float64 `json:"amplification"`
	Duplicates    int     `json:"duplicates"`
	InBudget      float64 `json:"in_budget"`
	P99ms         float64 `json:"p99_ms"`
}

type report struct {
	Runs []result `json:"runs"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "retries:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("retries", flag.ContinueOnError)
	var cfg config
	jsonOut := fs.String("json", "", "also write the report as JSON to `file`")
	check := fs.Bool("check", false, "after the report, list the targets the budget variant missed and exit 1 if any")
	fs.IntVar(&cfg.Requests, "requests", 200, "offered requests per variant and fault")
	fs.IntVar(&cfg.Concurrency, "concurrency", 20, "requests in flight at once")
	fs.DurationVar(&cfg.Budget, "budget", 500*time.Millisecond, "every request's budget (deadline) at the client")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the flaky dependency's failures")
	vs := fs.String("variants", strings.Join(variantNames(), ","), "variants to run, comma-separated")
	fl := fs.String("faults", strings.Join(faults, ","), "faults to run, comma-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Variants, cfg.Faults = split(*vs), split(*fl)
	if cfg.Requests < 1 || cfg.Concurrency < 1 || cfg.Budget <= 0 {
		return fmt.Errorf("-requests, -concurrency and -budget must be positive")
	}
	rep, err := measure(context.Background(), cfg)
	if err != nil {
		return err
	}
	if err := rep.writeTable(out); err != nil {
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
	if *check {
		if miss := rep.misses(); len(miss) > 0 {
			return fmt.Errorf("%d targets missed:\n  %s", len(miss), strings.Join(miss, "\n  "))
		}
		fmt.Fprintln(out, "every target met")
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func variantNames() []string {
	var names []string
	for _, v := range variants {
		names = append(names, v.name)
	}
	return names
}

// measure runs every variant under every fault of cfg.
func measure(ctx context.Context, cfg config) (report, error) {
	var rep report
	for _, name := range cfg.Variants {
		i := slices.IndexFunc(variants, func(v variant) bool { return v.name == name })
		if i < 0 {
			return rep, fmt.Errorf("unknown variant %q (known: %s)", name, strings.Join(variantNames(), ", "))
		}
		for _, fault := range cfg.Faults {
			if !slices.Contains(faults, fault) {
				return rep, fmt.Errorf("unknown fault %q (known: %s)", fault, strings.Join(faults, ", "))
			}
			r, err := measureOne(ctx, cfg, variants[i], fault)
			if err != nil {
				return rep, fmt.Errorf("%s under %s: %w", name, fault, err)
			}
			rep.Runs = append(rep.Runs, r)
		}
	}
	return rep, nil
}

// measureOne offers cfg.Requests requests to a new chain of v over a
// dependency with fault, cfg.Concurrency at a time.
func measureOne(ctx context.Context, cfg config, v variant, fault string) (result, error) {
	b := newBottom(fault, cfg.Seed)
	ch, err := v.build(cfg, b)
	if err != nil {
		return result{}, err
	}
	defer ch.close()
	lat := make([]time.Duration, cfg.Requests)
	ok := make([]bool, cfg.Requests)
	next := make(chan int)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for i := range next {
				start := time.Now()
				err := ch.top(ctx, "req-"+strconv.Itoa(i))
				lat[i] = time.Since(start)
				ok[i] = err == nil && lat[i] <= cfg.Budget
			}
		})
	}
	for i := range cfg.Requests {
		next <- i
	}
	close(next)
	wg.Wait()
	inBudget := 0
	for _, o := range ok {
		if o {
			inBudget++
		}
	}
	slices.Sort(lat)
	calls := int(b.calls.Load())
	return result{
		Variant:       v.name,
		Fault:         fault,
		Offered:       cfg.Requests,
		CallsAtBottom: calls,
		Amplification: float64(calls) / float64(cfg.Requests),
		Duplicates:    b.duplicates(),
		InBudget:      float64(inBudget) / float64(cfg.Requests),
		P99ms:         float64(lat[(len(lat)*99+99)/100-1]) / float64(time.Millisecond),
	}, nil
}

func (r report) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tvariant\toffered\tcalls at bottom\tamplification\tduplicates\tin budget\tp99 ms\t")
	for _, f := range faults {
		for _, x := range r.Runs {
			if x.Fault == f {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2fx\t%d\t%.1f%%\t%.0f\t\n", x.Fault, x.Variant, x.Offered,
					x.CallsAtBottom, x.Amplification, x.Duplicates, 100*x.InBudget, x.P99ms)
			}
		}
	}
	return tw.Flush()
}

// misses lists the targets the budget variant missed: amplification at
// most 1.1x under (a) and (b); under (c) at most 1.3x and an in-budget
// share at least every other variant's; no duplicated side effect under
// (d).
func (r report) misses() []string {
	var miss []string
	for _, x := range r.Runs {
		if x.Variant != "budget" {
			continue
		}
		switch x.Fault {
		case faultFail, faultHang:
			if x.Amplification > 1.1 {
				miss = append(miss, fmt.Sprintf("%s: amplification %.2fx > 1.1x", x.Fault, x.Amplification))
			}
		case faultFlaky:
			if x.Amplification > 1.3 {
				miss = append(miss, fmt.Sprintf("%s: amplification %.2fx > 1.3x", x.Fault, x.Amplification))
			}
			for _, p := range r.Runs {
				if p.Fault == faultFlaky && p.InBudget > x.InBudget {
					miss = append(miss, fmt.Sprintf("%s: in budget %.1f%% < %s's %.1f%%", x.Fault, 100*x.InBudget, p.Variant, 100*p.InBudget))
				}
			}
		case faultPayment:
			if x.Duplicates > 0 {
				miss = append(miss, fmt.Sprintf("%s: %d duplicated side effects", x.Fault, x.Duplicates))
			}
		}
	}
	return miss
}
