package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/timebudget/budget/wire"
)

func TestParseIdempotencyKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", wire.MaxIdempotencyKey)
	cases := []struct {
		name string
		vals []string
		key  string // "" when refused or absent
		why  string // part of the reason when refused
	}{
		{"absent", nil, "", ""},
		{"bare", []string{"8e03978e-40d5"}, "8e03978e-40d5", ""},
		{"quoted", []string{`"8e03978e 40d5,x"`}, "8e03978e 40d5,x", ""},
		{"longest", []string{long}, long, ""},
		{"longest quoted", []string{`"` + long + `"`}, long, ""},
		{"empty", []string{""}, "", "empty"},
		{"empty quotes", []string{`""`}, "", "empty"},
		{"256 bytes", []string{long + "k"}, "", "longer than 255"},
		{"10 KB", []string{strings.Repeat("a", 10<<10)}, "", "longer than 255"},
		{"CRLF", []string{"a\r\nSet-Cookie: x"}, "", "control character"},
		{"NUL", []string{"a\x00"}, "", "control character"},
		{"DEL", []string{"a\x7f"}, "", "control character"},
		{"non-ASCII", []string{"ключ"}, "", "outside ASCII"},
		{"two headers", []string{"a", "b"}, "", "more than once"},
		{"joined list", []string{"a, b"}, "", "more than one value"},
		{"joined list without space", []string{"a,b"}, "", "more than one value"},
		{"joined quoted", []string{`"a", "b"`}, "", "several quoted values"},
		{"open quote", []string{`"abc`}, "", "does not close"},
		{"lone quote", []string{`"`}, "", "does not close"},
		{"escape", []string{`"a\"b"`}, "", "escape"},
		{"backslash", []string{`"a\\b"`}, "", "escape"},
		{"bare space", []string{"a b"}, "", "a space"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			key, ok, err := wire.ParseIdempotencyKey(c.vals)
			if key != c.key || ok != (c.key != "") {
				t.Fatalf("got %q, %v, %v; want %q", key, ok, err, c.key)
			}
			if c.why == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var pe *wire.ParseError
			if !errors.Is(err, wire.ErrMalformed) || !errors.As(err, &pe) || pe.Header != wire.HeaderIdempotencyKey ||
				!strings.Contains(pe.Reason, c.why) || len(pe.Value) > 32 {
				t.Fatalf("error %v, want a ParseError saying %q", err, c.why)
			}
		})
	}
}

func TestFormatIdempotencyKey(t *testing.T) {
	t.Parallel()
	v, ok := wire.FormatIdempotencyKey("ABC234")
	if !ok || v != `"ABC234"` {
		t.Fatalf("got %q, %v", v, ok)
	}
	for _, bad := range []string{"", "a\nb", `a"b`, `a\b`, strings.Repeat("a", 256)} {
		if v, ok := wire.FormatIdempotencyKey(bad); ok || v != "" {
			t.Errorf("%q formatted as %q", bad, v)
		}
	}
}

func TestParseIdempotencyKeyAllocs(t *testing.T) {
	vals := []string{`"5RBBCRFOY3ZJ6Y2XW6JDLW2KDA"`}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = wire.ParseIdempotencyKey(vals) }); n != 0 {
		t.Fatalf("%v allocations per parse, want 0", n)
	}
}

// FuzzIdempotencyKey: the parser never panics; it accepts only keys of 1 to 255 bytes of
// printable ASCII, returns them without quotes, refuses with a ParseError that names the
// header, and every key it accepts formats to a value that parses back to the same key.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{"", `""`, `"`, "a", `"a b"`, "a, b", `"a", "b"`, "a\r\nX: y", "a\x00",
		strings.Repeat("a", 255), strings.Repeat("a", 256), strings.Repeat("a", 10<<10), `"a\"b"`, "ключ"} {
		f.Add(s, "")
		f.Add(s, "second")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		vals := []string{a}
		if b != "" {
			vals = append(vals, b)
		}
		key, ok, err := wire.ParseIdempotencyKey(vals)
		if ok == (err != nil) {
			t.Fatalf("%q: ok %v with err %v", vals, ok, err)
		}
		if err != nil {
			var pe *wire.ParseError
			if !errors.As(err, &pe) || pe.Header != wire.HeaderIdempotencyKey || pe.Reason == "" || len(pe.Value) > 32 {
				t.Fatalf("%q: error %#v", vals, err)
			}
			return
		}
		if len(vals) != 1 || key == "" || len(key) > wire.MaxIdempotencyKey || !strings.Contains(a, key) {
			t.Fatalf("%q accepted as %q", vals, key)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("%q accepted with byte %#x", key, key[i])
			}
		}
		if v, ok := wire.FormatIdempotencyKey(key); !ok {
			if !strings.ContainsAny(key, `\`) {
				t.Fatalf("accepted key %q does not format", key)
			}
		} else if k2, ok, err := wire.ParseIdempotencyKey([]string{v}); !ok || err != nil || k2 != key {
			t.Fatalf("%q -> %q -> %q, %v", key, v, k2, err)
		}
	})
}
