package sim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timebudget/budget/cmd/budget/internal/browsertest"
	"github.com/timebudget/budget/cmd/budget/internal/sim"
	"github.com/timebudget/budget/cmd/budget/internal/topology"
)

// TestReportRendersInChromium simulates the geo topology with a hung
// geometry service, opens its report.html in headless Chromium and checks
// that the table has a row per pattern and the three charts are there; the
// screenshot is kept as sim-report.png (see browsertest.ArtifactDir).
func TestReportRendersInChromium(t *testing.T) {
	t.Parallel()
	bin := browsertest.Chromium(t)
	top := load(t, "testdata/geo.yaml")
	cfg := sim.Config{Requests: 2000, Concurrency: 50, Seed: 7, Faults: []sim.Fault{{Service: "geometry", Kind: sim.Hang}}}
	results, err := sim.Run(top, cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, dom := render(t, bin, "testdata/geo.yaml", top, cfg, results, 1200, 2400)
	for _, p := range sim.Patterns {
		if !strings.Contains(dom, `<tr data-pattern="`+p.Key()+`">`) {
			t.Errorf("no table row for %s", p)
		}
	}
	if n := strings.Count(dom, `<svg role="img"`); n != 3 {
		t.Errorf("%d charts on the rendered page, want 3", n)
	}
	browsertest.Screenshot(t, bin, url, "sim-report.png", 1200, 2400)
}

// render writes the report of results as HTML, opens it in Chromium at
// width × height and returns its URL and the DOM Chromium built.
func render(t *testing.T, bin, path string, top *topology.Topology, cfg sim.Config, results []sim.Result, width, height int) (string, string) {
	t.Helper()
	rep := sim.NewReport(path, top.Entry, float64(top.Budget)/1e6, len(top.Names), cfg, results)
	page, err := rep.RenderHTML()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + file
	dom, err := browsertest.Run(t, bin, width, height, "--dump-dom", url)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, dom)
	}
	return url, string(dom)
}

// TestRecoveryReportRendersInChromium simulates the three-hop example with
// the database hung from 2 s to 5 s, opens its report in headless Chromium
// and checks that the recovery table has a row per pattern, every one with
// a first answer (none "never"); the first screen at 1280×800 is kept as
// sim-recovery.png.
func TestRecoveryReportRendersInChromium(t *testing.T) {
	t.Parallel()
	bin := browsertest.Chromium(t)
	top := load(t, "testdata/chain3.yaml")
	f, err := sim.ParseFault(top, "db=hang@2s-5s")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Requests: 20000, Concurrency: 100, Seed: 1, Faults: []sim.Fault{f}}
	results, err := sim.Run(top, cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, dom := render(t, bin, "testdata/chain3.yaml", top, cfg, results, 1280, 800)
	_, table, ok := strings.Cut(dom, `<table class="recovery">`)
	if !ok {
		t.Fatal("the rendered page has no recovery table")
	}
	table, _, _ = strings.Cut(table, "</table>")
	for _, p := range sim.Patterns {
		if !strings.Contains(table, `<tr data-pattern="`+p.Key()+`">`) {
			t.Errorf("no recovery row for %s", p)
		}
	}
	if strings.Contains(table, "never") {
		t.Errorf("a pattern never recovered:\n%s", table)
	}
	browsertest.Screenshot(t, bin, url, "sim-recovery.png", 1280, 800)
}
