package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) != "" {
		actAs(os.Getenv(roleEnv))
	}
	goleak.VerifyTestMain(m)
}

// roleEnv makes the test binary play a process of a signal test: "main" is
// the budget command, run by main. Run under the name go, it is a stand-in
// go command that starts a "child" (a compiler, say), writes both their
// process ids to a file of its own in the directory $BUDGET_TEST_PIDS and
// waits for ever.
const roleEnv = "BUDGET_TEST_ROLE"

// actAs plays role and never returns.
func actAs(role string) {
	switch {
	case filepath.Base(os.Args[0]) == "go":
		exe, err := os.Executable()
		if err != nil {
			os.Exit(3)
		}
		child := exec.Command(exe)
		child.Env = append(os.Environ(), roleEnv+"=child")
		if err := child.Start(); err != nil {
			os.Exit(3)
		}
		pids := filepath.Join(os.Getenv("BUDGET_TEST_PIDS"), strconv.Itoa(os.Getpid()))
		data := []byte(strconv.Itoa(os.Getpid()) + " " + strconv.Itoa(child.Process.Pid) + "\n")
		if os.WriteFile(pids+".tmp", data, 0o600) != nil || os.Rename(pids+".tmp", pids) != nil {
			os.Exit(3)
		}
		_ = child.Wait()
		os.Exit(0)
	case role == "main":
		main()
	}
	time.Sleep(time.Hour) // the child: killed by the test's signal or cleanup
	os.Exit(0)
}
