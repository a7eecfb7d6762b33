package wire_test

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

func TestParseRequestMessageTimeout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in     string
		want   time.Duration
		ok     bool
		reason string // part of the error's reason; "" for no error
	}{
		{"", 0, false, ""},
		{"1", time.Millisecond, true, ""},
		{"250", 250 * time.Millisecond, true, ""},
		{"9999999999", 9999999999 * time.Millisecond, true, ""},
		{"0", 0, false, "zero"},
		{"000", 0, false, "zero"},
		{"10000000000", 0, false, "longer"},
		{"-5", 0, false, "digit"},
		{"5ms", 0, false, "digit"},
		{" 5", 0, false, "digit"},
	}
	for _, tc := range cases {
		d, ok, err := wire.ParseRequestMessageTimeout(tc.in)
		if d != tc.want || ok != tc.ok {
			t.Errorf("ParseRequestMessageTimeout(%q) = %v, %v, %v; want %v, %v", tc.in, d, ok, err, tc.want, tc.ok)
		}
		var pe *wire.ParseError
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("ParseRequestMessageTimeout(%q): unexpected error %v", tc.in, err)
		case tc.reason != "" && (!errors.As(err, &pe) || !errors.Is(err, wire.ErrMalformed) ||
			pe.Header != wire.HeaderRequestMessageTimeout || !strings.Contains(pe.Reason, tc.reason)):
			t.Errorf("ParseRequestMessageTimeout(%q): error %v, want a ParseError naming %s with reason %q",
				tc.in, err, wire.HeaderRequestMessageTimeout, tc.reason)
		}
	}
}

func TestFormatRequestMessageTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
		ok   bool
	}{
		{0, "", false},
		{-time.Second, "", false},
		{999 * time.Microsecond, "", false},
		{time.Millisecond, "1", true},
		{1500 * time.Microsecond, "1", true},
		{2 * time.Second, "2000", true},
		{1 << 62, "9999999999", true},
	} {
		got, ok := wire.FormatRequestMessageTimeout(tc.d)
		if got != tc.want || ok != tc.ok {
			t.Errorf("FormatRequestMessageTimeout(%v) = %q, %v; want %q, %v", tc.d, got, ok, tc.want, tc.ok)
		}
	}
	// The message header is not a deadline source: Extract ignores it.
	h := http.Header{}
	h.Set(wire.HeaderRequestMessageTimeout, "100")
	if x := wire.Extract(wire.HTTPHeader(h), wire.SourcesAll, 0, time.Now()); x.Source != 0 || x.Malformed != 0 {
		t.Errorf("Extract read %s as a deadline: %+v", wire.HeaderRequestMessageTimeout, x)
	}
}

func FuzzRequestMessageTimeout(f *testing.F) {
	addSeeds(f, "0", "1", "250", "9999999999", "10000000000", "007", "-1")
	f.Fuzz(func(t *testing.T, v string) {
		d, ok, err := wire.ParseRequestMessageTimeout(v)
		checkErr(t, wire.HeaderRequestMessageTimeout, v, ok, err)
		if !ok {
			if d != 0 {
				t.Fatalf("%q: not ok but %v", v, d)
			}
			return
		}
		n, perr := strconv.ParseUint(v, 10, 64)
		if perr != nil || n == 0 || len(v) > 10 || d != time.Duration(n)*time.Millisecond {
			t.Fatalf("%q parsed to %v", v, d)
		}
		s, ok := wire.FormatRequestMessageTimeout(d)
		if d2, ok2, err := wire.ParseRequestMessageTimeout(s); !ok || !ok2 || err != nil || d2 != d {
			t.Fatalf("%q -> %v -> %q -> %v, %v, %v", v, d, s, d2, ok2, err)
		}
	})
}

func ExampleParseRequestMessageTimeout() {
	// A client asks for each message of its stream to be handled within 250 ms.
	v, _ := wire.FormatRequestMessageTimeout(250 * time.Millisecond)
	h := http.Header{}
	h.Set(wire.HeaderRequestMessageTimeout, v)
	d, ok, err := wire.ParseRequestMessageTimeout(h.Get(wire.HeaderRequestMessageTimeout))
	fmt.Println(d, ok, err)
	_, _, err = wire.ParseRequestMessageTimeout("0")
	fmt.Println(err)
	// Output:
	// 250ms true <nil>
	// wire: malformed Request-Message-Timeout-Ms "0": zero: a per-message budget is at least 1 ms
}
