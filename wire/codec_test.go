package wire_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

const maxDuration = time.Duration(math.MaxInt64)

func TestMillisEncoders(t *testing.T) {
	t.Parallel()
	encoders := []struct {
		name   string
		format func(time.Duration) (string, bool)
		parse  func(string) (time.Duration, bool, error)
	}{
		{wire.HeaderRequestTimeout, wire.FormatRequestTimeout, wire.ParseRequestTimeout},
		{wire.HeaderConnectTimeout, wire.FormatConnectTimeout, wire.ParseConnectTimeout},
		{wire.HeaderEnvoyUpstreamTimeout, wire.FormatEnvoyUpstreamTimeout, wire.ParseEnvoyUpstreamTimeout},
	}
	tests := []struct {
		in     time.Duration
		want   string
		wantOK bool
	}{
		{-time.Second, "", false},
		{0, "", false},
		{time.Nanosecond, "", false},
		{999 * time.Microsecond, "", false}, // never "0": refuse locally instead
		{time.Millisecond, "1", true},
		{1999 * time.Microsecond, "1", true}, // rounded down, never up
		{1500 * time.Millisecond, "1500", true},
		{2*time.Second + 999_999*time.Nanosecond, "2000", true},
		{9_999_999_999 * time.Millisecond, "9999999999", true},
		{10_000_000_000 * time.Millisecond, "9999999999", true}, // clamped to 10 digits
		{maxDuration, "9999999999", true},
	}
	for _, enc := range encoders {
		for _, tt := range tests {
			t.Run(enc.name+"/"+tt.in.String(), func(t *testing.T) {
				t.Parallel()
				got, ok := enc.format(tt.in)
				if got != tt.want || ok != tt.wantOK {
					t.Fatalf("format(%v) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
				}
				if !ok {
					return
				}
				back, ok, err := enc.parse(got)
				if err != nil || !ok {
					t.Fatalf("parse(%q) = %v, %v, %v", got, back, ok, err)
				}
				if back > tt.in || tt.in-back >= time.Millisecond && back != 9_999_999_999*time.Millisecond {
					t.Fatalf("round trip of %v gave %v: want at most 1ms less", tt.in, back)
				}
			})
		}
	}
}

func TestAppendKeepsPrefix(t *testing.T) {
	t.Parallel()
	dst := []byte("x=")
	dst, ok := wire.AppendRequestTimeout(dst, 250*time.Millisecond)
	if !ok || string(dst) != "x=250" {
		t.Fatalf("got %q, %v", dst, ok)
	}
	dst, ok = wire.AppendRequestTimeout(dst, 0)
	if ok || string(dst) != "x=250" {
		t.Fatalf("refused encode changed dst: %q, %v", dst, ok)
	}
	dst, ok = wire.AppendGRPCTimeout(dst[:0], time.Second)
	if !ok || string(dst) != "1000000u" {
		t.Fatalf("got %q, %v", dst, ok)
	}
}

func TestGRPCTimeoutEncode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     time.Duration
		want   string
		wantOK bool
	}{
		{-1, "", false},
		{0, "", false},
		{1, "1n", true},
		{99_999_999, "99999999n", true},
		{100_000_000, "100000u", true},
		{100_000_999, "100000u", true}, // rounded down
		{1500 * time.Millisecond, "1500000u", true},
		{99_999_999_999, "99999999u", true},
		{100 * time.Second, "100000m", true},
		{2 * time.Minute, "120000m", true},
		{99_999_999 * time.Millisecond, "99999999m", true},
		{100_000 * time.Second, "100000S", true},
		{99_999_999*time.Second + 999*time.Millisecond, "99999999S", true},
		{100_000_000 * time.Second, "1666666M", true},
		{99_999_999 * time.Minute, "99999999M", true},
		{100_000_000 * time.Minute, "1666666H", true},
		{maxDuration, "2562047H", true},
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			t.Parallel()
			got, ok := wire.FormatGRPCTimeout(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("FormatGRPCTimeout(%v) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
			if !ok {
				return
			}
			back, ok, err := wire.ParseGRPCTimeout(got)
			if err != nil || !ok || back > tt.in {
				t.Fatalf("ParseGRPCTimeout(%q) = %v, %v, %v; want at most %v", got, back, ok, err, tt.in)
			}
		})
	}
}

func TestGRPCTimeoutParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0n", 0},
		{"1n", time.Nanosecond},
		{"7u", 7 * time.Microsecond},
		{"250m", 250 * time.Millisecond},
		{"3S", 3 * time.Second},
		{"2M", 2 * time.Minute},
		{"1H", time.Hour},
		{"00000001H", time.Hour},
		{"99999999n", 99_999_999},
		{"99999999H", maxDuration}, // overflow clamps
		{"2562048H", maxDuration},
		{"2562047H", 2_562_047 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, ok, err := wire.ParseGRPCTimeout(tt.in)
			if err != nil || !ok || got != tt.want {
				t.Fatalf("ParseGRPCTimeout(%q) = %v, %v, %v; want %v", tt.in, got, ok, err, tt.want)
			}
		})
	}
}

func TestRequestDeadlineCodec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     time.Time
		want   string
		wantOK bool
	}{
		{"zero time", time.Time{}, "", false},
		{"before epoch", time.Unix(-1, 0), "", false},
		{"epoch", time.Unix(0, 0), "0", true},
		{"typical", time.UnixMilli(1_700_000_000_123), "1700000000123", true},
		{"rounded down", time.UnixMilli(1_700_000_000_123).Add(999_999), "1700000000123", true},
		{"clamped", time.Unix(1<<50, 0), "999999999999999", true},
		// Regression: the last second before the limit was clamped up to the limit,
		// granting up to 999 ms the sender did not have. Found by FuzzRequestDeadline.
		{"last second before the limit", time.UnixMilli(999_999_999_999_000), "999999999999000", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := wire.FormatRequestDeadline(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("FormatRequestDeadline(%v) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
			if !ok {
				return
			}
			back, ok, err := wire.ParseRequestDeadline(got)
			if err != nil || !ok || back.After(tt.in) || tt.in.Sub(back) >= time.Millisecond && tt.name != "clamped" {
				t.Fatalf("ParseRequestDeadline(%q) = %v, %v, %v; want within 1ms before %v", got, back, ok, err, tt.in)
			}
		})
	}
}

func TestXRequestDeadlineUnits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Time
	}{
		{"1700000000123", time.UnixMilli(1_700_000_000_123)},        // 13 digits: ms
		{"999999999999999", time.UnixMilli(999_999_999_999_999)},    // 15 digits: still ms
		{"1700000000123456", time.UnixMicro(1_700_000_000_123_456)}, // 16 digits: µs, as userver sends
		{"1000000000000000", time.UnixMicro(1_000_000_000_000_000)}, // 2001-09-09, first 16-digit µs
		{"9999999999999999999", time.UnixMicro(math.MaxInt64)},      // clamped
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, ok, err := wire.ParseXRequestDeadline(tt.in)
			if err != nil || !ok || !got.Equal(tt.want) {
				t.Fatalf("ParseXRequestDeadline(%q) = %v, %v, %v; want %v", tt.in, got, ok, err, tt.want)
			}
		})
	}
}

func TestFinagleDeadline(t *testing.T) {
	t.Parallel()
	parsers := map[string]func(string) (time.Time, bool, error){
		wire.HeaderFinagleDeadline: wire.ParseFinagleDeadline,
		wire.HeaderL5DDeadline:     wire.ParseL5DDeadline,
	}
	for name, parse := range parsers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := parse("1700000000000000000 1700000002500000000")
			if err != nil || !ok || !got.Equal(time.Unix(1_700_000_002, 500_000_000)) {
				t.Fatalf("parse = %v, %v, %v", got, ok, err)
			}
			got, ok, err = parse("9999999999999999999 9999999999999999999")
			if err != nil || !ok || !got.Equal(time.Unix(0, math.MaxInt64)) {
				t.Fatalf("overflow: parse = %v, %v, %v; want clamp", got, ok, err)
			}
			_, _, err = parse("1700000002500000000")
			var pe *wire.ParseError
			if !errors.As(err, &pe) || pe.Header != name {
				t.Fatalf("single number: err = %v; want a ParseError naming %s", err, name)
			}
		})
	}
}

func TestBudgetExpiredCodec(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"geometry", "geometry"},
		{"", "unknown"},
		{"db query", "db_query"},
		{"a\r\nSet-Cookie: x", "a__Set-Cookie:_x"},
		{"naïve", "na__ve"},
		{string(make([]byte, 300)), string(make([]byte, 0, 128)) + repeat('_', 128)},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			got := wire.FormatBudgetExpired(tt.in)
			if got != tt.want {
				t.Fatalf("FormatBudgetExpired(%q) = %q; want %q", tt.in, got, tt.want)
			}
			stage, ok, err := wire.ParseBudgetExpired(got)
			if err != nil || !ok || stage != got {
				t.Fatalf("ParseBudgetExpired(%q) = %q, %v, %v", got, stage, ok, err)
			}
		})
	}
}

func repeat(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func TestParseRequestAttempt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in  string
		n   int
		ok  bool
		bad bool
	}{
		{"", 0, false, false},
		{"1", 1, true, false},
		{"3", 3, true, false},
		{"999", 999, true, false},
		{"0", 0, false, true},
		{"1000", 0, false, true},
		{"-1", 0, false, true},
		{"+2", 0, false, true},
		{"٣", 0, false, true},
		{" 2", 0, false, true},
	}
	for _, tc := range cases {
		n, ok, err := wire.ParseRequestAttempt(tc.in)
		if n != tc.n || ok != tc.ok || (err != nil) != tc.bad {
			t.Errorf("ParseRequestAttempt(%q) = %d, %v, %v", tc.in, n, ok, err)
		}
		if err != nil && (!errors.Is(err, wire.ErrMalformed) || !strings.Contains(err.Error(), "Request-Attempt")) {
			t.Errorf("error %v does not name the header", err)
		}
	}
}
