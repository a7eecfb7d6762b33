package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a git repository in a temporary directory holding files
// (path → content), all committed.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is not on PATH: %v", err)
	}
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "files"},
	} {
		if _, err := git(dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheckTreeFindsWhatStopsARelease(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		"go.mod":                           "module " + modulePrefix + "\n\ngo 1.26\n",
		"a.go":                             "package budget\n",
		"wire/testdata/fuzz/FuzzX/nul":     "go test fuzz v1\n",
		"wire/testdata/fuzz/FuzzX/fine":    "go test fuzz v1\n",
		"examples/big.bin":                 strings.Repeat("x", maxTrackedSize+1),
		"pgxbudget/go.mod":                 "module " + modulePrefix + "/pgxbudget\n\ngo 1.26\n\nrequire " + modulePrefix + " v0.0.0\n\nreplace " + modulePrefix + " => ../\n",
		"pgxbudget/p.go":                   "package pgxbudget\n",
		"grpcbudget/go.mod":                "module " + modulePrefix + "/grpcbudget\n\ngo 1.26\n\nrequire " + modulePrefix + " v0.1.0\n",
		"grpcbudget/testdata/AUX.txt":      "x",
		"grpcbudget/internal/x/Case.go":    "package x\n",
		"grpcbudget/internal/x/case.go":    "package x\n",
		"sqlbudget/internal/dt/go.mod":     "module " + modulePrefix + "/sqlbudget/internal/dt\n\ngo 1.26\n",
		"sqlbudget/internal/dt/ok_test.go": "package dt\n",
	})
	rel := []release{{Tag: "v0.1.0", Path: modulePrefix, Version: "v0.1.0"}}
	err := checkTree(repo, rel)
	if err == nil {
		t.Fatal("checkTree passed a tree that cannot be released")
	}
	for _, want := range []string{
		`wire/testdata/fuzz/FuzzX/nul`,
		`examples/big.bin: 1048577 bytes`,
		`pgxbudget/go.mod:7: replace ` + modulePrefix,
		`pgxbudget/go.mod:5: requires ` + modulePrefix + ` v0.0.0, which is not a release`,
		`grpcbudget/testdata/AUX.txt`,
		`grpcbudget/internal/x/`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q:\n%v", want, err)
		}
	}
	for _, clean := range []string{"FuzzX/fine", "grpcbudget/go.mod", "sqlbudget"} {
		if strings.Contains(err.Error(), clean) {
			t.Errorf("the error names %q, which is fine:\n%v", clean, err)
		}
	}
}

func TestCheckTreePassesACleanTree(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		"go.mod":            "module " + modulePrefix + "\n\ngo 1.26\n",
		"a.go":              "package budget\n",
		"grpcbudget/go.mod": "module " + modulePrefix + "/grpcbudget\n\ngo 1.26\n\nrequire " + modulePrefix + " v0.1.0\n",
		"grpcbudget/g.go":   "package grpcbudget\n",
	})
	rel := []release{{Tag: "v0.1.0", Path: modulePrefix, Version: "v0.1.0"}}
	if err := checkTree(repo, rel); err != nil {
		t.Fatal(err)
	}
}

func TestParseTag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tag, dir, path string
		ok             bool
	}{
		{"v0.1.0", "", modulePrefix, true},
		{"grpcbudget/v0.1.0", "grpcbudget", modulePrefix + "/grpcbudget", true},
		{"cmd/budget/v1.2.3", "cmd/budget", modulePrefix + "/cmd/budget", true},
		{"v0.1", "", "", false},
		{"v0.1.0+meta", "", "", false},
		{"grpcbudget/0.1.0", "", "", false},
		{"../x/v0.1.0", "", "", false},
		{"a//b/v0.1.0", "", "", false},
		{"latest", "", "", false},
	} {
		r, err := parseTag(tc.tag)
		if (err == nil) != tc.ok || (tc.ok && (r.Dir != tc.dir || r.Path != tc.path)) {
			t.Errorf("parseTag(%q) = %+v, %v", tc.tag, r, err)
		}
	}
}

func TestReadManifestAgainstTags(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{
		"go.mod": "module " + modulePrefix + "\n\ngo 1.26\n",
	})
	head, _ := git(repo, "rev-parse", "HEAD")
	write := func(s string) {
		if err := os.MkdirAll(filepath.Join(repo, ".ci"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, manifestPath), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// No tags in the clone: the commits alone are enough.
	write("# comment\nv0.1.0 " + head + "\n")
	if rs, err := readManifest(repo); err != nil || len(rs) != 1 || rs[0].Commit != head {
		t.Fatalf("readManifest = %+v, %v", rs, err)
	}
	// A tag that is not listed, and a listed tag that points elsewhere.
	if _, err := git(repo, "tag", "v0.2.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := readManifest(repo); err == nil || !strings.Contains(err.Error(), "tag v0.2.0 is not listed") {
		t.Fatalf("an unlisted tag: %v", err)
	}
	write("v0.1.0 " + head + "\nv0.2.0 " + strings.Repeat("0", 40) + "\n")
	if _, err := readManifest(repo); err == nil || !strings.Contains(err.Error(), "is not in this clone") {
		t.Fatalf("a commit the clone lacks: %v", err)
	}
	write("")
	if _, err := readManifest(repo); err == nil || !strings.Contains(err.Error(), "not listed") {
		t.Fatalf("an empty list with a tag: %v", err)
	}
}
