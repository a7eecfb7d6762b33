// Package conformance runs connect's own conformance suite
// (connectrpc.com/conformance) against connect-go with connectbudget's
// interceptors installed, and against plain connect-go as the baseline:
// the suite's reference client against the server under test, and the
// client under test against the suite's reference server, for the Connect,
// gRPC and gRPC-Web protocols (config.yaml), the suite's timeout and
// deadline-propagation cases included.
//
// It is a module of its own so that the suite's dependencies stay out of
// connectbudget's go.mod. The servers and clients under test live in
// connectbudget/internal/sut and depend on connect-go alone.
package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// build compiles the suite's runner and the programs under test into dir.
func build(t *testing.T, dir string) {
	t.Helper()
	run := func(where string, env []string, args ...string) {
		cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, args...)...)
		cmd.Dir = where
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, out)
		}
	}
	// The suite's tools build from this module alone: in the workspace,
	// other modules' newer gRPC would meet the suite's old genproto.
	run(".", []string{"GOWORK=off"}, "connectrpc.com/conformance/cmd/connectconformance")
	run(filepath.Join("..", ".."), nil, "./internal/sut/cmd/server", "./internal/sut/cmd/client")
}

var (
	totalRE  = regexp.MustCompile(`(?m)^Total cases: (\d+)$`)
	resultRE = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed`)
)

type outcome struct{ total, passed, failed int }

// suite runs connectconformance in mode against the program under test.
// With clean, every case must pass; without it (the plain baseline) the
// failures are only logged: plain connect-go's server has been seen to fail
// a timeout case on a busy machine (its deadline firing while it wrote the
// error), which the answer margin of connectbudget's interceptor avoids.
func suite(t *testing.T, bin, mode string, clean bool, program ...string) outcome {
	t.Helper()
	args := []string{"--mode", mode, "--conf", "config.yaml"}
	if testing.Short() {
		// The cases this module exists for, in about a tenth of the time:
		// make test's second pass (GOWORK=off, -short) runs these.
		args = append(args, "--run", "Timeouts/**", "--run", "Deadline Propagation/**")
	}
	args = append(args, "--")
	args = append(args, program...)
	cmd := exec.Command(filepath.Join(bin, "connectconformance"), args...)
	out, err := cmd.CombinedOutput()
	total, result := totalRE.FindSubmatch(out), resultRE.FindSubmatch(out)
	if total == nil || result == nil {
		t.Fatalf("connectconformance %v: %v, and no summary:\n%s", args, err, out)
	}
	var o outcome
	o.total, _ = strconv.Atoi(string(total[1]))
	o.passed, _ = strconv.Atoi(string(result[1]))
	o.failed, _ = strconv.Atoi(string(result[2]))
	if (err != nil || o.failed > 0) && !clean {
		t.Logf("baseline: connectconformance --mode %s %v: %d of %d cases failed (%v):\n%s", mode, program, o.failed, o.total, err, out)
	} else if err != nil || o.failed > 0 {
		t.Errorf("connectconformance --mode %s %v: %d of %d cases failed (%v):\n%s", mode, program, o.failed, o.total, err, out)
	}
	return o
}

func TestConformance(t *testing.T) {
	bin := t.TempDir()
	build(t, bin)
	server, client := filepath.Join(bin, "server"), filepath.Join(bin, "client")
	for _, mode := range []string{"server", "client"} {
		program := server
		if mode == "client" {
			program = client
		}
		// One run at a time, baseline first: the suite runs its cases in
		// parallel already. "-streams" adds per-message budgets and idle
		// timeouts (10 s, beyond every delay of the suite) to the
		// interceptors, so that the stream wrappers meet every case too.
		plain := suite(t, bin, mode, false, program, "-plain")
		for _, variant := range [][]string{{program}, {program, "-streams"}} {
			ours := suite(t, bin, mode, true, variant...)
			t.Logf("%s mode %v: with connectbudget %d of %d cases pass; plain connect-go %d of %d",
				mode, variant[1:], ours.passed, ours.total, plain.passed, plain.total)
			if ours.total != plain.total || ours.passed < plain.passed {
				t.Errorf("%s mode %v: with connectbudget %d of %d cases pass, fewer than plain connect-go's %d of %d",
					mode, variant[1:], ours.passed, ours.total, plain.passed, plain.total)
			}
			if ours.passed == 0 {
				t.Errorf("%s mode %v: no case ran", mode, variant[1:])
			}
		}
	}
}
