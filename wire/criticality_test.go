package wire_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/wire"
)

func TestRequestCriticalityRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []budget.Criticality{wire.CriticalitySheddable, wire.CriticalityDefault, wire.CriticalityCritical} {
		v, ok := wire.FormatRequestCriticality(c)
		b, ok2 := wire.AppendRequestCriticality([]byte("x"), c)
		if !ok || !ok2 || string(b) != "x"+v {
			t.Fatalf("class %d: Format %q %v, Append %q %v", c, v, ok, b, ok2)
		}
		got, ok, err := wire.ParseRequestCriticality(strings.ToUpper(v))
		if got != c || !ok || err != nil {
			t.Errorf("Parse(%q) = %d, %v, %v", strings.ToUpper(v), got, ok, err)
		}
	}
	for _, c := range []budget.Criticality{-2, 2, 127, -128} {
		if v, ok := wire.FormatRequestCriticality(c); ok || v != "" {
			t.Errorf("Format(%d) = %q, %v", c, v, ok)
		}
		if b, ok := wire.AppendRequestCriticality(nil, c); ok || len(b) != 0 {
			t.Errorf("Append(%d) = %q, %v", c, b, ok)
		}
	}
}

func TestParseRequestCriticalityHostile(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		" critical", "critical ", "critical,", "crit", "critical_plus", "CRITICAL\x00", "\u212aritical",
		"sheddable\r\nX-Evil: 1", "0", "-1", "1", "default\t", strings.Repeat("sheddable", 1<<16),
	} {
		c, ok, err := wire.ParseRequestCriticality(v)
		var pe *wire.ParseError
		if c != wire.CriticalityDefault || ok || !errors.As(err, &pe) || !errors.Is(err, wire.ErrMalformed) ||
			pe.Header != wire.HeaderRequestCriticality || len(pe.Value) > 32 {
			t.Errorf("Parse(%.24q) = %d, %v, %v", v, c, ok, err)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\r\n\x00") {
			t.Errorf("Parse(%.24q): the error %q holds control characters", v, err)
		}
	}
	if c, ok, err := wire.ParseRequestCriticality(""); c != wire.CriticalityDefault || ok || err != nil {
		t.Errorf(`Parse("") = %d, %v, %v; want absent`, c, ok, err)
	}
}

// onlyValues is a Header of a carrier of its own, such as a broker's.
type onlyValues map[string][]string

func (h onlyValues) Values(name string) []string { return h[name] }

func TestDecideCriticality(t *testing.T) {
	t.Parallel()
	httpH := func(vals ...string) wire.Header {
		return wire.HTTPHeader(http.Header{"Request-Criticality": vals, "Request-Timeout-Ms": {"500"}})
	}
	md := func(vals ...string) wire.Header { return wire.Metadata{"request-criticality": vals} }
	own := func(vals ...string) wire.Header { return onlyValues{"request-criticality": vals} }
	for _, tc := range []struct {
		name      string
		p         wire.Policy
		h         wire.Header
		want      budget.Criticality
		header    bool
		malformed int
		refused   bool
	}{
		{"zero policy trusts it", wire.Policy{}, httpH("critical"), 1, true, 0, false},
		{"metadata", wire.Policy{}, md("Sheddable"), -1, true, 0, false},
		{"a carrier of its own", wire.Policy{}, own("sheddable"), -1, true, 0, false},
		{"an edge ignores it", wire.Policy{Trust: wire.SourcesNone, Max: time.Second}, httpH("critical"), 0, false, 0, false},
		{"an edge applies its own class", wire.Policy{Trust: wire.SourcesNone, Criticality: -1}, httpH("critical"), -1, false, 0, false},
		{"trusting only the deadline pair ignores it", wire.Policy{Trust: wire.SourcesOurs}, httpH("critical"), 0, false, 0, false},
		{"trusted alone", wire.Policy{Trust: wire.SourceRequestCriticality}, md("critical"), 1, true, 0, false},
		{"absent: the policy's class", wire.Policy{Criticality: 1}, md(), 1, false, 0, false},
		{"least critical wins", wire.Policy{}, httpH("critical", "default, sheddable"), -1, true, 0, false},
		{"a hop cannot raise it", wire.Policy{}, md("sheddable", "critical"), -1, true, 0, false},
		{"lenient: malformed ignored and counted", wire.Policy{Criticality: 1}, md("urgent"), 1, false, 1, false},
		{"lenient: the valid value stays", wire.Policy{}, md("urgent, critical"), 1, true, 1, false},
		{"strict: malformed refused", wire.Policy{Strict: true}, md("urgent"), 0, false, 1, true},
		{"too many values", wire.Policy{}, md(strings.Repeat("critical,", 20)), 1, true, 1, false},
		{"empty elements skipped", wire.Policy{}, md(" , critical ,"), 1, true, 0, false},
		{"an out-of-range policy class is clamped", wire.Policy{Criticality: 9}, md(), 1, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.p.Decide(tc.h, now)
			if d.Criticality != tc.want || d.CriticalityFromHeader != tc.header || d.Malformed != tc.malformed || (err != nil) != tc.refused {
				t.Fatalf("Decide = %+v, %v", d, err)
			}
			if tc.malformed > 0 && !d.MalformedFrom.Has(wire.SourceRequestCriticality) {
				t.Errorf("MalformedFrom = %v", d.MalformedFrom)
			}
			var pe *wire.ParseError
			if tc.refused && (d.Reason != wire.ReasonMalformed || !errors.As(err, &pe) || pe.Header != wire.HeaderRequestCriticality) {
				t.Errorf("refusal: %+v, %v", d, err)
			}
			if d.Source == wire.SourceRequestCriticality {
				t.Error("the class header set the deadline")
			}
		})
	}
	var nilPolicy *wire.Policy
	if d, _ := nilPolicy.Decide(md("critical"), now); d.Criticality != 0 || d.CriticalityFromHeader {
		t.Errorf("enforcement off read the class: %+v", d)
	}
}

func TestCriticalitySourceAndValidate(t *testing.T) {
	t.Parallel()
	s := wire.SourceRequestCriticality
	if s.Header() != wire.HeaderRequestCriticality || !wire.SourcesAll.Has(s) || !wire.SourcesDefault.Has(s) || wire.SourcesOurs.Has(s) {
		t.Errorf("SourceRequestCriticality: header %q, in All %v, in Default %v", s.Header(), wire.SourcesAll.Has(s), wire.SourcesDefault.Has(s))
	}
	if got := (wire.SourceRequestTimeout | s).String(); got != "Request-Timeout-Ms|Request-Criticality" {
		t.Errorf("String = %q", got)
	}
	for _, c := range []budget.Criticality{-2, 2} {
		err := (&wire.Policy{Criticality: c}).Validate()
		if !errors.Is(err, wire.ErrInvalidPolicy) || !strings.Contains(err.Error(), "Criticality") {
			t.Errorf("Validate(Criticality %d) = %v", c, err)
		}
	}
	if err := (&wire.Policy{Criticality: -1, Trust: wire.SourcesNone | wire.SourceRequestCriticality}).Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
}

// TestCriticalityAllocs pins what reading and writing the class costs: nothing.
// It does not call t.Parallel: AllocsPerRun counts the whole process's allocations.
func TestCriticalityAllocs(t *testing.T) {
	h := typicalHeader()
	h.Set(wire.HeaderRequestCriticality, "critical")
	hh := wire.HTTPHeader(h)
	md := wire.Metadata{"request-criticality": {"sheddable"}, "request-timeout-ms": {"900"}}
	junk := wire.Metadata{"request-criticality": {"urgent"}}
	p := &wire.Policy{Max: 10 * time.Second}
	buf := make([]byte, 0, 16)
	for name, f := range map[string]func(){
		"Parse":           func() { _, _, _ = wire.ParseRequestCriticality("Sheddable") },
		"Append":          func() { _, _ = wire.AppendRequestCriticality(buf[:0], wire.CriticalityCritical) },
		"Format":          func() { _, _ = wire.FormatRequestCriticality(wire.CriticalityCritical) },
		"Decide HTTP":     func() { _, _ = p.Decide(hh, now) },
		"Decide Metadata": func() { _, _ = p.Decide(md, now) },
		"Decide lenient":  func() { _, _ = p.Decide(junk, now) },
	} {
		if got := testing.AllocsPerRun(100, f); got != 0 {
			t.Errorf("%s: %v allocs per run; want 0", name, got)
		}
	}
}

// FuzzRequestCriticality checks the parser's contract: no panic, empty is absent, a
// malformed value is a *ParseError naming the header, and a valid value is one of the
// three names in some ASCII case, which re-encodes to the same class.
func FuzzRequestCriticality(f *testing.F) {
	addSeeds(f, "critical", "DEFAULT", "Sheddable", "critical_plus", "\u212aritical", "sheddable\r\n", strings.Repeat("s", 10))
	f.Fuzz(func(t *testing.T, v string) {
		c, ok, err := wire.ParseRequestCriticality(v)
		checkErr(t, wire.HeaderRequestCriticality, v, ok, err)
		if !ok {
			if c != wire.CriticalityDefault {
				t.Fatalf("Parse(%q) = %d without ok", v, c)
			}
			return
		}
		s, fok := wire.FormatRequestCriticality(c)
		if !fok || !strings.EqualFold(s, v) || len(s) != len(v) {
			t.Fatalf("Parse(%q) = %d, which formats as %q", v, c, s)
		}
		d, derr := (&wire.Policy{}).Decide(wire.Metadata{"request-criticality": {v}}, now)
		if derr != nil || d.Criticality != c || !d.CriticalityFromHeader {
			t.Fatalf("Decide over %q = %+v, %v", v, d, derr)
		}
	})
}

func BenchmarkRequestCriticalityParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if c, ok, _ := wire.ParseRequestCriticality("Sheddable"); !ok || c != wire.CriticalitySheddable {
			b.Fatal(c)
		}
	}
}

func BenchmarkDecideWithCriticality(b *testing.B) {
	h := typicalHeader()
	h.Set(wire.HeaderRequestCriticality, "critical")
	hh := wire.HTTPHeader(h)
	p := &wire.Policy{Max: 10 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := p.Decide(hh, now); d.Criticality != wire.CriticalityCritical {
			b.Fatal(d)
		}
	}
}
