package amqpbudget

import (
	"math"
	"testing"
	"time"
)

// TestTextIntegers pins how a header value of each type AMQP tables carry is
// read as text: the integer types by their decimal value, anything else as
// notText, which the policy counts as malformed.
func TestTextIntegers(t *testing.T) {
	type named int64
	for _, c := range []struct {
		v    any
		want string
	}{
		{"1500", "1500"},
		{[]byte("250"), "250"},
		{int8(-8), "-8"},
		{int16(math.MaxInt16), "32767"},
		{int32(-70000), "-70000"},
		{int64(math.MaxInt64), "9223372036854775807"},
		{int(42), "42"},
		{uint8(255), "255"},
		{uint16(65535), "65535"},
		{uint32(4000000000), "4000000000"},
		{uint64(math.MaxUint64), "18446744073709551615"},
		{uint(7), notText},              // not an AMQP field type
		{named(5), notText},             // a named type is not a table's
		{5 * time.Millisecond, notText}, // nor is a Duration
		{1.5, notText},
		{true, notText},
		{nil, notText},
		{[]any{"1"}, notText},
	} {
		if got := text(c.v); got != c.want {
			t.Errorf("text(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = text(int32(1)) }); n > 1 {
		t.Errorf("text(int32) allocates %v times, want at most the string's one", n)
	}
}
