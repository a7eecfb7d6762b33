package wire_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

// outcome is the three-way result every parser gives.
type outcome int

const (
	absent outcome = iota
	valid
	malformed
)

func (o outcome) String() string { return [...]string{"absent", "valid", "malformed"}[o] }

// parser adapts one exported parser to the three-way outcome, checking on the way the
// invariants every parser keeps whatever its input.
type parser struct {
	header string
	digits int // most digits accepted, for the digit-only parsers
	parse  func(string) (bool, error)
}

func durationParser(header string, digits int, f func(string) (time.Duration, bool, error)) parser {
	return parser{header, digits, func(v string) (bool, error) {
		d, ok, err := f(v)
		if d < 0 || (!ok && d != 0) {
			return false, errors.New("negative or stray result")
		}
		return ok, err
	}}
}

func instantParser(header string, digits int, f func(string) (time.Time, bool, error)) parser {
	return parser{header, digits, func(v string) (bool, error) {
		t, ok, err := f(v)
		if ok && t.Before(time.Unix(0, 0)) || !ok && !t.IsZero() {
			return false, errors.New("instant before the epoch or stray result")
		}
		return ok, err
	}}
}

var digitParsers = []parser{
	durationParser(wire.HeaderRequestTimeout, 10, wire.ParseRequestTimeout),
	durationParser(wire.HeaderConnectTimeout, 10, wire.ParseConnectTimeout),
	durationParser(wire.HeaderEnvoyExpectedTimeout, 15, wire.ParseEnvoyExpectedTimeout),
	durationParser(wire.HeaderEnvoyUpstreamTimeout, 15, wire.ParseEnvoyUpstreamTimeout),
	durationParser(wire.HeaderContextTTL, 15, wire.ParseContextTTL),
	instantParser(wire.HeaderRequestDeadline, 15, wire.ParseRequestDeadline),
	instantParser(wire.HeaderXRequestDeadline, 19, wire.ParseXRequestDeadline),
}

// classify runs p on v and checks that an error is present exactly for malformed input,
// matches ErrMalformed, names the header and quotes no more than 32 bytes of the value.
func classify(t *testing.T, p parser, v string) outcome {
	t.Helper()
	ok, err := p.parse(v)
	switch {
	case err != nil:
		var pe *wire.ParseError
		if !errors.Is(err, wire.ErrMalformed) || !errors.As(err, &pe) {
			t.Fatalf("%s %.40q: error %v does not match ErrMalformed/ParseError", p.header, v, err)
		}
		if pe.Header != p.header || len(pe.Value) > 32 || pe.Reason == "" {
			t.Fatalf("%s %.40q: ParseError %+v", p.header, v, pe)
		}
		if ok {
			t.Fatalf("%s %.40q: ok with an error", p.header, v)
		}
		return malformed
	case ok:
		return valid
	default:
		return absent
	}
}

func TestHostileDigits(t *testing.T) {
	t.Parallel()
	mb := strings.Repeat("1", 1<<20)
	tests := []struct {
		name   string
		in     string
		want   outcome // for a parser whose digit limit the value fits
		reason string  // the ParseError reason, when malformed
	}{
		{"empty", "", absent, ""},
		{"zero", "0", valid, ""},
		{"leading zeros", "0005", valid, ""},
		{"negative", "-5", malformed, "not an ASCII digit"},
		{"plus sign", "+5", malformed, "not an ASCII digit"},
		{"space before", " 5", malformed, "not an ASCII digit"},
		{"space after", "5 ", malformed, "not an ASCII digit"},
		{"space inside", "5 0", malformed, "not an ASCII digit"},
		{"tab", "\t5", malformed, "not an ASCII digit"},
		{"exponent", "1e300", malformed, "not an ASCII digit"},
		{"hex", "0x10", malformed, "not an ASCII digit"},
		{"decimal point", "1.5", malformed, "not an ASCII digit"},
		{"comma list", "5,6", malformed, "not an ASCII digit"},
		{"NUL", "5\x00", malformed, "not an ASCII digit"},
		{"unit suffix", "5ms", malformed, "not an ASCII digit"},
		{"Arabic-Indic five", "\u0665", malformed, "not an ASCII digit"},
		{"Extended Arabic-Indic five", "\u06f5", malformed, "not an ASCII digit"},
		{"fullwidth five", "\uff15", malformed, "not an ASCII digit"},
		{"Devanagari five", "\u096b", malformed, "not an ASCII digit"},
		{"invalid UTF-8", "\xff", malformed, "not an ASCII digit"},
		{"1 MB of digits", mb, malformed, "longer than the header allows"},
		{"1 MB of letters", strings.Repeat("a", 1<<20), malformed, "longer than the header allows"},
	}
	for _, tt := range tests {
		for _, p := range digitParsers {
			t.Run(tt.name+"/"+p.header, func(t *testing.T) {
				t.Parallel()
				got := classify(t, p, tt.in)
				if got != tt.want {
					t.Fatalf("%s %.40q: %v; want %v", p.header, tt.in, got, tt.want)
				}
				if got == malformed {
					_, err := p.parse(tt.in)
					var pe *wire.ParseError
					if errors.As(err, &pe); pe.Reason != tt.reason {
						t.Fatalf("reason %q; want %q", pe.Reason, tt.reason)
					}
				}
			})
		}
	}
}

// TestDigitLimits pins each header's length cap: n digits are valid up to the cap and
// malformed beyond it (11 digits of Request-Timeout-Ms, 16 of Request-Deadline, ...).
func TestDigitLimits(t *testing.T) {
	t.Parallel()
	for _, p := range digitParsers {
		t.Run(p.header, func(t *testing.T) {
			t.Parallel()
			for n := 1; n <= 21; n++ {
				for _, d := range []string{"1", "9"} {
					want := valid
					if n > p.digits {
						want = malformed
					}
					if got := classify(t, p, strings.Repeat(d, n)); got != want {
						t.Fatalf("%d digits of %s: %v; want %v", n, d, got, want)
					}
				}
			}
		})
	}
}

func TestHostileGRPCTimeout(t *testing.T) {
	t.Parallel()
	p := durationParser(wire.HeaderGRPCTimeout, 8, wire.ParseGRPCTimeout)
	tests := []struct {
		name   string
		in     string
		want   outcome
		reason string
	}{
		{"empty", "", absent, ""},
		{"eight digits", "12345678S", valid, ""},
		{"nine digits", "123456789S", malformed, "longer than the header allows"},
		{"nine digits of n", "100000000n", malformed, "longer than the header allows"},
		{"bad unit", "5x", malformed, "unknown unit"},
		{"lowercase s", "5s", malformed, "unknown unit"},
		{"uppercase N", "5N", malformed, "unknown unit"},
		{"word unit", "5ms", malformed, "unknown unit"},
		{"no unit", "5", malformed, "missing unit"},
		{"unit only", "S", malformed, "no digits"},
		{"negative", "-5S", malformed, "not an ASCII digit"},
		{"plus sign", "+5S", malformed, "not an ASCII digit"},
		{"space before", " 5S", malformed, "not an ASCII digit"},
		{"space after", "5S ", malformed, "unknown unit"},
		{"space inside", "5 S", malformed, "not an ASCII digit"},
		{"exponent", "1e3S", malformed, "not an ASCII digit"},
		{"Arabic-Indic digit", "\u0665S", malformed, "not an ASCII digit"},
		{"fullwidth digit", "\uff15S", malformed, "not an ASCII digit"},
		{"multibyte unit", "5\u00b5", malformed, "unknown unit"},
		{"1 MB", strings.Repeat("1", 1<<20) + "S", malformed, "longer than the header allows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := classify(t, p, tt.in); got != tt.want {
				t.Fatalf("%.40q: %v; want %v", tt.in, got, tt.want)
			}
			if tt.want == malformed {
				_, _, err := wire.ParseGRPCTimeout(tt.in)
				var pe *wire.ParseError
				if errors.As(err, &pe); pe.Reason != tt.reason {
					t.Fatalf("reason %q; want %q", pe.Reason, tt.reason)
				}
			}
		})
	}
}

func TestHostileFinagleDeadline(t *testing.T) {
	t.Parallel()
	parsers := []parser{
		instantParser(wire.HeaderFinagleDeadline, 19, wire.ParseFinagleDeadline),
		instantParser(wire.HeaderL5DDeadline, 19, wire.ParseL5DDeadline),
	}
	tests := []struct {
		name string
		in   string
		want outcome
	}{
		{"empty", "", absent},
		{"pair", "1 2", valid},
		{"deadline before timestamp", "2 1", valid}, // Finagle does not forbid it
		{"one number", "12", malformed},
		{"two spaces", "1  2", malformed},
		{"leading space", " 1 2", malformed},
		{"trailing space", "1 2 ", malformed},
		{"tab", "1\t2", malformed},
		{"comma", "1,2", malformed},
		{"three numbers", "1 2 3", malformed},
		{"negative timestamp", "-1 2", malformed},
		{"negative deadline", "1 -2", malformed},
		{"plus sign", "+1 2", malformed},
		{"exponent", "1 1e300", malformed},
		{"20 digits", "1 12345678901234567890", malformed},
		{"19 digits each", "1111111111111111111 9999999999999999999", valid},
		{"Arabic-Indic digit", "1 \u0665", malformed},
		{"base64 of the binary form", "AAAAAAAAAAEAAAAAAAAAAg==", malformed},
		{"1 MB", strings.Repeat("1", 1<<20) + " 2", malformed},
	}
	for _, tt := range tests {
		for _, p := range parsers {
			t.Run(tt.name+"/"+p.header, func(t *testing.T) {
				t.Parallel()
				if got := classify(t, p, tt.in); got != tt.want {
					t.Fatalf("%.40q: %v; want %v", tt.in, got, tt.want)
				}
			})
		}
	}
}

func TestHostileBudgetExpired(t *testing.T) {
	t.Parallel()
	p := parser{wire.HeaderBudgetExpired, 0, func(v string) (bool, error) {
		_, ok, err := wire.ParseBudgetExpired(v)
		return ok, err
	}}
	tests := []struct {
		name string
		in   string
		want outcome
	}{
		{"empty", "", absent},
		{"stage", "geometry", valid},
		{"dotted", "db.query/3", valid},
		{"128 bytes", strings.Repeat("a", 128), valid},
		{"129 bytes", strings.Repeat("a", 129), malformed},
		{"space", "db query", malformed},
		{"CRLF", "a\r\nb", malformed},
		{"non-ASCII", "g\u00e9om\u00e9trie", malformed},
		{"1 MB", strings.Repeat("a", 1<<20), malformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := classify(t, p, tt.in); got != tt.want {
				t.Fatalf("%.40q: %v; want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestHostileBudgetNoRetry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     []string
		want   outcome
		reason string
	}{
		{"absent", nil, absent, ""},
		{"shed", []string{"shed"}, valid, ""},
		{"retried", []string{"retried"}, valid, ""},
		{"spaces around", []string{" \tshed "}, valid, ""},
		{"empty", []string{""}, malformed, "empty"},
		{"spaces only", []string{"   "}, malformed, "empty"},
		{"uppercase", []string{"SHED"}, malformed, `not "shed" or "retried"`},
		{"unknown token", []string{"later"}, malformed, `not "shed" or "retried"`},
		{"CRLF", []string{"shed\r\nSet-Cookie: x"}, malformed, "longer than 16 bytes"},
		{"NUL", []string{"shed\x00"}, malformed, `not "shed" or "retried"`},
		{"control char", []string{"re\x7ftried"}, malformed, `not "shed" or "retried"`},
		{"non-ASCII", []string{"sh\u00e9d"}, malformed, `not "shed" or "retried"`},
		{"joined list", []string{"shed, retried"}, malformed, "more than one value"},
		{"two fields", []string{"shed", "retried"}, malformed, "sent more than once"},
		{"two equal fields", []string{"shed", "shed"}, malformed, "sent more than once"},
		{"17 bytes", []string{"retried" + strings.Repeat(" ", 10)}, malformed, "longer than 16 bytes"},
		{"10 KB", []string{strings.Repeat("shed", 10<<8)}, malformed, "longer than 16 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, ok, err := wire.ParseBudgetNoRetry(tt.in)
			got := absent
			switch {
			case err != nil:
				got = malformed
				var pe *wire.ParseError
				if ok || r != 0 || !errors.Is(err, wire.ErrMalformed) || !errors.As(err, &pe) ||
					pe.Header != wire.HeaderBudgetNoRetry || len(pe.Value) > 32 || pe.Reason != tt.reason {
					t.Fatalf("%.40q: %v, %v, %#v; want reason %q", tt.in, r, ok, err, tt.reason)
				}
				if !strings.Contains(err.Error(), wire.HeaderBudgetNoRetry) || strings.ContainsAny(err.Error(), "\r\n\x00") {
					t.Fatalf("error %q does not name the header, or forges a line", err)
				}
			case ok:
				got = valid
				if r.String() != strings.TrimSpace(tt.in[0]) {
					t.Fatalf("%q parsed as %v", tt.in, r)
				}
			}
			if got != tt.want {
				t.Fatalf("%.40q: %v; want %v", tt.in, got, tt.want)
			}
		})
	}
}
