//go:build unix

package main

import (
	"path/filepath"
	"syscall"
	"testing"
)

// specialFiles returns cases of files that are not regular: /dev/zero,
// which once ran audit out of memory, and a FIFO no one writes to, which
// would block it for ever.
func specialFiles(t testing.TB, dir string) []hostileCase {
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return []hostileCase{
		{name: "dev-zero", cmd: "audit", file: "/dev/zero", want: "/dev/zero: a character device, not a regular file"},
		{name: "dev-zero-sim", cmd: "sim", file: "/dev/zero", want: "/dev/zero: a character device, not a regular file"},
		{name: "fifo", cmd: "audit", file: fifo, want: "a named pipe (FIFO), not a regular file"},
	}
}
