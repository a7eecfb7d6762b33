package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeInstallBlock checks that the README's install-from-a-clone
// block is where installFromReadme looks for it, builds the proxy with
// this command, and points GOPROXY at it; and that a README without the
// block, or with the marker and no block, is an error naming what is
// missing.
func TestReadmeInstallBlock(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, err := readmeInstall(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go run ./internal/releasecheck -proxy ../budget-proxy -proxy-only", "GOPROXY=\"file://", "GONOSUMDB=" + modulePrefix, "go install " + modulePrefix + "/cmd/budget@"} {
		if !strings.Contains(block, want) {
			t.Errorf("the block lacks %q:\n%s", want, block)
		}
	}
	for _, bad := range []string{"# no marker\n```sh\ngo get x\n```\n", readmeMarker + "\n\nno block\n", readmeMarker + "\n```sh\ngo get x\n"} {
		if _, err := readmeInstall(bad); err == nil {
			t.Errorf("readmeInstall(%q) = nil error", bad)
		}
	}
}
