package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// readmeMarker precedes the README's block of shell commands that install
// from a clone; the release check runs that block as it stands.
const readmeMarker = "<!-- releasecheck: make release-check runs this block as it stands, in a fresh clone -->"

// readmeInstall returns the README's install-from-a-clone block: the ```sh
// block right after readmeMarker.
func readmeInstall(readme string) (string, error) {
	_, after, ok := strings.Cut(readme, readmeMarker)
	if !ok {
		return "", errors.New("README.md has no install-from-a-clone block (the line " + readmeMarker + " before a ```sh block)")
	}
	after = strings.TrimLeft(after, "\n")
	body, ok := strings.CutPrefix(after, "```sh\n")
	if !ok {
		return "", errors.New("README.md: no ```sh block right after " + readmeMarker)
	}
	block, _, ok := strings.Cut(body, "```\n")
	if !ok {
		return "", errors.New("README.md: the install-from-a-clone block is not closed")
	}
	return block, nil
}

// installFromReadme plays a stranger who follows the README's "from a
// clone" instructions word for word: in a scratch directory it clones the
// repository as budget, makes a module myservice beside it, and runs the
// README's block there with bash (set -eu), with no workspace and no proxy
// settings of its own; then it runs the budget command the block
// installed. The block must name the newest release of the root module.
func installFromReadme(repo string, releases []release) error {
	raw, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		return err
	}
	block, err := readmeInstall(string(raw))
	if err != nil {
		return err
	}
	for _, r := range newest(releases) {
		if r.Path == modulePrefix && !strings.Contains(block, modulePrefix+"@"+r.Version) {
			return fmt.Errorf("README.md's install-from-a-clone block does not install %s, the newest release:\n%s", r.Version, block)
		}
	}
	work, err := os.MkdirTemp("", "budget-readme-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if _, err := git(work, "clone", "-q", repo, "budget"); err != nil {
		return err
	}
	service := filepath.Join(work, "myservice")
	if err := os.Mkdir(service, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(service, "go.mod"), []byte("module example.com/myservice\n\ngo 1.26\n"), 0o644); err != nil {
		return err
	}
	bin := filepath.Join(work, "bin")
	env := readmeEnv(bin)
	cmd := exec.Command("bash", "-euc", block)
	cmd.Dir = work
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("README.md's install-from-a-clone block, run as it stands: %w\n%s\n%s", err, block, out)
	}
	out, err := exec.Command(filepath.Join(bin, "budget"), "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "budget") {
		return fmt.Errorf("budget --help, installed by README.md's install-from-a-clone block: %v\n%s", err, out)
	}
	fmt.Printf("release: README.md's install-from-a-clone block ran as it stands in a fresh clone:\n%s", indent(block))
	return nil
}

// readmeEnv is the environment of a stranger at a shell: none of the go
// settings the repository's own runs set (the block sets what it needs),
// and GOBIN in the scratch directory so the installed command is found.
func readmeEnv(bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOWORK", "GOFLAGS", "GOPROXY", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOBIN", "GOTOOLCHAIN":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOBIN="+bin, "GOTOOLCHAIN=local")
}

// indent prefixes each line of s with two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}
