//go:build unix

package topology_test

import (
	"path/filepath"
	"syscall"
	"testing"
)

// fifoCase returns a named pipe no one writes to: reading it would block
// for ever.
func fifoCase(t *testing.T, dir string) []struct{ name, path, want string } {
	p := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return []struct{ name, path, want string }{{"fifo", p, "a named pipe (FIFO), not a regular file"}}
}
