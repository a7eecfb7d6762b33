package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// A release is one tagged version of one module.
type release struct {
	Tag     string // "v0.1.0" for the root, "grpcbudget/v0.1.0" for a nested module
	Dir     string // the module's directory in the repository, "" for the root
	Path    string // the module path
	Version string // "v0.1.0"
	Commit  string // the full commit hash the tag names
}

// readManifest reads .ci/releases and checks each line against the
// repository: the commit exists, the module's go.mod at that commit declares
// the expected path, and a tag of that name, where the clone has one, points
// at the same commit. Tags of module versions that the file does not list are
// an error too, so the file stays the whole record.
func readManifest(repo string) ([]release, error) {
	data, err := os.ReadFile(filepath.Join(repo, manifestPath))
	if err != nil {
		return nil, fmt.Errorf("reading the list of releases: %w", err)
	}
	var rs []release
	var bad []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d", manifestPath, n)
		f := strings.Fields(line)
		if len(f) != 2 {
			bad = append(bad, fmt.Sprintf("%s: want \"TAG COMMIT\", got %q", where, line))
			continue
		}
		r, err := parseTag(f[0])
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		if seen[r.Tag] {
			bad = append(bad, fmt.Sprintf("%s: %s is listed twice", where, r.Tag))
			continue
		}
		seen[r.Tag] = true
		commit, err := git(repo, "rev-parse", "-q", "--verify", f[1]+"^{commit}")
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: commit %s of %s is not in this clone", where, f[1], r.Tag))
			continue
		}
		r.Commit = commit
		if tagged, err := git(repo, "rev-parse", "-q", "--verify", "refs/tags/"+r.Tag+"^{commit}"); err == nil && tagged != commit {
			bad = append(bad, fmt.Sprintf("%s: tag %s points at %s, but the file says %s", where, r.Tag, tagged, commit))
			continue
		}
		gomod, err := gitBytes(repo, "show", commit+":"+path.Join(r.Dir, "go.mod"))
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %s has no go.mod at %s", where, r.Tag, commit[:12]))
			continue
		}
		if got := modfile.ModulePath(gomod); got != r.Path {
			bad = append(bad, fmt.Sprintf("%s: %s's go.mod declares module %q, want %q", where, r.Tag, got, r.Path))
			continue
		}
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	tags, err := git(repo, "tag", "--list")
	if err != nil {
		return nil, err
	}
	for _, t := range strings.Fields(tags) {
		if _, err := parseTag(t); err == nil && !seen[t] {
			bad = append(bad, fmt.Sprintf("tag %s is not listed in %s", t, manifestPath))
		}
	}
	if len(rs) == 0 && len(bad) == 0 {
		bad = append(bad, manifestPath+" lists no release")
	}
	if err := errList("the list of releases does not hold", bad); err != nil {
		return nil, err
	}
	return rs, nil
}

// parseTag splits a module version tag into its directory and version.
func parseTag(tag string) (release, error) {
	dir, v := "", tag
	if i := strings.LastIndex(tag, "/"); i >= 0 {
		dir, v = tag[:i], tag[i+1:]
	}
	if !semver.IsValid(v) || semver.Canonical(v) != v || semver.Build(v) != "" {
		return release{}, fmt.Errorf("tag %q: %q is not a canonical semantic version such as v0.1.0", tag, v)
	}
	if dir != "" && (path.Clean(dir) != dir || strings.HasPrefix(dir, ".") || strings.HasPrefix(dir, "/")) {
		return release{}, fmt.Errorf("tag %q: %q is not a clean directory of the repository", tag, dir)
	}
	p := modulePrefix
	if dir != "" {
		p += "/" + dir
	}
	return release{Tag: tag, Dir: dir, Path: p, Version: v}, nil
}

// newest returns, for each module, its newest listed release.
func newest(rs []release) []release {
	best := map[string]release{}
	var order []string
	for _, r := range rs {
		b, ok := best[r.Path]
		if !ok {
			order = append(order, r.Path)
		}
		if !ok || semver.Compare(r.Version, b.Version) > 0 {
			best[r.Path] = r
		}
	}
	out := make([]release, 0, len(order))
	for _, p := range order {
		out = append(out, best[p])
	}
	return out
}
