package vet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeServicePassesVet is the regression test for the README's
// example service failing budget vet (a user's requests sent with http.Get,
// its servers started with http.Serve and no ReadHeaderTimeout): it takes
// the "Build a service" block out of README.md, puts it in place of
// examples/service/main.go (in memory: nothing is written) and runs every
// check over it. The example must pass the tool the README recommends.
func TestReadmeServicePassesVet(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const open = "```go\n// Command service is"
	i := strings.Index(string(readme), open)
	if i < 0 {
		t.Fatal("README.md has no \"Build a service\" block starting " + open[6:])
	}
	block, _, ok := strings.Cut(string(readme[i+len("```go\n"):]), "```\n")
	if !ok {
		t.Fatal("the README's service block is not closed")
	}
	dir, err := filepath.Abs(filepath.Join(root, "examples", "service"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), dir, map[string][]byte{filepath.Join(dir, "main.go"): []byte(block)}, []string{"."}, Analyzers)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Findings {
		t.Errorf("README example: %s", f)
	}
	if res.Packages == 0 || res.Files == 0 {
		t.Errorf("nothing was checked: %s", res.Summary(len(Analyzers)))
	}
}
