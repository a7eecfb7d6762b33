//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVetSignalStopsChildren runs budget vet against a go command that
// never answers and has started a child of its own, as go list starts the
// compiler, then signals budget vet. It must exit, and neither the go
// commands (go/packages runs more than one) nor their children may outlive
// it: before SIGTERM was handled, budget vet died at once and left them
// running.
func TestVetSignalStopsChildren(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			bin, pidDir := t.TempDir(), t.TempDir()
			if err := os.Symlink(exe, filepath.Join(bin, "go")); err != nil {
				t.Fatal(err)
			}
			marker := "BUDGET_TEST_PIDS=" + pidDir
			cmd := exec.Command(exe, "vet", "./testdata/vet/clean")
			cmd.Env = append(os.Environ(), roleEnv+"=main", marker,
				"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				for _, p := range descendants(t, pidDir, marker) {
					_ = syscall.Kill(p, syscall.SIGKILL) // each was started by this test
				}
				_ = cmd.Process.Kill()
				<-exited
			})

			waitForGo(t, pidDir, exited)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				exited <- err // for the cleanup
			case <-time.After(15 * time.Second):
				t.Fatalf("budget vet still running 15s after %v; stderr:\n%s", sig, stderr.String())
			}
			var left []int
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				left = slices.DeleteFunc(descendants(t, pidDir, marker), func(p int) bool { return !running(p) })
				if len(left) == 0 || time.Now().After(deadline) {
					break
				}
			}
			if len(left) > 0 {
				t.Errorf("processes %v started by budget vet still run 5s after it exited on %v", left, sig)
			}
			if !strings.Contains(stderr.String(), "budget vet: stopped") {
				t.Errorf("stderr does not say budget vet stopped:\n%s", stderr.String())
			}
		})
	}
}

// waitForGo returns once a stand-in go command has started its child.
func waitForGo(t *testing.T, pidDir string, exited chan error) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("budget vet exited before starting go: %v", err)
		default:
		}
		if files, _ := os.ReadDir(pidDir); len(files) > 0 {
			return
		}
	}
	t.Fatal("no stand-in go command started within 30s")
}

// descendants returns the process ids the stand-in go commands wrote to
// pidDir, and, where /proc lists processes, every process whose
// environment holds marker: one that was started but killed before it
// wrote its file is found that way.
func descendants(t *testing.T, pidDir, marker string) []int {
	var pids []int
	files, _ := os.ReadDir(pidDir)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(pidDir, f.Name()))
		if err != nil {
			continue // being renamed into place
		}
		for _, field := range strings.Fields(string(data)) {
			if p, err := strconv.Atoi(field); err == nil {
				pids = append(pids, p)
			}
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, d := range procs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), marker) {
			pids = append(pids, p)
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// running reports whether process pid exists and has not ended. A zombie,
// ended but not yet reaped by the process that inherited it, has ended.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: the signal test above is all there is
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
