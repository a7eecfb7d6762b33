package overload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A backend starts inside a CPU accounting group of its own when the
// machine has cgroup v1's cpuacct hierarchy and lets this process write it
// (root, as in CI); the group and the run's directory are gone after the
// run, and this process is back in the root group. Without the hierarchy,
// the backend starts all the same and the report says where shedders read.
func TestBackendInAGroupOfItsOwn(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cg := newCgroups()
	defer cg.close()
	writable := false
	if _, err := os.Stat(filepath.Join(cpuacctRoot, "cpuacct.usage")); err == nil && os.Geteuid() == 0 {
		writable = true
	}
	if writable != (cg.dir != "") {
		t.Fatalf("cpuacct writable: %v, but groups: %q (%s)", writable, cg.dir, cg.why)
	}
	spec := backendSpec{Variant: variantNone, Rounds: 1, Units: 1, params: params{Procs: 1, Work: unit, Budget: time.Second}}
	c, err := startBackend(exe, spec, cg)
	if err != nil {
		t.Fatal(err)
	}
	pid := c.cmd.Process.Pid
	if writable {
		if !inGroup(pid, c.group) || !inGroup(os.Getpid(), "harness") {
			t.Errorf("backend %d in group %q: %v; this process in harness: %v", pid, c.group, inGroup(pid, c.group), inGroup(os.Getpid(), "harness"))
		}
		if !strings.Contains(cg.describe(), "of its own") {
			t.Errorf("describe: %q", cg.describe())
		}
	} else if !strings.Contains(cg.describe(), "root") {
		t.Errorf("describe: %q", cg.describe())
	}
	c.stop()
	if writable {
		if _, err := os.Stat(filepath.Join(cg.dir, c.group)); !os.IsNotExist(err) {
			t.Errorf("the backend's group is left after it stopped: %v", err)
		}
	}
	dir := cg.dir
	cg.close()
	if dir != "" {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the run's groups are left after close: %v", err)
		}
		b, _ := os.ReadFile("/proc/self/cgroup")
		if !strings.Contains(string(b), "cpuacct:/\n") {
			t.Errorf("this process is not back in the root group:\n%s", b)
		}
	}
}
