package sim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/timebudget/budget/cmd/budget/internal/browsertest"
	"github.com/timebudget/budget/cmd/budget/internal/sim"
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
	rep := sim.NewReport("testdata/geo.yaml", top.Entry, float64(top.Budget)/1e6, len(top.Names), cfg, results)
	page, err := rep.RenderHTML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + path
	dom, err := browsertest.Run(t, bin, 1200, 2400, "--dump-dom", url)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, dom)
	}
	for _, p := range sim.Patterns {
		if !strings.Contains(string(dom), `<tr data-pattern="`+p.Key()+`">`) {
			t.Errorf("no table row for %s", p)
		}
	}
	if n := strings.Count(string(dom), `<svg role="img"`); n != 3 {
		t.Errorf("%d charts on the rendered page, want 3", n)
	}
	browsertest.Screenshot(t, bin, url, "sim-report.png", 1200, 2400)
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
	rep := sim.NewReport("testdata/chain3.yaml", top.Entry, float64(top.Budget)/1e6, len(top.Names), cfg, results)
	page, err := rep.RenderHTML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + path
	dom, err := browsertest.Run(t, bin, 1280, 800, "--dump-dom", url)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, dom)
	}
	_, table, ok := strings.Cut(string(dom), `<table class="recovery">`)
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
