package httpbudget_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDebugPageInChromium opens /debug/budget in headless Chromium, as a
// person would, and checks that the op table and a waterfall are there and
// drawn. The screenshot is kept under $BUDGET_ARTIFACTS (default: a
// temporary directory) as debug-budget.png. Two Chromium launches take 10
// to 20 seconds on a shared machine; it runs with -short too.
func TestDebugPageInChromium(t *testing.T) {
	t.Parallel()
	bin := chromiumPath()
	if bin == "" {
		const msg = "chromium not found: install Debian's chromium package (apt-get install chromium)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	r := newDebugRig(t)
	r.traffic(t)
	url := r.srv.URL + "/debug/budget"
	artifacts := os.Getenv("BUDGET_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(artifacts, "debug-budget.png")
	if out, err := chromium(t, bin, "--screenshot="+shot, url); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	t.Logf("screenshot: %s", shot)
	checkScreenshot(t, shot, 1200, 1400, true)

	// On a phone-sized screen the tables scroll sideways in their boxes
	// rather than breaking words; the screenshot is kept to look at.
	narrow := filepath.Join(artifacts, "debug-budget-narrow.png")
	if out, err := chromium(t, bin, "--screenshot="+narrow, "--window-size=420,900", url); err != nil {
		t.Fatalf("chromium --screenshot (narrow): %v\n%s", err, out)
	}
	checkScreenshot(t, narrow, 420, 900, false) // the waterfalls are below its fold

	dom, err := chromium(t, bin, "--dump-dom", url)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, dom)
	}
	page := string(dom)
	for _, op := range []string{"geometry", "pricing", "slow", "fresh"} {
		if !regexp.MustCompile(`(?s)<table id="ops">.*<tr class="op" data-op="` + op + `">`).MatchString(page) {
			t.Errorf("the op table has no row for %s", op)
		}
	}
	if n := strings.Count(page, `<section class="waterfall">`); n != 4 {
		t.Errorf("%d waterfalls, want 4", n)
	}
	// The style attribute survived the template's escaping and the browser's
	// parsing: each bar has a position and a width.
	bars := regexp.MustCompile(`<div class="bar[^"]*" style="left: [0-9.]+%; width: [0-9.]+%;?"`).FindAllString(page, -1)
	if len(bars) < 6 {
		t.Errorf("%d positioned waterfall bars, want at least 6", len(bars))
	}
	if strings.Contains(page, "<script") {
		t.Error("the rendered page holds a script element")
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
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,1400"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}

// checkScreenshot checks that the screenshot has the window's size and is
// not blank: a page of tables and coloured bars has many distinct colours,
// and, when wantRed, the waterfall's red bars are among them.
func checkScreenshot(t *testing.T, path string, w, h int, wantRed bool) {
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
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	colours, red := colours(img)
	if colours < 30 {
		t.Errorf("screenshot has %d distinct colours; the page looks blank", colours)
	}
	if wantRed && !red {
		t.Error("no refused-event bar (#d05b5b) in the screenshot")
	}
}

func colours(img image.Image) (n int, red bool) {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := [3]uint32{r >> 8, g >> 8, bl >> 8}
			seen[c] = true
			if c == [3]uint32{0xd0, 0x5b, 0x5b} {
				red = true
			}
		}
	}
	return len(seen), red
}
