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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// build compiles the suite's runner and the programs under test into dir,
// both builds at once.
func build(t *testing.T, dir string) {
	t.Helper()
	run := func(where string, env []string, args ...string) error {
		cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, args...)...)
		cmd.Dir = where
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %v: %v\n%s", args, err, out)
		}
		return nil
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	// The suite's tools build from this module alone: in the workspace,
	// other modules' newer gRPC would meet the suite's old genproto.
	wg.Go(func() {
		errs[0] = run(".", []string{"GOWORK=off"}, "connectrpc.com/conformance/cmd/connectconformance")
	})
	wg.Go(func() {
		errs[1] = run(filepath.Join("..", ".."), nil, "./internal/sut/cmd/server", "./internal/sut/cmd/client")
	})
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// failedLines returns the suite's FAILED lines in out.
func failedLines(out []byte) string {
	return strings.Join(failedRE.FindAllString(string(out), -1), "\n")
}

// onlyTimeouts reports whether every case that failed in out is one of the
// suite's timeout cases.
func onlyTimeouts(out []byte) bool {
	failed := failedRE.FindAllStringSubmatch(string(out), -1)
	for _, f := range failed {
		if !strings.HasPrefix(f[1], "Timeouts/") {
			return false
		}
	}
	return len(failed) > 0
}

var (
	failedRE = regexp.MustCompile(`(?m)^FAILED: (\S+)`)
	totalRE  = regexp.MustCompile(`(?m)^Total cases: (\d+)$`)
	resultRE = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed`)
)

// run is one run of the suite: connectconformance in a mode against one
// variant of the program under test.
type run struct {
	mode    string
	variant []string // the program and its flags
	clean   bool     // every case must pass (not the plain baseline)

	out                   []byte
	err                   error // connectconformance's exit status
	found                 bool  // out has the suite's summary
	total, passed, failed int
}

// do runs the suite. It is safe to call from any goroutine: what it found
// is reported by check, on the test's.
func (r *run) do(bin string) {
	args := []string{"--mode", r.mode, "--conf", "config.yaml"}
	if testing.Short() {
		// The cases this module exists for, in about a tenth of the time:
		// make test's second pass (GOWORK=off, -short) runs these.
		args = append(args, "--run", "Timeouts/**", "--run", "Deadline Propagation/**")
	}
	args = append(args, "--")
	args = append(args, r.variant...)
	r.out, r.err = exec.Command(filepath.Join(bin, "connectconformance"), args...).CombinedOutput()
	total, result := totalRE.FindSubmatch(r.out), resultRE.FindSubmatch(r.out)
	if total == nil || result == nil {
		return
	}
	r.found = true
	r.total, _ = strconv.Atoi(string(total[1]))
	r.passed, _ = strconv.Atoi(string(result[1]))
	r.failed, _ = strconv.Atoi(string(result[2]))
}

// check reports r's outcome. Without clean (the plain baseline) the
// failures are only logged: plain connect-go's server has been seen to fail
// a timeout case on a busy machine (its deadline firing while it wrote the
// error), which the answer margin of connectbudget's interceptor avoids.
func (r *run) check(t *testing.T) {
	t.Helper()
	switch {
	case !r.found:
		t.Errorf("connectconformance --mode %s %v: %v, and no summary:\n%s", r.mode, r.variant, r.err, r.out)
	case (r.err != nil || r.failed > 0) && !r.clean:
		t.Logf("baseline: connectconformance --mode %s %v: %d of %d cases failed (%v):\n%s", r.mode, r.variant, r.failed, r.total, r.err, r.out)
	case r.err != nil || r.failed > 0:
		t.Errorf("connectconformance --mode %s %v: %d of %d cases failed (%v):\n%s", r.mode, r.variant, r.failed, r.total, r.err, r.out)
	}
}

func TestConformance(t *testing.T) {
	bin := t.TempDir()
	build(t, bin)
	for _, mode := range []string{"server", "client"} {
		program := filepath.Join(bin, mode)
		// The baseline, then connectbudget's interceptors alone and with
		// "-streams", which adds per-message budgets and idle timeouts
		// (10 s, beyond every delay of the suite), so that the stream
		// wrappers meet every case too.
		runs := []*run{
			{mode: mode, variant: []string{program, "-plain"}},
			{mode: mode, variant: []string{program}, clean: true},
			{mode: mode, variant: []string{program, "-streams"}, clean: true},
		}
		if mode == "server" {
			// One run at a time: the suite's reference client runs its
			// cases in parallel already, and keeps a core busy doing so.
			for _, r := range runs {
				r.do(bin)
			}
		} else {
			// The three runs at once: the client under test runs eight
			// cases at a time, and a run mostly waits on the suite's
			// delays (under half a core each; three at once take about
			// the wall time of one).
			var wg sync.WaitGroup
			for _, r := range runs {
				wg.Go(func() { r.do(bin) })
			}
			wg.Wait()
		}
		plain := runs[0]
		for _, r := range runs[1:] {
			// A timeout case can fail on a busy machine when the suite's
			// own client or the scheduler is late by a few milliseconds:
			// such a run goes once more, and both outcomes are reported.
			// A failure that repeats, or any failure outside the timeout
			// cases, fails the test.
			if r.found && r.failed > 0 && onlyTimeouts(r.out) {
				t.Logf("%s mode %v: %d timeout case(s) failed; running again:\n%s", mode, r.variant[1:], r.failed, failedLines(r.out))
				r.do(bin)
			}
		}
		for _, r := range runs {
			r.check(t)
		}
		for _, ours := range runs[1:] {
			if !ours.found {
				continue
			}
			if ours.passed == 0 {
				t.Errorf("%s mode %v: no case ran", mode, ours.variant[1:])
			}
			if !plain.found {
				continue
			}
			t.Logf("%s mode %v: with connectbudget %d of %d cases pass; plain connect-go %d of %d",
				mode, ours.variant[1:], ours.passed, ours.total, plain.passed, plain.total)
			if ours.total != plain.total || ours.passed < plain.passed {
				t.Errorf("%s mode %v: with connectbudget %d of %d cases pass, fewer than plain connect-go's %d of %d",
					mode, ours.variant[1:], ours.passed, ours.total, plain.passed, plain.total)
			}
		}
	}
}

func TestOnlyTimeouts(t *testing.T) {
	timeouts := []byte("FAILED: Timeouts/HTTPVersion:2/Protocol:PROTOCOL_CONNECT/Codec:CODEC_PROTO/Compression:COMPRESSION_GZIP/TLS:false/unary:\n\tconnect error JSON: unexpected end of JSON input\n")
	other := append(append([]byte{}, timeouts...), "FAILED: Basic/HTTPVersion:1/unary:\n"...)
	if !onlyTimeouts(timeouts) || onlyTimeouts(other) || onlyTimeouts([]byte("174 passed, 0 failed")) {
		t.Fatal("onlyTimeouts misjudges the suite's output")
	}
}
