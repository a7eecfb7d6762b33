package topology

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ReadFile reads and parses the topology in the file at path, which also
// names it in errors. It refuses anything but a regular file (a directory,
// a device such as /dev/zero, a FIFO, a socket) before opening it, so it
// neither blocks on a FIFO nor reads for ever, and it reads at most
// MaxFileSize bytes and one more, so a huge file costs no more memory than
// a file of the largest size allowed.
func ReadFile(path string) (*Topology, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The path may have been replaced between Stat and Open.
	fi2, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi2); err != nil {
		return nil, err
	}
	if !os.SameFile(fi, fi2) {
		return nil, fmt.Errorf("%s: the file changed while it was opened", path)
	}
	tooLarge := &Error{File: path, Pos: Pos{1, 1}, Msg: fmt.Sprintf("file is larger than %d MiB", MaxFileSize>>20)}
	if fi2.Size() > MaxFileSize {
		return nil, tooLarge
	}
	// The file may grow while it is read: the limit holds regardless.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge
	}
	return Parse(path, data)
}

func regular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	kind := "special file"
	switch m := fi.Mode(); {
	case m.IsDir():
		kind = "directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeCharDevice != 0:
		kind = "character device"
	case m&fs.ModeDevice != 0:
		kind = "device"
	}
	return fmt.Errorf("%s: a %s, not a regular file: a topology is read from a file", path, kind)
}
