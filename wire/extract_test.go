package wire_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

// now is a fixed arrival time for the tests; time is a parameter, never read.
var now = time.Unix(1_700_000_000, 0)

// unixMs returns the Request-Deadline value for now+d.
func unixMs(d time.Duration) string { return strconv.FormatInt(now.Add(d).UnixMilli(), 10) }

// kv is a header list in arrival order; a name may repeat.
type kv [][2]string

// carriers builds the same headers in every carrier this package reads: net/http's
// canonical keys, gRPC's lowercase keys, and a custom Header implementation.
func carriers(h kv) map[string]wire.Header {
	hh := http.Header{}
	md := wire.Metadata{}
	custom := customHeader{}
	for _, p := range h {
		hh.Add(p[0], p[1])
		k := strings.ToLower(p[0])
		md[k] = append(md[k], p[1])
		custom[k] = append(custom[k], p[1])
	}
	return map[string]wire.Header{"http": wire.HTTPHeader(hh), "metadata": md, "custom": custom}
}

// customHeader is a carrier this package does not know, so Extract goes through Values.
type customHeader map[string][]string

func (c customHeader) Values(name string) []string { return c[strings.ToLower(name)] }

func TestExtract(t *testing.T) {
	t.Parallel()
	rt, rd := wire.HeaderRequestTimeout, wire.HeaderRequestDeadline
	tests := []struct {
		name          string
		h             kv
		trust         wire.Sources // 0 means SourcesAll here
		skew          time.Duration
		wantSource    wire.Sources
		wantRemaining time.Duration
		wantMalformed int
		wantSkew      bool
	}{
		{name: "nothing", h: kv{{"Accept", "*/*"}}},
		{name: "ours alone", h: kv{{rt, "500"}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 500 * time.Millisecond},
		{name: "zero is valid and expired", h: kv{{rt, "0"}}, wantSource: wire.SourceRequestTimeout},
		{
			name: "strictest of every relative source",
			h: kv{{rt, "2000"}, {wire.HeaderGRPCTimeout, "1S"}, {wire.HeaderConnectTimeout, "1500"},
				{wire.HeaderEnvoyExpectedTimeout, "800"}, {wire.HeaderContextTTL, "900"}},
			wantSource: wire.SourceEnvoyExpectedTimeout, wantRemaining: 800 * time.Millisecond,
		},
		{name: "tie goes to ours", h: kv{{wire.HeaderGRPCTimeout, "700m"}, {rt, "700"}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 700 * time.Millisecond},
		{name: "repeated, conflicting", h: kv{{rt, "5000"}, {rt, "300"}, {rt, "700"}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 300 * time.Millisecond},
		{name: "comma-joined with spaces", h: kv{{rt, "5000, 300 ,\t700"}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 300 * time.Millisecond},
		{name: "empty elements skipped", h: kv{{rt, ",, 400 ,"}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 400 * time.Millisecond},
		{name: "empty value is absent", h: kv{{rt, ""}}},
		{name: "blank value is absent", h: kv{{rt, "  "}}},
		{name: "malformed beside valid", h: kv{{rt, "abc"}, {rt, "400"}, {rt, "-1"}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 400 * time.Millisecond, wantMalformed: 2},
		{name: "only malformed", h: kv{{rt, "1e300"}, {wire.HeaderGRPCTimeout, "123456789S"}}, wantMalformed: 2},
		{name: "space inside an element", h: kv{{rt, "5 0"}}, wantMalformed: 1},
		{
			name:  "untrusted source not read",
			h:     kv{{rt, "2000"}, {wire.HeaderGRPCTimeout, "1m"}, {wire.HeaderConnectTimeout, "junk"}},
			trust: wire.SourceRequestTimeout, wantSource: wire.SourceRequestTimeout, wantRemaining: 2 * time.Second,
		},
		{name: "nothing trusted", h: kv{{rt, "2000"}}, trust: wire.SourcesNone},

		// Absolute with relative: usable only when consistent.
		{name: "agree, absolute tighter wins", h: kv{{rt, "2000"}, {rd, unixMs(1900 * time.Millisecond)}}, wantSource: wire.SourceRequestDeadline, wantRemaining: 1900 * time.Millisecond},
		{name: "agree, relative tighter wins", h: kv{{rt, "2000"}, {rd, unixMs(2100 * time.Millisecond)}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 2 * time.Second},
		{name: "agree at the threshold", h: kv{{rt, "2000"}, {rd, unixMs(1750 * time.Millisecond)}}, wantSource: wire.SourceRequestDeadline, wantRemaining: 1750 * time.Millisecond},
		{name: "disagree, absolute far earlier", h: kv{{rt, "2000"}, {rd, unixMs(1749 * time.Millisecond)}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 2 * time.Second, wantSkew: true},
		{name: "disagree, absolute in the past", h: kv{{rt, "2000"}, {rd, unixMs(-time.Hour)}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 2 * time.Second, wantSkew: true},
		{name: "absolute far later is not skew", h: kv{{rt, "2000"}, {rd, unixMs(time.Hour)}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 2 * time.Second},
		{name: "wider skew threshold", h: kv{{rt, "2000"}, {rd, unixMs(time.Second)}}, skew: 2 * time.Second, wantSource: wire.SourceRequestDeadline, wantRemaining: time.Second},
		{name: "agrees with the strictest relative", h: kv{{wire.HeaderEnvoyExpectedTimeout, "500"}, {rt, "2000"}, {rd, unixMs(400 * time.Millisecond)}}, wantSource: wire.SourceRequestDeadline, wantRemaining: 400 * time.Millisecond},

		// Absolute alone.
		{name: "absolute alone", h: kv{{rd, unixMs(3 * time.Second)}}, wantSource: wire.SourceRequestDeadline, wantRemaining: 3 * time.Second},
		{name: "absolute alone, just passed: expired", h: kv{{rd, unixMs(-100 * time.Millisecond)}}, wantSource: wire.SourceRequestDeadline, wantRemaining: -100 * time.Millisecond},
		{name: "absolute alone, far past: skew, not expiry", h: kv{{rd, unixMs(-5 * time.Second)}}, wantSkew: true},
		{name: "absolute alone, 1970", h: kv{{rd, "5"}}, wantSkew: true},
		{name: "one skewed absolute, one usable", h: kv{{rd, unixMs(-5 * time.Second)}, {wire.HeaderXRequestDeadline, unixMs(time.Second)}}, wantSource: wire.SourceXRequestDeadline, wantRemaining: time.Second, wantSkew: true},
		{name: "X-Request-Deadline in microseconds", h: kv{{wire.HeaderXRequestDeadline, strconv.FormatInt(now.Add(1500*time.Millisecond).UnixMicro(), 10)}}, wantSource: wire.SourceXRequestDeadline, wantRemaining: 1500 * time.Millisecond},
		{
			name: "Finagle and linkerd",
			h: kv{{wire.HeaderFinagleDeadline, nanoPair(-time.Second, 900*time.Millisecond)},
				{wire.HeaderL5DDeadline, nanoPair(-time.Second, 800*time.Millisecond)}, {rt, "1000"}},
			wantSource: wire.SourceL5DDeadline, wantRemaining: 800 * time.Millisecond,
		},

		// Abuse.
		{name: "17 values: the 17th is not read", h: kv{{rt, strings.Repeat("900,", 16) + "1"}}, wantSource: wire.SourceRequestTimeout, wantRemaining: 900 * time.Millisecond, wantMalformed: 1},
		{name: "1 MB value", h: kv{{rt, strings.Repeat("9", 1<<20)}, {wire.HeaderGRPCTimeout, "2S"}}, wantSource: wire.SourceGRPCTimeout, wantRemaining: 2 * time.Second, wantMalformed: 1},
		{name: "1 MB comma list", h: kv{{rt, strings.Repeat("1,", 1<<19)}}, wantSource: wire.SourceRequestTimeout, wantRemaining: time.Millisecond, wantMalformed: 1},
		{name: "1 MB of commas", h: kv{{rt, strings.Repeat(",", 1<<20)}}, wantMalformed: 1},
	}
	for _, tt := range tests {
		for carrier, h := range carriers(tt.h) {
			t.Run(tt.name+"/"+carrier, func(t *testing.T) {
				t.Parallel()
				trust := tt.trust
				if trust == 0 {
					trust = wire.SourcesAll
				}
				x := wire.Extract(h, trust, tt.skew, now)
				if x.Source != tt.wantSource || x.Remaining != tt.wantRemaining ||
					x.Malformed != tt.wantMalformed || x.Skew != tt.wantSkew {
					t.Fatalf("Extract = source %v, remaining %v, malformed %d, skew %v; want %v, %v, %d, %v",
						x.Source, x.Remaining, x.Malformed, x.Skew,
						tt.wantSource, tt.wantRemaining, tt.wantMalformed, tt.wantSkew)
				}
				if x.Source != 0 && !x.Deadline.Equal(now.Add(x.Remaining)) {
					t.Fatalf("Deadline %v is not now+Remaining", x.Deadline)
				}
				if x.Source == 0 && !x.Deadline.IsZero() {
					t.Fatalf("Deadline %v without a source", x.Deadline)
				}
				if (x.Malformed > 0) != (x.Err() != nil) || (x.Malformed > 0) != (x.MalformedFrom != 0) {
					t.Fatalf("Malformed %d, MalformedFrom %v, Err %v disagree", x.Malformed, x.MalformedFrom, x.Err())
				}
				if x.Skew != (x.SkewFrom != 0) {
					t.Fatalf("Skew %v, SkewFrom %v disagree", x.Skew, x.SkewFrom)
				}
			})
		}
	}
}

// nanoPair returns a Finagle deadline value set at now+set, expiring at now+deadline.
func nanoPair(set, deadline time.Duration) string {
	return strconv.FormatInt(now.Add(set).UnixNano(), 10) + " " + strconv.FormatInt(now.Add(deadline).UnixNano(), 10)
}

func TestExtractErrNamesFirstMalformedHeader(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set(wire.HeaderContextTTL, "12x")
	h.Set(wire.HeaderRequestTimeout, "+5")
	x := wire.Extract(wire.HTTPHeader(h), wire.SourcesAll, 0, now)
	var pe *wire.ParseError
	if err := x.Err(); !errors.Is(err, wire.ErrMalformed) || !errors.As(err, &pe) {
		t.Fatalf("Err() = %v", err)
	}
	// Request-Timeout-Ms is read first.
	if pe.Header != wire.HeaderRequestTimeout || pe.Value != "+5" || pe.Reason != "not an ASCII digit" {
		t.Fatalf("ParseError = %+v", pe)
	}
	if want := `wire: malformed Request-Timeout-Ms "+5": not an ASCII digit`; pe.Error() != want {
		t.Fatalf("Error() = %q; want %q", pe.Error(), want)
	}
	if x.MalformedFrom != wire.SourceRequestTimeout|wire.SourceContextTTL {
		t.Fatalf("MalformedFrom = %v", x.MalformedFrom)
	}
}

func TestExtractNilHeader(t *testing.T) {
	t.Parallel()
	if x := wire.Extract(nil, wire.SourcesAll, 0, now); x != (wire.Extraction{}) {
		t.Fatalf("Extract(nil) = %+v", x)
	}
	if x := wire.Extract(wire.HTTPHeader(nil), wire.SourcesAll, 0, now); x.Source != 0 {
		t.Fatalf("Extract(HTTPHeader(nil)) = %+v", x)
	}
}

// TestExtractKeepsMonotonic checks that the deadline is now plus a duration, so that it
// carries now's monotonic reading even when an absolute header won.
func TestExtractKeepsMonotonic(t *testing.T) {
	t.Parallel()
	wall := time.Now()
	h := wire.Metadata{"request-timeout-ms": {"2000"}, "request-deadline": {strconv.FormatInt(wall.Add(1900*time.Millisecond).UnixMilli(), 10)}}
	x := wire.Extract(h, wire.SourcesAll, 0, wall)
	if x.Source != wire.SourceRequestDeadline {
		t.Fatalf("source %v", x.Source)
	}
	if got, want := x.Deadline.String(), wall.Add(x.Remaining).String(); got != want || !strings.Contains(got, "m=") {
		t.Fatalf("Deadline %s; want %s with a monotonic reading", got, want)
	}
}

func TestHTTPHeaderValues(t *testing.T) {
	t.Parallel()
	names := []string{
		wire.HeaderRequestTimeout, wire.HeaderRequestDeadline, wire.HeaderXRequestDeadline,
		wire.HeaderGRPCTimeout, wire.HeaderConnectTimeout, wire.HeaderEnvoyExpectedTimeout,
		wire.HeaderEnvoyUpstreamTimeout, wire.HeaderContextTTL, wire.HeaderL5DDeadline,
		wire.HeaderFinagleDeadline, wire.HeaderBudgetExpired, "X-Other",
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			h.Set(name, "v")
			for _, ask := range []string{name, strings.ToLower(name), http.CanonicalHeaderKey(name)} {
				if got := wire.HTTPHeader(h).Values(ask); len(got) != 1 || got[0] != "v" {
					t.Fatalf("Values(%q) = %q", ask, got)
				}
			}
		})
	}
}

func TestSourcesNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s      wire.Sources
		header string
		str    string
	}{
		{0, "", "none"},
		{wire.SourcesNone, "", "none"},
		{wire.SourceContextTTL, wire.HeaderContextTTL, wire.HeaderContextTTL},
		{wire.SourceFinagleDeadline | wire.SourcesNone, wire.HeaderFinagleDeadline, wire.HeaderFinagleDeadline},
		{wire.SourcesOurs, "", "Request-Timeout-Ms|Request-Deadline"},
	}
	for _, tt := range tests {
		if got := tt.s.Header(); got != tt.header {
			t.Errorf("%d.Header() = %q; want %q", tt.s, got, tt.header)
		}
		if got := tt.s.String(); got != tt.str {
			t.Errorf("%d.String() = %q; want %q", tt.s, got, tt.str)
		}
	}
	if !wire.SourcesAll.Has(wire.SourcesDefault) || wire.SourcesDefault.Has(wire.SourceL5DDeadline) {
		t.Error("SourcesDefault must be all but the Finagle pair")
	}
}
