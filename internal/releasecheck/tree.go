package main

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	modzip "golang.org/x/mod/zip"
)

// maxTrackedSize is the largest file the repository may track: anything
// bigger is a built binary or a data dump that every clone and every module
// zip would carry.
const maxTrackedSize = 1 << 20

// checkTree checks the files git tracks in the working tree: their sizes,
// that every module's files are valid in a module zip, and every go.mod.
func checkTree(repo string, releases []release) error {
	out, err := gitBytes(repo, "ls-files", "-z")
	if err != nil {
		return err
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	var bad []string
	modDirs := map[string]bool{}
	for _, f := range files {
		fi, err := os.Lstat(filepath.Join(repo, f))
		if err != nil {
			continue // deleted in the working tree, not yet committed
		}
		if fi.Mode().IsRegular() && fi.Size() > maxTrackedSize {
			bad = append(bad, fmt.Sprintf("%s: %d bytes, over the 1 MB a tracked file may have", f, fi.Size()))
		}
		if path.Base(f) == "go.mod" {
			modDirs[path.Dir(f)] = true
		}
	}

	released := map[string]bool{}
	for _, r := range releases {
		released[r.Path+"@"+r.Version] = true
	}
	dirs := make([]string, 0, len(modDirs))
	for d := range modDirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		bad = append(bad, checkModuleFiles(repo, d, files, modDirs)...)
		bad = append(bad, checkGoMod(repo, d, released)...)
	}
	return errList("the tree cannot be released", bad)
}

// checkModuleFiles runs the module zip rules (names Windows and the go command
// accept, no case-folding collisions, size limits) over the tracked files of
// the module in dir.
func checkModuleFiles(repo, dir string, files []string, modDirs map[string]bool) []string {
	var zf []modzip.File
	for _, f := range files {
		rel, ok := within(dir, f)
		if !ok || inNested(dir, f, modDirs) {
			continue
		}
		zf = append(zf, trackedFile{rel: rel, abs: filepath.Join(repo, f)})
	}
	// CheckFiles also returns the findings below as one error; they are
	// reported one by one instead, with paths from the repository's root.
	cf, _ := modzip.CheckFiles(zf)
	var bad []string
	for _, fe := range cf.Invalid {
		bad = append(bad, fmt.Sprintf("%s: %v", path.Join(dir, fe.Path), fe.Err))
	}
	if cf.SizeError != nil {
		bad = append(bad, fmt.Sprintf("%s: %v", dir, cf.SizeError))
	}
	return bad
}

// checkGoMod reads dir/go.mod: no replace directive, and every requirement of
// a budget module names a listed release.
func checkGoMod(repo, dir string, released map[string]bool) []string {
	name := path.Join(dir, "go.mod")
	data, err := os.ReadFile(filepath.Join(repo, name))
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", name, err)}
	}
	mf, err := modfile.Parse(name, data, nil)
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	for _, r := range mf.Replace {
		bad = append(bad, fmt.Sprintf("%s:%d: replace %s: go install refuses a module with replace directives; go.work ties the modules together", name, r.Syntax.Start.Line, r.Old.Path))
	}
	for _, r := range mf.Require {
		p := r.Mod.Path
		if p != modulePrefix && !strings.HasPrefix(p, modulePrefix+"/") {
			continue
		}
		if !released[p+"@"+r.Mod.Version] {
			bad = append(bad, fmt.Sprintf("%s:%d: requires %s %s, which is not a release listed in %s", name, r.Syntax.Start.Line, p, r.Mod.Version, manifestPath))
		}
	}
	return bad
}

// within reports whether the slash path f lies in dir, and its path relative
// to dir.
func within(dir, f string) (string, bool) {
	if dir == "." {
		return f, true
	}
	if rel, ok := strings.CutPrefix(f, dir+"/"); ok {
		return rel, true
	}
	return "", false
}

// inNested reports whether f belongs to a module nested below dir.
func inNested(dir, f string, modDirs map[string]bool) bool {
	for d := path.Dir(f); d != dir && d != "."; d = path.Dir(d) {
		if modDirs[d] {
			return true
		}
	}
	return false
}

// trackedFile is a file of the working tree as golang.org/x/mod/zip sees it.
type trackedFile struct{ rel, abs string }

func (f trackedFile) Path() string                 { return f.rel }
func (f trackedFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f trackedFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
