package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// installAsStranger plays a user outside the repository: a scratch module
// that go gets the newest release of every library module, builds and runs a
// program importing every public package of them, and go installs the
// commands and runs budget --help.
func installAsStranger(repo, proxy string, releases []release) error {
	work, err := os.MkdirTemp("", "budget-stranger-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "bin")

	env := strangerEnv(proxy, bin)
	var gets, imports, commands []string
	for _, r := range newest(releases) {
		pkgs, mains, err := packagesOf(repo, r)
		if err != nil {
			return err
		}
		commands = append(commands, mains...)
		if len(pkgs) > 0 {
			gets = append(gets, r.Path+"@"+r.Version)
			imports = append(imports, pkgs...)
		}
	}
	sort.Strings(imports)

	var src strings.Builder
	src.WriteString("// Command importall imports every public package of every budget module.\npackage main\n\nimport (\n")
	for _, p := range imports {
		fmt.Fprintf(&src, "\t_ %q\n", p)
	}
	src.WriteString(")\n\nfunc main() {}\n")
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte("module example.com/stranger\n\ngo 1.26\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte(src.String()), 0o644); err != nil {
		return err
	}

	steps := [][]string{
		append([]string{"go", "get"}, gets...),
		{"go", "mod", "tidy"},
		{"go", "build", "-o", filepath.Join(bin, "importall"), "."},
		{filepath.Join(bin, "importall")},
	}
	for _, c := range commands {
		steps = append(steps, []string{"go", "install", c})
	}
	for _, s := range steps {
		if err := runIn(work, env, s...); err != nil {
			return err
		}
	}
	fmt.Printf("release: a scratch module outside the repository fetched %s and built a program importing %d packages\n", strings.Join(gets, " "), len(imports))

	cmd := exec.Command(filepath.Join(bin, "budget"), "--help")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "budget") {
		return fmt.Errorf("budget --help, installed with go install: %v\n%s", err, out)
	}
	fmt.Printf("release: go install %s; budget --help runs\n", strings.Join(commands, " "))
	return nil
}

// strangerEnv is the environment of a user outside the repository: no
// workspace, the local proxy ahead of the usual one, and no checksum database
// for modules it has never seen.
func strangerEnv(proxy, bin string) []string {
	upstream := goEnv("GOPROXY")
	if upstream == "" || upstream == "off" {
		upstream = "https://proxy.golang.org,direct"
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOWORK", "GOFLAGS", "GOPROXY", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOBIN", "GOTOOLCHAIN":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GOWORK=off",
		"GOFLAGS=",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+upstream,
		"GONOSUMDB="+modulePrefix,
		"GOBIN="+bin,
		"GOTOOLCHAIN=local",
	)
}

func runIn(dir string, env []string, args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// packagesOf lists the importable packages of release r (every directory with
// Go files outside internal/ and testdata/ that is not a command) and its
// commands as "path@version" for go install.
func packagesOf(repo string, r release) (pkgs, mains []string, err error) {
	args := []string{"ls-tree", "-r", "--name-only", r.Commit}
	if r.Dir != "" {
		args = append(args, "--", r.Dir+"/")
	}
	out, err := git(repo, args...)
	if err != nil {
		return nil, nil, err
	}
	files := strings.Split(out, "\n")
	nested := map[string]bool{}
	for _, f := range files {
		if path.Base(f) == "go.mod" && path.Dir(f) != orDot(r.Dir) {
			nested[path.Dir(f)] = true
		}
	}
	kind := map[string]string{} // directory -> "main" or "lib"
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || inNested(orDot(r.Dir), f, nested) {
			continue
		}
		d := path.Dir(f)
		if _, done := kind[d]; done || hidden(d) {
			continue
		}
		src, err := gitBytes(repo, "show", r.Commit+":"+f)
		if err != nil {
			return nil, nil, err
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.PackageClauseOnly)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", r.Tag, err)
		}
		if af.Name.Name == "main" {
			kind[d] = "main"
		} else if !strings.HasSuffix(af.Name.Name, "_test") {
			kind[d] = "lib"
		}
	}
	for d, k := range kind {
		rel, _ := within(orDot(r.Dir), d)
		if d == orDot(r.Dir) {
			rel = ""
		}
		p := path.Join(r.Path, rel)
		if k == "main" {
			mains = append(mains, p+"@"+r.Version)
		} else if !strings.Contains("/"+rel+"/", "/internal/") {
			pkgs = append(pkgs, p)
		}
	}
	sort.Strings(pkgs)
	sort.Strings(mains)
	return pkgs, mains, nil
}

// hidden reports whether the go command ignores directory d for packages:
// testdata, and names starting with "." or "_".
func hidden(d string) bool {
	for _, e := range strings.Split(d, "/") {
		if e == "testdata" || strings.HasPrefix(e, ".") || strings.HasPrefix(e, "_") {
			return true
		}
	}
	return false
}

func orDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}
