package pgxbudget

import (
	"errors"
	"maps"
	"slices"
	"testing"
)

// The header column keeps any bytes: NUL, bytes that are not UTF-8, empty
// values and names, several values per name.
func TestHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	for _, h := range []map[string][]string{
		{"Content-Type": {"application/json"}},
		{"X-Odd": {"\xff\xfe", "", "\x00"}, "": {"empty name"}, "x-none": {}},
		{"Grpc-Status-Details-Bin": {string([]byte{0, 1, 2, 255})}},
	} {
		got, err := decodeHeader(encodeHeader(h))
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(got, h, slices.Equal) {
			t.Fatalf("round trip: got %q, want %q", got, h)
		}
	}
	if b := encodeHeader(map[string][]string{}); b != nil {
		t.Fatalf("an empty header encoded as %q, want nil (NULL)", b)
	}
	if h, err := decodeHeader(nil); h != nil || err != nil {
		t.Fatalf("NULL decoded as %v, %v", h, err)
	}
}

// A header this release cannot read is an error naming the column, never
// a panic or an allocation its length does not pay for.
func TestHeaderMalformed(t *testing.T) {
	t.Parallel()
	good := encodeHeader(map[string][]string{"A": {"b"}})
	for name, b := range map[string][]byte{
		"version":      {2, 0},
		"truncated":    good[:len(good)-1],
		"left over":    append(slices.Clone(good), 0),
		"huge count":   {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge length":  {1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"bad varint":   {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"count, empty": {1},
	} {
		if h, err := decodeHeader(b); !errors.Is(err, errHeaderFormat) || h != nil {
			t.Errorf("%s: %v, %v; want errHeaderFormat", name, h, err)
		}
	}
}

// FuzzDecodeHeader: whatever the column holds, decodeHeader returns a
// header or an error, never panics, and what it returns encodes back to a
// header that decodes to the same.
func FuzzDecodeHeader(f *testing.F) {
	f.Add(encodeHeader(map[string][]string{"Content-Type": {"text/plain"}, "X": {"1", "2"}}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHeader(b)
		if err != nil {
			if !errors.Is(err, errHeaderFormat) || h != nil {
				t.Fatalf("%v, %v", h, err)
			}
			return
		}
		again, err := decodeHeader(encodeHeader(h))
		if err != nil || !maps.EqualFunc(again, h, slices.Equal) && len(h) > 0 {
			t.Fatalf("%q re-encoded: %q, %v", h, again, err)
		}
	})
}
