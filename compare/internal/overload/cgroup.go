package overload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cpuacctRoot is where cgroup v1 mounts its CPU accounting hierarchy.
const cpuacctRoot = "/sys/fs/cgroup/cpuacct"

// cgroups puts the harness's process and each backend process in a CPU
// accounting group of its own, as if each ran in a container of its own.
// go-zero's core/load and Kratos aegis' cpu package read the CPU use of the
// group their process is in (cpuacct.usage of the group /proc/self/cgroup
// names); with every process of a run in the machine's root group they read
// the whole machine, the harness's own edge and middle hops included, and
// shed at 0.8x of capacity for CPU the backend did not use. Only accounting
// moves: no quota or CPU set is imposed, so each process runs as before.
//
// Where cgroup v1's cpuacct hierarchy is absent or not writable (cgroup v2,
// no root), the run goes on in the root group and the report says so.
type cgroups struct {
	dir  string // this run's group under cpuacctRoot; "" when unavailable
	why  string // why the groups are unavailable
	self bool   // this process joined dir/harness
}

// newCgroups makes this run's group and moves this process into a group of
// its own inside it.
func newCgroups() *cgroups {
	if _, err := os.Stat(filepath.Join(cpuacctRoot, "cpuacct.usage")); err != nil {
		return &cgroups{why: "no cgroup v1 cpuacct hierarchy at " + cpuacctRoot}
	}
	dir := filepath.Join(cpuacctRoot, "budget-overload-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return &cgroups{why: fmt.Sprintf("cannot make a cpuacct group: %v", err)}
	}
	c := &cgroups{dir: dir}
	procs, err := c.group("harness")
	if err == nil {
		err = os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	if err != nil {
		c.close()
		return &cgroups{why: fmt.Sprintf("cannot move this process into a cpuacct group: %v", err)}
	}
	c.self = true
	return c
}

// group makes the group name inside the run's group and returns the path of
// its cgroup.procs file, which a process joins by writing its pid there.
func (c *cgroups) group(name string) (string, error) {
	if c == nil || c.dir == "" {
		return "", errors.New("no cgroups")
	}
	d := filepath.Join(c.dir, name)
	if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return filepath.Join(d, "cgroup.procs"), nil
}

// remove removes the group name, which must have no process left.
func (c *cgroups) remove(name string) {
	if c != nil && c.dir != "" {
		_ = os.Remove(filepath.Join(c.dir, name))
	}
}

// describe says, for the report, where the shedders read their CPU use.
func (c *cgroups) describe() string {
	if c == nil || c.dir == "" {
		return "every process in the machine's root CPU accounting group, so CPU-reading shedders read the whole machine (" + c.reason() + ")"
	}
	return "the harness's process and each backend process in a cgroup v1 CPU accounting group of its own, so CPU-reading shedders read their own process's CPU, as in a container of their own"
}

func (c *cgroups) reason() string {
	if c == nil {
		return "not tried"
	}
	return c.why
}

// close moves this process back to the root group and removes the run's
// groups.
func (c *cgroups) close() {
	if c == nil || c.dir == "" {
		return
	}
	if c.self {
		_ = os.WriteFile(filepath.Join(cpuacctRoot, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if e.IsDir() {
			_ = os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
	_ = os.Remove(c.dir)
	c.dir = ""
}

// backendCommand returns the program and arguments that start exe inside
// the cgroup.procs file procs, so that the backend is in its group before
// its Go runtime (and the shedders' first reading) starts: a shell writes
// its own pid there, then becomes exe.
func backendCommand(procs, exe string) (string, []string) {
	if procs == "" {
		return exe, nil
	}
	return "/bin/sh", []string{"-c", `echo $$ > "$0" && exec "$1"`, procs, exe}
}

// inGroup reports whether pid's cpuacct group ends with name.
func inGroup(pid int, name string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.Contains(parts[1], "cpuacct") {
			return strings.HasSuffix(parts[2], "/"+name)
		}
	}
	return false
}
