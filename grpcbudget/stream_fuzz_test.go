package grpcbudget

import (
	"errors"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

// FuzzMessageBudget feeds the per-message budget parser what a client may
// send under MessageTimeoutKey, as one or two values. Whatever arrives: no
// panic; either a positive budget of at most 10 digits of milliseconds and
// no error, nothing at all for an absent key, or an error matching
// wire.ErrMalformed that names the key and quotes at most 32 bytes.
func FuzzMessageBudget(f *testing.F) {
	f.Add("1000", "", false)
	f.Add("0", "", false)
	f.Add("-5", "", false)
	f.Add("9999999999", "", false)
	f.Add("99999999999", "", false)
	f.Add("1000", "2000", true)
	f.Add("1e3", "", false)
	f.Add(" 15 ", "", false)
	f.Add("", "", false)
	f.Add("\x00\xff", "", false)
	f.Fuzz(func(t *testing.T, a, b string, two bool) {
		vals := []string{a}
		if two {
			vals = append(vals, b)
		}
		d, err := parseMessageBudget(vals)
		if err != nil {
			var pe *wire.ParseError
			if !errors.Is(err, wire.ErrMalformed) || !errors.As(err, &pe) || pe.Header != MessageTimeoutKey || len(pe.Value) > 32 {
				t.Fatalf("%q: error %v, want a ParseError naming %s", vals, err, MessageTimeoutKey)
			}
			if d != 0 {
				t.Fatalf("%q: budget %v with an error", vals, d)
			}
			return
		}
		if d < 0 || d > 9_999_999_999*time.Millisecond || d%time.Millisecond != 0 {
			t.Fatalf("%q: budget %v out of range", vals, d)
		}
		if d == 0 && !(len(vals) == 1 && wireEmpty(a)) {
			t.Fatalf("%q: no budget and no error", vals)
		}
	})
}

// wireEmpty reports whether v is what ParseRequestTimeout reads as absent.
func wireEmpty(v string) bool {
	_, ok, err := wire.ParseRequestTimeout(v)
	return !ok && err == nil
}
