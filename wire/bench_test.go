package wire_test

import (
	"testing"
	"time"

	"github.com/timebudget/budget/wire"
)

// The design's target for header encode + parse is 150 ns and at most 1 allocation.
// The Format+Parse benchmarks measure what an HTTP client and server pay together (the
// one allocation is the header string net/http needs); the Append+Parse ones measure
// the allocation-free path.

var (
	sinkDuration time.Duration
	sinkTime     time.Time
	sinkDecision wire.Decision
)

func BenchmarkRequestTimeoutFormatParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s, _ := wire.FormatRequestTimeout(1520 * time.Millisecond)
		sinkDuration, _, _ = wire.ParseRequestTimeout(s)
	}
}

func BenchmarkRequestTimeoutAppendParse(b *testing.B) {
	b.ReportAllocs()
	var buf [16]byte
	for b.Loop() {
		v, _ := wire.AppendRequestTimeout(buf[:0], 1520*time.Millisecond)
		sinkDuration, _, _ = wire.ParseRequestTimeout(string(v))
	}
}

func BenchmarkRequestDeadlineFormatParse(b *testing.B) {
	b.ReportAllocs()
	deadline := now.Add(1500 * time.Millisecond)
	for b.Loop() {
		s, _ := wire.FormatRequestDeadline(deadline)
		sinkTime, _, _ = wire.ParseRequestDeadline(s)
	}
}

func BenchmarkRequestDeadlineAppendParse(b *testing.B) {
	b.ReportAllocs()
	deadline := now.Add(1500 * time.Millisecond)
	var buf [24]byte
	for b.Loop() {
		v, _ := wire.AppendRequestDeadline(buf[:0], deadline)
		sinkTime, _, _ = wire.ParseRequestDeadline(string(v))
	}
}

func BenchmarkGRPCTimeoutFormatParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s, _ := wire.FormatGRPCTimeout(1520 * time.Millisecond)
		sinkDuration, _, _ = wire.ParseGRPCTimeout(s)
	}
}

func BenchmarkGRPCTimeoutAppendParse(b *testing.B) {
	b.ReportAllocs()
	var buf [16]byte
	for b.Loop() {
		v, _ := wire.AppendGRPCTimeout(buf[:0], 1520*time.Millisecond)
		sinkDuration, _, _ = wire.ParseGRPCTimeout(string(v))
	}
}

// BenchmarkDecideHTTP decides over a typical inbound http.Header: a dozen ordinary
// headers and both of this library's budget headers.
func BenchmarkDecideHTTP(b *testing.B) {
	b.ReportAllocs()
	h := wire.HTTPHeader(typicalHeader())
	p := &wire.Policy{Max: 10 * time.Second, Default: 2 * time.Second, Min: 20 * time.Millisecond, AnswerMargin: 5 * time.Millisecond}
	for b.Loop() {
		sinkDecision, _ = p.Decide(h, now)
	}
}

// BenchmarkDecideHTTPNoHeaders is the edge or legacy-client case: nothing sent, so
// every trusted source is looked up and missed.
func BenchmarkDecideHTTPNoHeaders(b *testing.B) {
	b.ReportAllocs()
	h := wire.HTTPHeader{"Accept": {"*/*"}}
	p := &wire.Policy{Default: 2 * time.Second}
	for b.Loop() {
		sinkDecision, _ = p.Decide(h, now)
	}
}

func BenchmarkDecideMetadata(b *testing.B) {
	b.ReportAllocs()
	md := wire.Metadata{"grpc-timeout": {"1500000u"}, "content-type": {"application/grpc"}, "user-agent": {"grpc-go/1.70.0"}}
	p := &wire.Policy{Max: 10 * time.Second}
	for b.Loop() {
		sinkDecision, _ = p.Decide(md, now)
	}
}

func BenchmarkSwitchDecideParallel(b *testing.B) {
	b.ReportAllocs()
	var s wire.Switch
	s.Store(&wire.Policy{Default: 2 * time.Second})
	h := wire.HTTPHeader(typicalHeader())
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Decide(h, now); err != nil {
				b.Error(err)
			}
		}
	})
}
