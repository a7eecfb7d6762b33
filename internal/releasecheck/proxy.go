package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// sum is the go.sum pair of one release.
type sum struct {
	release
	Zip, Mod string // "h1:..." hashes of the zip and of the go.mod
}

// buildProxy writes a directory module proxy (the layout GOPROXY=file://
// reads) holding every release, and returns each release's go.sum hashes.
func buildProxy(repo, dir string, releases []release) ([]sum, error) {
	lists := map[string][]string{}
	var sums []sum
	for _, r := range releases {
		ep, err := module.EscapePath(r.Path)
		if err != nil {
			return nil, err
		}
		vdir := filepath.Join(dir, filepath.FromSlash(ep), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return nil, err
		}
		base := filepath.Join(vdir, r.Version)
		gomod, err := gitBytes(repo, "show", r.Commit+":"+path.Join(r.Dir, "go.mod"))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(base+".mod", gomod, 0o644); err != nil {
			return nil, err
		}
		when, err := git(repo, "show", "-s", "--format=%cI", r.Commit)
		if err != nil {
			return nil, err
		}
		info, _ := json.Marshal(struct{ Version, Time string }{r.Version, when})
		if err := os.WriteFile(base+".info", info, 0o644); err != nil {
			return nil, err
		}
		if err := writeZip(base+".zip", repo, r); err != nil {
			return nil, err
		}
		zh, err := dirhash.HashZip(base+".zip", dirhash.Hash1)
		if err != nil {
			return nil, err
		}
		mh, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(gomod)), nil
		})
		if err != nil {
			return nil, err
		}
		sums = append(sums, sum{release: r, Zip: zh, Mod: mh})
		lists[vdir] = append(lists[vdir], r.Version)
	}
	for vdir, vs := range lists {
		sort.Strings(vs)
		if err := os.WriteFile(filepath.Join(vdir, "list"), []byte(strings.Join(vs, "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return sums, nil
}

// writeZip writes the module zip of r as the public proxy would make it from
// the tagged commit; a file name that module zips reject fails here.
func writeZip(name, repo string, r release) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	err = modzip.CreateFromVCS(f, module.Version{Path: r.Path, Version: r.Version}, repo, r.Commit, r.Dir)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: the module zip cannot be made: %w", r.Tag, err)
	}
	return nil
}

// checkSums compares the releases' hashes with what the module cache already
// holds for the same versions (a moved tag would otherwise be tested from a
// stale copy) and with every go.sum in the working tree that lists them.
func checkSums(repo string, sums []sum) error {
	want := map[string]string{}
	for _, s := range sums {
		want[s.Path+" "+s.Version] = s.Zip
		want[s.Path+" "+s.Version+"/go.mod"] = s.Mod
	}
	var bad []string
	if cache := goEnv("GOMODCACHE"); cache != "" {
		for _, s := range sums {
			ep, _ := module.EscapePath(s.Path)
			got, err := os.ReadFile(filepath.Join(cache, "cache", "download", filepath.FromSlash(ep), "@v", s.Version+".ziphash"))
			if err == nil && strings.TrimSpace(string(got)) != s.Zip {
				bad = append(bad, fmt.Sprintf("the module cache holds %s@%s as %s, but the release is %s: a tag was moved after it was fetched; remove that version from %s", s.Path, s.Version, strings.TrimSpace(string(got)), s.Zip, cache))
			}
		}
	}
	out, err := gitBytes(repo, "ls-files", "-z", "--", "go.sum", "*/go.sum")
	if err != nil {
		return err
	}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for n := 1; sc.Scan(); n++ {
			fl := strings.Fields(sc.Text())
			if len(fl) != 3 {
				continue
			}
			if h, ok := want[fl[0]+" "+fl[1]]; ok && h != fl[2] {
				bad = append(bad, fmt.Sprintf("%s:%d: %s %s is %s, but the release is %s", f, n, fl[0], fl[1], fl[2], h))
			}
		}
	}
	return errList("checksums disagree with the releases", bad)
}

// goEnv returns the value of one go env variable, or "" when go cannot say.
func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
