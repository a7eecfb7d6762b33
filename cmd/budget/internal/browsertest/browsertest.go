// Package browsertest opens the command's reports in headless Chromium for
// tests, as a person would open them, and keeps screenshots as artifacts:
// under $BUDGET_ARTIFACTS when it is set (CI sets it), else in the module's
// out/screenshots, which git ignores. Tests skip when Chromium is absent,
// except under CI=true, where its absence fails them.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Chromium returns the path of Debian's chromium binary. It skips the test
// when there is none, and fails it under CI=true.
func Chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "chromium not found: install Debian's chromium package (apt-get install chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Run runs headless Chromium with a throwaway profile, no network features
// and a window w × h, and returns its standard output.
func Run(t *testing.T, bin string, w, h int, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), fmt.Sprintf("--window-size=%d,%d", w, h)}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}

// ArtifactDir returns the directory screenshots are kept in, created if
// missing: $BUDGET_ARTIFACTS, or out/screenshots beside the module's go.mod.
func ArtifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("BUDGET_ARTIFACTS")
	if dir == "" {
		root, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(root)
			if parent == root {
				t.Fatal("no go.mod above the test's directory")
			}
			root = parent
		}
		dir = filepath.Join(root, "out", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Screenshot renders url in a window w × h, writes the PNG as name in
// ArtifactDir, checks it (see Check) and returns its path.
func Screenshot(t *testing.T, bin, url, name string, w, h int) string {
	t.Helper()
	shot := filepath.Join(ArtifactDir(t), name)
	if out, err := Run(t, bin, w, h, "--screenshot="+shot, url); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	t.Logf("screenshot: %s", shot)
	Check(t, shot, w, h)
	return shot
}

// Check checks that the PNG at path is w × h and not blank: a page of
// tables and charts has at least 50 distinct colours.
func Check(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("screenshot %s is %dx%d, want %dx%d", path, b.Dx(), b.Dy(), w, h)
	}
	if n := distinctColours(img, 200); n < 50 {
		t.Errorf("screenshot %s has %d distinct colours; the page looks blank", path, n)
	}
}

// distinctColours counts the colours of every third pixel of every third
// row, up to limit.
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
