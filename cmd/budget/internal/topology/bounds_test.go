package topology_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
	"github.com/timebudget/budget/cmd/budget/internal/topology/topologytest"
)

// hostile lists inputs that once took minutes, gigabytes or an overflow,
// with the error each must now give.
var hostile = []struct {
	name string
	data func() []byte
	want string
}{
	// 57 s and 2.7 GB before the node count.
	{"alias-bomb", func() []byte { return topologytest.AliasBomb(1_000) }, "x.yaml:104:8: with its aliases expanded the file holds more than 5000000 YAML nodes"},
	{"self-alias", func() []byte { return []byte("entry: a\nbudget: 1s\nservices:\n  a: &a {calls: [*a]}\n") }, "x.yaml:4:18: alias *a names a node that contains it"},
	{"long-sequence", topologytest.LongSequence, "x.yaml:5:18: service edge: its calls one after another can take more than 50 years in the worst case"},
	{"overflow", topologytest.Overflow, "x.yaml:5:18: service edge: its calls one after another can take more than 50 years in the worst case"},
	// Calls without a timeout run for the time their caller is given, known
	// only once the file is read.
	{"untimed-sequence", func() []byte {
		return []byte("entry: edge\nbudget: 1h\nservices:\n  db: {}\n  edge: {calls: [&k {to: db, retries: 100}" + strings.Repeat(", *k", 9_999) + "]}\n")
	}, "x.yaml:5:18: service edge: its calls one after another can take more than 50 years in the worst case"},
	{"deep-tail", func() []byte { return topologytest.DeepTail(40) }, "x.yaml:26:70: service l22: its p99 with its callees' adds up to more than 50 years"},
	// 1.6 GB in the decoder before the raw count: 16 MiB of tiny nodes.
	{"tiny-block-nodes", func() []byte { return []byte("a:\n" + strings.Repeat("- a\n", (topology.MaxFileSize-3)/4)) }, "x.yaml:500000:3: the file spells out more than 1000000 YAML nodes"},
	{"tiny-flow-nodes", func() []byte { return []byte("a: [" + strings.Repeat("a,", (topology.MaxFileSize-7)/2) + "a]\n") }, "the file spells out more than 1000000 YAML nodes"},
	{"tiny-null-nodes", func() []byte { return []byte("{" + strings.Repeat("a,", (topology.MaxFileSize-3)/2) + "a}\n") }, "the file spells out more than 1000000 YAML nodes"},
	{"second-document", func() []byte { return []byte("entry: a\nbudget: 1s\nservices: {a: {}}\n---\nentry: b\n") }, "x.yaml:4:1: a second YAML document; a topology file holds one"},
	{"second-empty-document", func() []byte { return []byte("entry: a\nbudget: 1s\nservices: {a: {}}\n---\n") }, "x.yaml:4:1: a second YAML document"},
	{"second-document-syntax", func() []byte { return []byte("entry: a\nbudget: 1s\nservices: {a: {}}\n---\n[\n") }, "bad YAML"},
	{"right-to-left-override", func() []byte { return topologytest.Named("db\u202egnp.exe") }, "may not contain bidirectional formatting characters"},
	{"isolate", func() []byte { return topologytest.Named("db\u2066x") }, "may not contain bidirectional formatting characters"},
	{"mark", func() []byte { return topologytest.Named("db\u200f") }, "may not contain bidirectional formatting characters"},
	{"arabic-letter-mark", func() []byte { return topologytest.Named("db\u061c") }, "may not contain bidirectional formatting characters"},
	{"c1-next-line", func() []byte { return topologytest.Named("db\u0085x") }, "may not contain spaces or control characters"},
	{"c1-csi", func() []byte { return topologytest.Named("db\u009b31m") }, "may not contain spaces or control characters"},
	{"c0-escape", func() []byte { return topologytest.Named("db\x1b[31m") }, "may not contain spaces or control characters"},
	{"local-bidi", func() []byte {
		return []byte("entry: a\nbudget: 1s\nservices:\n  a: {calls: [{to: b, timeout: 1ms, fallback: [{local: \"c\\u202e\", latency: {p50: 1ms, p99: 1ms}}]}]}\n  b: {}\n")
	}, `local: name "c\u202e": may not contain bidirectional formatting characters`},
}

func TestParseHostile(t *testing.T) {
	t.Parallel()
	for _, tt := range hostile {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := topology.Parse("x.yaml", tt.data())
			var te *topology.Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v, want a *topology.Error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestParseHostileCost holds each hostile input to 256 MB allocated. It
// does not run in parallel, so that the allocations counted are its own;
// its time is only logged (BenchmarkParseHostile measures it), with a
// bound generous enough for a busy machine running the race detector.
func TestParseHostileCost(t *testing.T) {
	for _, tt := range hostile {
		data := tt.data()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := topology.Parse("x.yaml", data)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%s: no error", tt.name)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes, %v, %d MB allocated", tt.name, len(data), took, alloc>>20)
		if alloc > 256<<20 {
			t.Errorf("%s: %d MB allocated, want at most 256", tt.name, alloc>>20)
		}
		if took > 20*time.Second {
			t.Errorf("%s: took %v", tt.name, took)
		}
	}
}

func BenchmarkParseHostile(b *testing.B) {
	for _, tt := range hostile {
		data := tt.data()
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := topology.Parse("x.yaml", data); err == nil {
					b.Fatal("no error")
				}
			}
		})
	}
}

func TestTotalCalls(t *testing.T) {
	t.Parallel()
	// 101 services naming one list of 10,000 calls: 1,010,000 calls in
	// 3,030,000 nodes, the first over the bound in the last service.
	var b strings.Builder
	b.WriteString("entry: s0\nbudget: 1s\nservices:\n  db: {}\n  s0: {calls: &c [&k {to: db}")
	for range 9_999 {
		b.WriteString(", *k")
	}
	b.WriteString("]}\n")
	for i := 1; i <= 100; i++ {
		b.WriteString("  s" + strings.Repeat("x", i) + ": {calls: *c}\n")
	}
	_, err := topology.Parse("x.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 1000000 calls in the file, fallbacks counted") {
		t.Fatalf("error %v", err)
	}
}

func TestReadFileRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk space, and refused from its size before a read.
	if err := f.Truncate(topology.MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tests := []struct{ name, path, want string }{
		{"directory", dir, "a directory, not a regular file"},
		{"huge", huge, "huge.yaml:1:1: file is larger than 16 MiB"},
		{"missing", filepath.Join(dir, "none.yaml"), "no such file"},
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		tests = append(tests, struct{ name, path, want string }{"dev-zero", "/dev/zero", "/dev/zero: a character device, not a regular file"})
	}
	tests = append(tests, fifoCase(t, dir)...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := topology.ReadFile(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestReadFileGood(t *testing.T) {
	t.Parallel()
	top, err := topology.ReadFile("testdata/good/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if top.Entry != "edge" {
		t.Errorf("entry %q", top.Entry)
	}
}

func BenchmarkParseReversedChain(b *testing.B) {
	data := topologytest.ReversedChain(topology.MaxServices)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := topology.Parse("chain.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}
