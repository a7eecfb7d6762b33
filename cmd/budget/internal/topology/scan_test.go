package topology

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// decodedNodes counts the nodes the YAML decoder makes of data, aliases
// counted once.
func decodedNodes(t *testing.T, data []byte) int {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var count func(n *yaml.Node) int
	count = func(n *yaml.Node) int {
		c := 1
		for _, k := range n.Content {
			c += count(k)
		}
		return c
	}
	return count(&doc) - 1 // the document node is not spelled out
}

// TestSpelledNodesBoundTheDecoder checks that the raw count is at least the
// decoder's count, on every topology under testdata of the command's
// packages and on the shapes of YAML a topology uses, so that a file it
// lets through decodes within its bound.
func TestSpelledNodesBoundTheDecoder(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../*/testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../*/testdata/*/*.yaml")
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("found %d topology files", len(files))
	}
	inputs := map[string][]byte{
		"flow nulls":    []byte("a: {b, c, d: }\ne: [f, {g}]\n"),
		"block nulls":   []byte("a:\nb:\n  c:\n  d: [x]\n"),
		"sequences":     []byte("a:\n- b\n- c: d\n  e: f\n-\n- [g, h]\n"),
		"quoted":        []byte("a: \"b: c, [d]\"\ne: 'f '' g'\nh: \"i\\\"j\"\n"),
		"comments":      []byte("# a: b\na: b # c: [d, e]\n"),
		"anchors":       []byte("a: &x {b: c}\nd: *x\ne: [*x, *x]\n"),
		"empty flow":    []byte("a: {}\nb: []\n"),
		"multi-word":    []byte("a: b c d\n"),
		"flow key only": []byte("{a, b, c}\n"),
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = data
	}
	for name, data := range inputs {
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil {
			continue // a file of bad YAML: the decoder refuses it anyway
		}
		spelled, _, _ := spelledNodes(data, 1<<30)
		if decoded := decodedNodes(t, data); spelled < decoded {
			t.Errorf("%s: counted %d nodes on the raw bytes, the decoder makes %d", name, spelled, decoded)
		}
	}
}

// chain is a chain of n services, each calling the next, as the
// longest file within MaxServices spells it.
func chain(n int) []byte {
	var b strings.Builder
	b.WriteString("entry: s0\nbudget: 1h\nservices:\n")
	for i := range n {
		b.WriteString("  s" + strconv.Itoa(i) + ": {calls: [{to: s" + strconv.Itoa(i+1) + ", timeout: 1ms}]}\n")
	}
	return []byte(b.String())
}

// TestSpelledNodesOfTheLongestChain checks that the raw count of a chain
// is exact (9 nodes a service, 7 more), so the 100,000-service chain
// MaxServices allows stays within MaxSpelledNodes.
func TestSpelledNodesOfTheLongestChain(t *testing.T) {
	t.Parallel()
	small := chain(1000)
	if spelled, decoded := must(spelledNodes(small, 1<<30)), decodedNodes(t, small); spelled != decoded || decoded != 9*1000+7 {
		t.Errorf("1,000 services: counted %d nodes, the decoder makes %d, want %d", spelled, decoded, 9*1000+7)
	}
	spelled, _, over := spelledNodes(chain(MaxServices), MaxSpelledNodes)
	if over || spelled != 9*MaxServices+7 {
		t.Errorf("%d services: counted %d nodes (over %d: %v), want %d", MaxServices, spelled, MaxSpelledNodes, over, 9*MaxServices+7)
	}
}

func must(n int, _ Pos, _ bool) int { return n }
