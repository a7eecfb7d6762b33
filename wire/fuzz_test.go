package wire_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

// Every parser has a fuzz target. Each checks the properties every parser promises:
// it never panics; an empty value is absent; a malformed value gives a *ParseError that
// names the header and matches ErrMalformed; a valid value is never negative (never
// before the Unix epoch); and a valid value re-encodes to one that parses to the same or
// a smaller duration (the same or an earlier instant), so a round trip never grants time.
// Seeds live in testdata/fuzz/<target> as well as in f.Add.

var hostileSeeds = []string{
	"", "0", "1", "250", "9999999999", "99999999999", "-5", "+5", " 5", "5 ", "5 0",
	"1e300", "0x10", "1.5", "5,6", "\u0665", "\uff15", "\xff", "5\x00",
	"1S", "250m", "99999999H", "123456789S", "5x", "5", "S",
	"1700000000123", "1700000000123456", "1 2", "1700000000000000000 1700000002000000000",
}

func addSeeds(f *testing.F, extra ...string) {
	for _, s := range hostileSeeds {
		f.Add(s)
	}
	for _, s := range extra {
		f.Add(s)
	}
}

// checkErr checks the three-way contract shared by all parsers.
func checkErr(t *testing.T, header, v string, ok bool, err error) {
	t.Helper()
	if v == "" && (ok || err != nil) {
		t.Fatalf("empty value: ok %v, err %v; want absent", ok, err)
	}
	if err == nil {
		return
	}
	var pe *wire.ParseError
	if ok || !errors.Is(err, wire.ErrMalformed) || !errors.As(err, &pe) || pe.Header != header || len(pe.Value) > 32 {
		t.Fatalf("%q: ok %v, err %v", v, ok, err)
	}
}

// fuzzMillis fuzzes a whole-milliseconds parser. Valid values must be digit strings of at
// most maxDigits that strconv agrees with (up to the clamp), and must survive the
// millisecond encoder.
func fuzzMillis(f *testing.F, header string, maxDigits int, parse func(string) (time.Duration, bool, error)) {
	addSeeds(f, strings.Repeat("9", maxDigits), strings.Repeat("9", maxDigits+1))
	f.Fuzz(func(t *testing.T, v string) {
		d, ok, err := parse(v)
		checkErr(t, header, v, ok, err)
		if !ok {
			if d != 0 {
				t.Fatalf("%q: not ok but %v", v, d)
			}
			return
		}
		n, perr := strconv.ParseUint(v, 10, 64)
		if d < 0 || len(v) > maxDigits || strings.ContainsAny(v, "+-") ||
			perr == nil && n <= 9_223_372_036_854 && d != time.Duration(n)*time.Millisecond {
			t.Fatalf("%q parsed to %v", v, d)
		}
		s, ok := wire.FormatEnvoyUpstreamTimeout(d)
		if !ok {
			if d >= time.Millisecond {
				t.Fatalf("%v did not encode", d)
			}
			return
		}
		d2, ok, err := parse(s)
		if !ok || err != nil || d2 > d || d2 < 0 {
			t.Fatalf("%q -> %v -> %q -> %v, %v, %v", v, d, s, d2, ok, err)
		}
	})
}

func FuzzRequestTimeout(f *testing.F) {
	fuzzMillis(f, wire.HeaderRequestTimeout, 10, wire.ParseRequestTimeout)
}

func FuzzConnectTimeout(f *testing.F) {
	fuzzMillis(f, wire.HeaderConnectTimeout, 10, wire.ParseConnectTimeout)
}

func FuzzEnvoyExpectedTimeout(f *testing.F) {
	fuzzMillis(f, wire.HeaderEnvoyExpectedTimeout, 15, wire.ParseEnvoyExpectedTimeout)
}

func FuzzEnvoyUpstreamTimeout(f *testing.F) {
	fuzzMillis(f, wire.HeaderEnvoyUpstreamTimeout, 15, wire.ParseEnvoyUpstreamTimeout)
}

func FuzzContextTTL(f *testing.F) {
	fuzzMillis(f, wire.HeaderContextTTL, 15, wire.ParseContextTTL)
}

func FuzzGRPCTimeout(f *testing.F) {
	addSeeds(f, "99999999n", "100000000n", "2562047H", "2562048H", "0n", "5N", "5\u00b5")
	f.Fuzz(func(t *testing.T, v string) {
		d, ok, err := wire.ParseGRPCTimeout(v)
		checkErr(t, wire.HeaderGRPCTimeout, v, ok, err)
		if !ok {
			return
		}
		if d < 0 || len(v) < 2 || len(v) > 9 || !strings.ContainsAny(v[len(v)-1:], "HMSmun") {
			t.Fatalf("%q parsed to %v", v, d)
		}
		s, ok := wire.FormatGRPCTimeout(d)
		if !ok {
			if d != 0 {
				t.Fatalf("%v did not encode", d)
			}
			return
		}
		d2, ok, err := wire.ParseGRPCTimeout(s)
		if !ok || err != nil || d2 > d || d2 < 0 {
			t.Fatalf("%q -> %v -> %q -> %v, %v, %v", v, d, s, d2, ok, err)
		}
	})
}

// fuzzInstant fuzzes an absolute parser; reencode writes the instant back in a form
// parse reads.
func fuzzInstant(f *testing.F, header string, parse func(string) (time.Time, bool, error), reencode func(time.Time) (string, bool), extra ...string) {
	addSeeds(f, extra...)
	f.Fuzz(func(t *testing.T, v string) {
		tm, ok, err := parse(v)
		checkErr(t, header, v, ok, err)
		if !ok {
			if !tm.IsZero() {
				t.Fatalf("%q: not ok but %v", v, tm)
			}
			return
		}
		if tm.Before(time.Unix(0, 0)) {
			t.Fatalf("%q parsed to %v, before the epoch", v, tm)
		}
		s, ok := reencode(tm)
		if !ok {
			t.Fatalf("%v did not encode", tm)
		}
		tm2, ok, err := parse(s)
		if !ok || err != nil || tm2.After(tm) || tm2.Before(time.Unix(0, 0)) {
			t.Fatalf("%q -> %v -> %q -> %v, %v, %v", v, tm, s, tm2, ok, err)
		}
	})
}

func FuzzRequestDeadline(f *testing.F) {
	fuzzInstant(f, wire.HeaderRequestDeadline, wire.ParseRequestDeadline, wire.FormatRequestDeadline,
		"999999999999999", "1000000000000000")
}

func FuzzXRequestDeadline(f *testing.F) {
	fuzzInstant(f, wire.HeaderXRequestDeadline, wire.ParseXRequestDeadline, wire.FormatRequestDeadline,
		"999999999999999", "1000000000000000", "9999999999999999999", "99999999999999999999")
}

// nanoPairOf re-encodes a Finagle deadline with a zero timestamp.
func nanoPairOf(t time.Time) (string, bool) {
	return "0 " + strconv.FormatInt(t.UnixNano(), 10), true
}

func FuzzL5DDeadline(f *testing.F) {
	fuzzInstant(f, wire.HeaderL5DDeadline, wire.ParseL5DDeadline, nanoPairOf,
		"9999999999999999999 9999999999999999999", "1  2", " 1 2", "1 2 ", "-1 2")
}

func FuzzFinagleDeadline(f *testing.F) {
	fuzzInstant(f, wire.HeaderFinagleDeadline, wire.ParseFinagleDeadline, nanoPairOf,
		"9999999999999999999 9999999999999999999", "1\t2", "1,2", "1 2 3")
}

func FuzzBudgetExpired(f *testing.F) {
	addSeeds(f, "geometry", "db query", "a\r\nSet-Cookie: x", strings.Repeat("a", 129))
	f.Fuzz(func(t *testing.T, v string) {
		stage, ok, err := wire.ParseBudgetExpired(v)
		checkErr(t, wire.HeaderBudgetExpired, v, ok, err)
		if ok && (stage != v || wire.FormatBudgetExpired(v) != v) {
			t.Fatalf("%q: valid but stage %q, formatted %q", v, stage, wire.FormatBudgetExpired(v))
		}
		// Whatever a stage is called, the encoder writes a value that parses.
		s := wire.FormatBudgetExpired(v)
		if _, ok, err := wire.ParseBudgetExpired(s); !ok || err != nil {
			t.Fatalf("FormatBudgetExpired(%q) = %q, which does not parse: %v", v, s, err)
		}
	})
}

// FuzzExtract feeds four arbitrary header values through Extract and a Policy. Relative
// values are never negative and absolute ones never earlier than the skew allows, so the
// winner is never more than the skew in the past; Max always holds; counts are
// consistent.
func FuzzExtract(f *testing.F) {
	f.Add("1500", "1700000001400", "2S", "1699999999000000000 1700000001000000000")
	f.Add("0", "", "", "")
	f.Add("5,  300 ,x", "5", "123456789S", "1 2")
	f.Add(",,,,", "1700000000000", "0n", "")
	f.Fuzz(func(t *testing.T, rt, rd, grpc, finagle string) {
		h := wire.Metadata{
			"request-timeout-ms":                       {rt},
			"request-deadline":                         {rd, rt},
			"grpc-timeout":                             {grpc},
			"finagle-ctx-com.twitter.finagle.deadline": {finagle},
			"x-request-deadline":                       {rd},
		}
		x := wire.Extract(h, wire.SourcesAll, 0, now)
		if x.Source != 0 && (x.Remaining < -wire.DefaultSkew || !x.Deadline.Equal(now.Add(x.Remaining))) {
			t.Fatalf("Extract = %+v", x)
		}
		if x.Source.Header() == "" && x.Source != 0 || x.Malformed < 0 || (x.Malformed > 0) != (x.Err() != nil) {
			t.Fatalf("Extract = %+v", x)
		}
		p := wire.Policy{Max: time.Second, Min: time.Millisecond, AnswerMargin: time.Millisecond, Trust: wire.SourcesAll}
		d, err := p.Decide(h, now)
		if d.Remaining > time.Second || (err != nil) != d.Refused() || d.Malformed != x.Malformed {
			t.Fatalf("Decide = %+v, %v", d, err)
		}
	})
}

func FuzzRequestAttempt(f *testing.F) {
	addSeeds(f, "2", "999", "1000", "007")
	f.Fuzz(func(t *testing.T, v string) {
		n, ok, err := wire.ParseRequestAttempt(v)
		checkErr(t, wire.HeaderRequestAttempt, v, ok, err)
		if ok && (n < 1 || n > 999 || strconv.Itoa(n) != strings.TrimLeft(v, "0")) {
			t.Fatalf("ParseRequestAttempt(%q) = %d", v, n)
		}
	})
}
