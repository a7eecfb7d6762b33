package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// demoMain runs "budget demo" and returns the exit code.
func demoMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseDemoFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, demoUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "budget demo: %v\nRun 'budget demo --help' for usage.\n", err)
		return 2
	}
	if cfg.has(checkoutScenario.key) {
		cfg.postgres, cfg.dbNote = resolvePostgres(ctx, cfg.postgres, os.Getenv(postgresEnv))
	}
	stopPage := serveLivePage(cfg, stderr)
	defer stopPage()
	rep, err := runDemo(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "budget demo: %v\n", err)
		return 1
	}
	writeTable(stdout, rep)
	paths, err := writeReports(cfg.out, rep)
	if err != nil {
		fmt.Fprintf(stderr, "budget demo: %v\n", err)
		return 1
	}
	for _, p := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	return 0
}
