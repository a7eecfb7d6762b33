package budget_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoModuleImportsRootInternal: no package of a nested module (grpcbudget,
// connectbudget, otelbudget, ...) imports a package under the root module's
// internal/. Go lets it, since they share a path prefix, but it is an
// unversioned contract between modules that minimum version selection can
// break: grpcbudget v0.3.1 built with a later root whose internal/ changed.
// What adapters share is public (package edge and edge/pick).
func TestNoModuleImportsRootInternal(t *testing.T) {
	t.Parallel()
	const internal = "github.com/timebudget/budget/internal/"
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || moduleOf(path) == "." {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, internal) {
				t.Errorf("%s (module %s) imports %s, an internal package of the root module", path, moduleOf(path), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// moduleOf returns the directory of the go.mod that governs path.
func moduleOf(path string) string {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil || dir == "." {
			return dir
		}
	}
}
