package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cleanCloneCommand is one go command a user or a developer runs in a
// clone: its arguments, and the directory it runs in, relative to the
// clone's root.
type cleanCloneCommand struct {
	dir  string
	args []string
}

func (c cleanCloneCommand) String() string {
	return "(cd " + c.dir + " && go " + strings.Join(c.args, " ") + ")"
}

// cleanCloneCommands lists the go commands of TestCleanCloneStaysClean for
// the clone at root: go doc at the root and in every module, go build, go
// vet and go test in every module, and go run of every command under cmd/
// and compare/cmd/.
//
// Builds, vets, tests and runs are given -n: the go command then loads the
// packages, and with them the workspace's module graph and every checksum
// it needs (which is what writes go.work.sum), exactly as the real command
// does, but compiles nothing, so the test takes seconds rather than the
// minutes a cold build of every module takes in a fresh clone.
func cleanCloneCommands(t *testing.T, root string) []cleanCloneCommand {
	t.Helper()
	out, err := git(root, "ls-files", "go.mod", "*/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var modules []string
	for _, f := range strings.Fields(out) {
		m := filepath.ToSlash(filepath.Dir(f))
		if m != "." {
			m = "./" + m
		}
		modules = append(modules, m)
	}
	slices.Sort(modules)
	cmds := []cleanCloneCommand{{".", []string{"doc", "./pgxbudget"}}}
	for _, m := range modules {
		cmds = append(cmds,
			cleanCloneCommand{m, []string{"doc"}},
			cleanCloneCommand{m, []string{"build", "-n", "./..."}},
			cleanCloneCommand{m, []string{"vet", "-n", "./..."}},
			cleanCloneCommand{m, []string{"test", "-n", "./..."}},
		)
	}
	for _, parent := range []string{"cmd", "compare/cmd", "cmd/budget/cmd"} {
		entries, err := os.ReadDir(filepath.Join(root, parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				cmds = append(cmds, cleanCloneCommand{".", []string{"run", "-n", "./" + parent + "/" + e.Name(), "--help"}})
			}
		}
	}
	return cmds
}

// TestCleanCloneStaysClean clones the repository's committed HEAD into a
// temporary directory and runs there every go command a user or a
// developer runs in a clone (cleanCloneCommands), checking after each that
// git status is still empty: a go command in a nested module once added
// about 90 lines to go.work.sum, the checksums of modules only the
// workspace's module graph names, because the committed file lacked them.
// The fix is a complete go.work.sum; .ci/release refreshes it.
func TestCleanCloneStaysClean(t *testing.T) {
	src, err := git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		t.Fatalf("this test clones the repository it runs in, and found no git checkout: %v", err)
	}
	src = strings.TrimSpace(src)
	head, err := git(src, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "budget")
	if _, err := git(".", "clone", "-q", "--no-checkout", src, clone); err != nil {
		t.Fatal(err)
	}
	if _, err := git(clone, "checkout", "-q", strings.TrimSpace(head)); err != nil {
		t.Fatal(err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOWORK=") || strings.HasPrefix(kv, "GOFLAGS=")
	})
	cmds := cleanCloneCommands(t, clone)
	t.Logf("%d commands, each followed by git status --porcelain:", len(cmds))
	for _, c := range cmds {
		t.Log(c)
		cmd := exec.Command("go", c.args...)
		cmd.Dir = filepath.Join(clone, c.dir)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil && !(c.args[0] == "doc" && c.dir != ".") {
			// go doc in a module whose root holds no package fails;
			// the others must work.
			t.Errorf("%s: %v\n%s", c, err, out)
		}
		status, err := git(clone, "status", "--porcelain")
		if err != nil {
			t.Fatal(err)
		}
		if status != "" {
			diff, _ := git(clone, "diff", "--stat")
			t.Fatalf("%s left the clone dirty:\n%s\n%s", c, status, diff)
		}
	}
}
