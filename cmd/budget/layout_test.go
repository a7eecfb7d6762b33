package main

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxMainLines is the most lines a file of package main may have: main
// parses the command and dispatches, and each command's logic lives in an
// internal package named after what it holds.
const maxMainLines = 150

// TestLayoutMainOnlyDispatches keeps package main small: no file of it, test
// files included, over maxMainLines.
func TestLayoutMainOnlyDispatches(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "\n"); n > maxMainLines {
			t.Errorf("%s has %d lines; package main keeps to %d: move its logic into an internal package", f, n, maxMainLines)
		}
	}
}

// TestLayoutMainHasNoGlobals checks that package main declares no
// package-level variable: what its files share (a logger, say) is passed
// to what needs it, not left where any file may change it.
func TestLayoutMainHasNoGlobals(t *testing.T) {
	t.Parallel()
	for name, f := range parseDir(t, ".") {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
				t.Errorf("%s declares package-level variables %v; pass them explicitly", name, declNames(g))
			}
		}
	}
}

// TestLayoutPackagesSayWhatTheyHold checks that every internal package has a
// package doc comment.
func TestLayoutPackagesSayWhatTheyHold(t *testing.T) {
	t.Parallel()
	dirs := internalDirs(t)
	if len(dirs) < 5 {
		t.Fatalf("found %d internal packages, want the demo's, sim's, audit's and topology's", len(dirs))
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		found := false
		for _, f := range parseDir(t, dir) {
			if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+f.Name.Name+" ") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no package doc comment (// Package %s ...)", dir, name)
		}
	}
}

// TestLayoutNoFileCycles checks that no two files of one package use each
// other's names, in package main and in every internal package: names flow
// one way between files, as between packages, so a file reads with the
// files it builds on and not with those built on it.
func TestLayoutNoFileCycles(t *testing.T) {
	t.Parallel()
	for _, dir := range append([]string{"."}, internalDirs(t)...) {
		files := parseDir(t, dir)
		declaredIn := map[string]string{} // top-level name -> file
		for name, f := range files {
			for _, d := range f.Decls {
				for _, n := range declNames(d) {
					declaredIn[n] = name
				}
			}
		}
		uses := map[string]map[string]string{} // file -> file it uses -> a name
		for name, f := range files {
			for _, id := range f.Unresolved {
				if g, ok := declaredIn[id.Name]; ok && g != name {
					if uses[name] == nil {
						uses[name] = map[string]string{}
					}
					uses[name][g] = id.Name
				}
			}
		}
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range uses {
				if !yield(n) {
					return
				}
			}
		})
		for _, a := range names {
			for b, via := range uses[a] {
				if back, ok := uses[b][a]; ok && a < b {
					t.Errorf("%s: %s uses %s's %s and %s uses %s's %s", dir, a, b, via, b, a, back)
				}
			}
		}
	}
}
