package main

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReportRendersInChromium opens report.html in headless Chromium, as a
// person would, and checks that the page shows the tables and the charts. The
// screenshot is kept under $BUDGET_ARTIFACTS (default: a temporary directory).
func TestReportRendersInChromium(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		const msg = "chromium not found: install Debian's chromium package (apt-get install chromium)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	rep, dir := smallRun(t)
	url := "file://" + filepath.Join(dir, "report.html")
	artifacts := os.Getenv("BUDGET_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifacts, "report.png")

	if out, err := chromium(t, bin, "--screenshot="+shot, url); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	t.Logf("screenshot: %s", shot)
	checkScreenshot(t, shot)

	dom, err := chromium(t, bin, "--dump-dom", url)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, dom)
	}
	page := string(dom)
	if !strings.Contains(page, `data-rendered="yes"`) {
		t.Fatal("the page's load handler did not run; the dump is not of a rendered page")
	}
	for _, s := range rep.Scenarios {
		for _, p := range s.Patterns {
			row := regexp.MustCompile(`(?s)<section class="scenario" id="scenario-` + s.Name + `">.*?<tr data-pattern="` + regexp.QuoteMeta(p.Key) + `">`)
			if !row.MatchString(page) {
				t.Errorf("no table row for %s, %s", s.Name, p.Name)
			}
		}
	}
	if n := strings.Count(page, `<tr data-variant=`); n != len(overloadVariants) {
		t.Errorf("%d overload rows, want %d", n, len(overloadVariants))
	}
	imgs := regexp.MustCompile(`<img [^>]*class="chart"[^>]*>`).FindAllString(page, -1)
	wantCharts := len(rep.Scenarios) + 1 + len(rep.Ledgers)
	if len(imgs) != wantCharts {
		t.Errorf("%d charts on the page, want %d", len(imgs), wantCharts)
	}
	attr := func(tag, name string) int {
		m := regexp.MustCompile(name + `="(\d+)`).FindStringSubmatch(tag)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for _, img := range imgs {
		w, h := attr(img, "data-rendered-width"), attr(img, "data-rendered-height")
		if w < 300 || h < 100 {
			t.Errorf("a chart was drawn %dx%d, want a visible size: %.120s", w, h, img)
		}
		if attr(img, "data-natural") == 0 {
			t.Errorf("a chart's image did not decode: %.120s", img)
		}
	}
}

// chromiumPath returns Debian's chromium binary, or "" when there is none.
func chromiumPath() string {
	for _, name := range []string{"/usr/bin/chromium", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chromium runs headless Chromium with a throwaway profile and no network
// features, and returns its standard output.
func chromium(t *testing.T, bin string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,2000"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}

// checkScreenshot checks that the screenshot has the window's size and is not
// blank: a page of tables and charts has many distinct colours.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 2000 {
		t.Errorf("screenshot is %dx%d, want 1200x2000", b.Dx(), b.Dy())
	}
	if n := distinctColours(img, 200); n < 50 {
		t.Errorf("screenshot has %d distinct colours; the page looks blank", n)
	}
}

func distinctColours(img image.Image, limit int) int {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}
