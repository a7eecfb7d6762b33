package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/topology"
	"github.com/timebudget/budget/cmd/budget/internal/topology/topologytest"
)

// hostileCase is an input that once took minutes or gigabytes, overflowed
// or was silently misread, with what audit and sim must now say.
type hostileCase struct {
	name string
	cmd  string   // audit or sim
	args []string // before FILE
	file string   // FILE, when not written from data
	data []byte
	want string // on stderr, after "budget CMD: "
}

func hostileCases(t testing.TB, dir string) []hostileCase {
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(topology.MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	bomb := topologytest.AliasBomb(1_000)
	cases := []hostileCase{
		// 57 s and 2.7 GB.
		{name: "alias-bomb", cmd: "audit", data: bomb, want: "alias-bomb.yaml:104:8: with its aliases expanded the file holds more than 5000000 YAML nodes"},
		{name: "alias-bomb-sim", cmd: "sim", data: bomb, want: "more than 5000000 YAML nodes"},
		// fatal error: out of memory.
		{name: "directory", cmd: "audit", file: dir, want: "a directory, not a regular file"},
		{name: "huge", cmd: "audit", file: huge, want: "huge.yaml:1:1: file is larger than 16 MiB"},
		// 7.5 s for 10 requests; the default 100,000 would take 20 hours.
		{name: "fanout-sim", cmd: "sim", data: topologytest.Fanout(1_000), want: "the run could make 400400400000 calls (4 patterns × 100000 requests × up to 1001001 calls per request, every retry and fallback counted), more than the 5000000000 allowed"},
		{name: "fanout-sim-max-calls", cmd: "sim", args: []string{"--requests", "10", "--max-calls", "1000"}, data: topologytest.Fanout(1_000), want: "more than the 1000 allowed"},
		// worst case at a -7610744073709ms.
		{name: "overflow", cmd: "audit", data: topologytest.Overflow(), want: "overflow.yaml:5:18: service edge: its calls one after another can take more than 50 years in the worst case"},
		{name: "long-sequence", cmd: "audit", data: topologytest.LongSequence(), want: "long-sequence.yaml:5:18: service edge: its calls one after another can take more than 50 years in the worst case"},
		{name: "deep-tail", cmd: "audit", data: topologytest.DeepTail(40), want: "deep-tail.yaml:26:70: service l22: its p99 with its callees' adds up to more than 50 years"},
		{name: "bidi", cmd: "audit", data: topologytest.Named("db\u202egnp.exe"), want: `name "db\u202egnp.exe": may not contain bidirectional formatting characters`},
		{name: "c1", cmd: "sim", data: topologytest.Named("db\u009b2J"), want: `name "db\u009b2J": may not contain spaces or control characters`},
		{name: "second-document", cmd: "audit", data: []byte("entry: a\nbudget: 1s\nservices: {a: {}}\n---\nentry: b\n"), want: "second-document.yaml:4:1: a second YAML document; a topology file holds one"},
	}
	cases = append(cases, specialFiles(t, dir)...)
	for i := range cases {
		if cases[i].file == "" {
			cases[i].file = write(cases[i].name+".yaml", cases[i].data)
		}
	}
	return cases
}

func runHostile(t *testing.T, c hostileCase) {
	var stdout, stderr bytes.Buffer
	args := append([]string{c.cmd}, c.args...)
	if c.cmd == "sim" {
		args = append(args, "--out", t.TempDir())
	}
	code := run(append(args, c.file), &stdout, &stderr)
	if code != 2 {
		t.Fatalf("%s: exit code %d, want 2; stderr:\n%s", c.name, code, stderr.String())
	}
	if msg := stderr.String(); !strings.HasPrefix(msg, "budget "+c.cmd+": ") || !strings.Contains(msg, c.want) {
		t.Errorf("%s: stderr does not say %q:\n%s", c.name, c.want, msg)
	}
	if stdout.Len() > 0 {
		t.Errorf("%s: stdout should be empty:\n%.500s", c.name, stdout.String())
	}
}

func TestHostileInputs(t *testing.T) {
	t.Parallel()
	for _, c := range hostileCases(t, t.TempDir()) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runHostile(t, c)
		})
	}
}

// TestHostileInputsCost runs each hostile input alone (the test is not
// parallel) and holds it to 256 MB allocated, from reading the file to the
// exit status. Its time is logged, and bounded only loosely: the machine
// may be busy and the race detector on.
func TestHostileInputsCost(t *testing.T) {
	for _, c := range hostileCases(t, t.TempDir()) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		runHostile(t, c)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %v, %d MB allocated", c.name, took, alloc>>20)
		if alloc > 256<<20 {
			t.Errorf("%s: %d MB allocated, want at most 256", c.name, alloc>>20)
		}
		if took > 20*time.Second {
			t.Errorf("%s: took %v", c.name, took)
		}
	}
}
