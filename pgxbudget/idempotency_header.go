package pgxbudget

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// headerVersion starts every encoded header, so that the format can change
// without misreading rows an older release wrote.
const headerVersion = 1

// encodeHeader encodes h for the header column: a version byte, then the
// number of names and, for each name in order, its length and bytes, its
// number of values and each value's length and bytes (lengths as
// uvarints). Any bytes survive, NUL and bytes that are not UTF-8 included,
// which jsonb could not hold. An empty h is nil (NULL).
func encodeHeader(h map[string][]string) []byte {
	if len(h) == 0 {
		return nil
	}
	names := make([]string, 0, len(h))
	size := 1 + binary.MaxVarintLen64
	for k, vs := range h {
		names = append(names, k)
		size += len(k) + 2*binary.MaxVarintLen64
		for _, v := range vs {
			size += len(v) + binary.MaxVarintLen64
		}
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	b = append(b, headerVersion)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(h[k])))
		for _, v := range h[k] {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return b
}

// errHeaderFormat reports a header column this package cannot read.
var errHeaderFormat = errors.New("the table holds a header this release cannot read")

// decodeHeader decodes what encodeHeader wrote; nil (NULL) is a nil
// header. Malformed input is an error, never a panic, and never makes it
// allocate more than its own length.
func decodeHeader(b []byte) (map[string][]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != headerVersion {
		return nil, fmt.Errorf("%w: version %d", errHeaderFormat, b[0])
	}
	d := headerDecoder{b: b[1:]}
	n := d.count()
	h := make(map[string][]string, n)
	for range n {
		k := d.str()
		nv := d.count()
		vs := make([]string, 0, nv)
		for range nv {
			vs = append(vs, d.str())
		}
		if d.err != nil {
			break
		}
		h[k] = vs
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d bytes left over", errHeaderFormat, len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return h, nil
}

type headerDecoder struct {
	b   []byte
	err error
}

// count reads a count, bounded by the bytes left (each item takes one at
// least), so a corrupt count cannot make the decoder allocate.
func (d *headerDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("a count of %d with %d bytes left", n, len(d.b)))
		return 0
	}
	return int(n)
}

func (d *headerDecoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("a length of %d with %d bytes left", n, len(d.b)))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *headerDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail("a malformed length")
		return 0
	}
	d.b = d.b[k:]
	return n
}

func (d *headerDecoder) fail(msg string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errHeaderFormat, msg)
	}
}
