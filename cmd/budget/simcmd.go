package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/sim"
)

// simMain runs "budget sim" and returns the exit code.
func simMain(args []string, stdout, stderr io.Writer) int {
	f, err := parseSimFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, sim.Usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "budget sim: %v\nRun 'budget sim --help' for usage.\n", err)
		return 2
	}
	top, err := readTopology(f.file)
	if err != nil {
		fmt.Fprintf(stderr, "budget sim: %v\n", err)
		return 2
	}
	if cyc, pos := top.Cycle(); cyc != nil {
		fmt.Fprintf(stderr, "budget sim: %s:%d:%d: calls form a cycle %s, which cannot be simulated\n",
			f.file, pos.Line, pos.Col, strings.Join(cyc, " -> "))
		return 2
	}
	for _, s := range f.faults {
		ft, err := sim.ParseFault(top, s)
		if err != nil {
			fmt.Fprintf(stderr, "budget sim: --fault %v\n", err)
			return 2
		}
		f.cfg.Faults = append(f.cfg.Faults, ft)
	}
	if err := f.cfg.Validate(top); err != nil {
		fmt.Fprintf(stderr, "budget sim: %s: %v\n", f.file, err)
		var we *sim.WorkError
		if errors.As(err, &we) {
			fmt.Fprintf(stderr, "budget sim: fewer --requests, or --max-calls %d to run it anyway\n", we.Calls)
		}
		return 2
	}
	start := time.Now()
	results, err := sim.Run(top, f.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "budget sim: %s: %v\n", f.file, err)
		return 2
	}
	rep := sim.NewReport(f.file, top.Entry, float64(top.Budget)/1e6, len(top.Names), f.cfg, results)
	rep.WallSeconds = time.Since(start).Seconds()
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "budget sim: %v\n", err)
		return 1
	}
	if err := writeSimReports(rep, f.out, stdout); err != nil {
		fmt.Fprintf(stderr, "budget sim: %v\n", err)
		return 1
	}
	return 0
}

// writeSimReports writes report.json and report.html into dir and says
// where on stdout.
func writeSimReports(rep *sim.Report, dir string, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	html, err := rep.RenderHTML()
	if err != nil {
		return err
	}
	jsonPath := filepath.Join(dir, "report.json")
	jf, err := os.Create(jsonPath)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(jf); err != nil {
		jf.Close()
		return err
	}
	if err := jf.Close(); err != nil {
		return err
	}
	htmlPath := filepath.Join(dir, "report.html")
	if err := os.WriteFile(htmlPath, html, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s\nwrote %s\n", htmlPath, jsonPath)
	return nil
}
