package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/timebudget/budget/cmd/budget/internal/demo"
	"github.com/timebudget/budget/cmd/budget/internal/postgres"
	"github.com/timebudget/budget/cmd/budget/internal/report"
	"github.com/timebudget/budget/cmd/budget/internal/scenario"
)

// demoMain runs "budget demo" and returns the exit code.
func demoMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := demo.ParseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, demo.Usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "budget demo: %v\nRun 'budget demo --help' for usage.\n", err)
		return 2
	}
	if cfg.Has(scenario.Checkout.Key) {
		cfg.Postgres, cfg.DBNote = postgres.Resolve(ctx, cfg.Postgres, os.Getenv(postgres.Env))
	}
	stopPage := demo.ServeLivePage(cfg, stderr)
	defer stopPage()
	rep, err := demo.Run(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "budget demo: %v\n", err)
		return 1
	}
	report.WriteTable(stdout, rep)
	paths, err := report.WriteFiles(cfg.Out, rep)
	if err != nil {
		fmt.Fprintf(stderr, "budget demo: %v\n", err)
		return 1
	}
	for _, p := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	return 0
}
