package budget_test

import (
	"go/ast"
	"go/build"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDocLinksResolve resolves every [Name] doc link in the documentation of
// every package in the repository (each module's, when the test runs in the
// clone), as go doc would: a link to a name of the same package, of one of
// the repository's packages or of the standard library must name something
// that exists. A renamed or removed name therefore fails here instead of
// leaving a dangling link. Links into third-party packages are not checked:
// their source is not at hand without their module.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	idx := &symbolIndex{pkgs: map[string]map[string]bool{}}
	var dirs []string
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && skippedDir(d.Name()) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			if dir := filepath.Dir(p); !seen[dir] {
				seen[dir] = true
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for _, dir := range dirs {
		pkg := parseDir(t, dir)
		for _, f := range pkg.files {
			for _, doc := range docsOf(f) {
				for _, l := range linksIn(doc.Text(), importsOf(f)) {
					links++
					if why := idx.resolve(dir, pkg.syms, l); why != "" {
						pos := pkg.fset.Position(doc.Pos())
						t.Errorf("%s: doc link %s: %s", pos, linkText(l), why)
					}
				}
			}
		}
	}
	if links < 100 {
		t.Fatalf("found only %d doc links in %d directories; the walk is broken", links, len(dirs))
	}
}

// skippedDir reports whether the go command ignores a directory by its name.
func skippedDir(name string) bool {
	return name == "testdata" || name == "vendor" || name == "node_modules" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

type parsedPkg struct {
	fset  *token.FileSet
	files []*ast.File
	syms  map[string]bool
}

// parseDir parses the non-test Go files of dir with their comments.
func parseDir(t *testing.T, dir string) parsedPkg {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := parsedPkg{fset: fset, syms: map[string]bool{}}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		p.files = append(p.files, f)
		addSymbols(p.syms, f)
	}
	return p
}

// addSymbols adds f's top-level names, methods (as "Type.Method") and struct
// fields and interface methods (as "Type.Name") to syms.
func addSymbols(syms map[string]bool, f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				syms[d.Name.Name] = true
				continue
			}
			syms[recvName(d.Recv.List[0].Type)+"."+d.Name.Name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					syms[s.Name.Name] = true
					var fields *ast.FieldList
					switch ty := s.Type.(type) {
					case *ast.StructType:
						fields = ty.Fields
					case *ast.InterfaceType:
						fields = ty.Methods
					}
					if fields != nil {
						for _, fl := range fields.List {
							for _, n := range fl.Names {
								syms[s.Name.Name+"."+n.Name] = true
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						syms[n.Name] = true
					}
				}
			}
		}
	}
}

// recvName returns the type name of a method receiver: T for T, *T, T[P].
func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// docsOf returns the doc comments go doc shows for f: the package's and
// every declaration's, field's and interface method's.
func docsOf(f *ast.File) []*ast.CommentGroup {
	var docs []*ast.CommentGroup
	add := func(g *ast.CommentGroup) {
		if g != nil {
			docs = append(docs, g)
		}
	}
	add(f.Doc)
	addFields := func(fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, fd := range fl.List {
			add(fd.Doc)
			add(fd.Comment)
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			add(d.Doc)
		case *ast.GenDecl:
			add(d.Doc)
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					add(s.Doc)
					switch ty := s.Type.(type) {
					case *ast.StructType:
						addFields(ty.Fields)
					case *ast.InterfaceType:
						addFields(ty.Methods)
					}
				case *ast.ValueSpec:
					add(s.Doc)
					add(s.Comment)
				}
			}
		}
	}
	return docs
}

// importsOf maps the names f imports packages under to their paths.
func importsOf(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, is := range f.Imports {
		p, err := strconv.Unquote(is.Path.Value)
		if err != nil {
			continue
		}
		name := path.Base(p)
		if is.Name != nil {
			name = is.Name.Name
		}
		m[name] = p
	}
	return m
}

// linksIn parses text as go doc does and returns its doc links, taking every
// [Name] for a link so that a dangling one is seen rather than left as text.
func linksIn(text string, imports map[string]string) []*comment.DocLink {
	p := &comment.Parser{
		LookupPackage: func(name string) (string, bool) {
			if ip, ok := imports[name]; ok {
				return ip, true
			}
			return comment.DefaultLookupPackage(name)
		},
		LookupSym: func(recv, name string) bool { return true },
	}
	var links []*comment.DocLink
	var walk func(ts []comment.Text)
	walk = func(ts []comment.Text) {
		for _, t := range ts {
			switch t := t.(type) {
			case *comment.DocLink:
				links = append(links, t)
			case *comment.Link:
				walk(t.Text)
			case *comment.Italic, comment.Plain:
			}
		}
	}
	for _, b := range p.Parse(text).Content {
		switch b := b.(type) {
		case *comment.Paragraph:
			walk(b.Text)
		case *comment.Heading:
			walk(b.Text)
		case *comment.List:
			for _, it := range b.Items {
				for _, c := range it.Content {
					if para, ok := c.(*comment.Paragraph); ok {
						walk(para.Text)
					}
				}
			}
		}
	}
	return links
}

func linkText(l *comment.DocLink) string {
	s := l.Name
	if l.Recv != "" {
		s = l.Recv + "." + s
	}
	if l.ImportPath != "" {
		if s == "" {
			return "[" + l.ImportPath + "]"
		}
		s = path.Base(l.ImportPath) + "." + s
	}
	return "[" + s + "]"
}

const repoModule = "github.com/timebudget/budget"

// symbolIndex finds and caches the exported names of packages other than the
// one a link is in.
type symbolIndex struct {
	pkgs map[string]map[string]bool // import path -> symbols, nil if not found
}

// resolve returns why link l, in the package in dir with symbols local, does
// not resolve, or "" when it does or cannot be checked.
func (x *symbolIndex) resolve(dir string, local map[string]bool, l *comment.DocLink) string {
	syms := local
	if l.ImportPath != "" {
		var ok bool
		syms, ok = x.lookup(l.ImportPath)
		if !ok {
			return "" // a third-party package: not checked
		}
		if syms == nil {
			return "no package " + l.ImportPath
		}
		if l.Name == "" {
			return ""
		}
	}
	name := l.Name
	if l.Recv != "" {
		name = l.Recv + "." + l.Name
	}
	if !syms[name] {
		return "no " + name + " is declared there"
	}
	return ""
}

// lookup returns the symbols of the package at import path p. ok is false
// for packages outside the repository and the standard library.
func (x *symbolIndex) lookup(p string) (syms map[string]bool, ok bool) {
	if s, seen := x.pkgs[p]; seen {
		return s, true
	}
	var dir string
	switch {
	case p == repoModule || strings.HasPrefix(p, repoModule+"/"):
		dir = filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(p, repoModule), "/"))
		if dir == "" {
			dir = "."
		}
	case !strings.Contains(strings.SplitN(p, "/", 2)[0], "."):
		bp, err := build.Default.Import(p, "", build.FindOnly)
		if err != nil {
			x.pkgs[p] = nil
			return nil, true
		}
		dir = bp.Dir
	default:
		return nil, false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		x.pkgs[p] = nil
		return nil, true
	}
	syms = map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		addSymbols(syms, f)
	}
	x.pkgs[p] = syms
	return syms, true
}
