package grpcbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/wire"
)

// FuzzServerInterceptor calls the unary server interceptor as grpc-go does,
// with hostile metadata in the incoming context and any deadline on it,
// under a strict policy with a Max and its lenient twin, for several trust
// sets. Whatever arrives: no panic; the call ends OK, DEADLINE_EXCEEDED or
// (strict only) INVALID_ARGUMENT; a refused call never runs the handler, and
// a handler that ran ends DEADLINE_EXCEEDED only when its budget had run out;
// the handler never has more than Max, nor more than the context allowed.
func FuzzServerInterceptor(f *testing.F) {
	f.Add("1500", "", "", "", "", "", int64(0), uint8(0))
	f.Add("0", "", "", "", "", "", int64(3_600_000), uint8(1))
	f.Add("3600000", "1", "99999999H", "9999999999", "9999999999999999999", "1000", int64(-5), uint8(2))
	f.Add("5,  300 ,x", "1700000000000", "0n", ",,,,", "+5", "0", int64(1), uint8(3))
	f.Add("", "", "2S", "", "", "3", int64(50), uint8(4))
	const max = time.Second
	trusts := []wire.Sources{0, wire.SourcesNone, wire.SourcesOurs, wire.SourcesAll, wire.SourceGRPCTimeout}
	type variant struct {
		strict bool
		u      grpc.UnaryServerInterceptor
	}
	var variants [][2]variant
	for _, trust := range trusts {
		var pair [2]variant
		for i, strict := range []bool{false, true} {
			p := wire.Policy{Max: max, Min: time.Millisecond, AnswerMargin: time.Millisecond, Trust: trust, Strict: strict}
			pair[i] = variant{strict, grpcbudget.UnaryServerInterceptor(edge.WithPolicy(&p))}
		}
		variants = append(variants, pair)
	}

	f.Fuzz(func(t *testing.T, rt, rd, grpcTimeout, connect, xrd, attempt string, ctxMs int64, trust uint8) {
		md := metadata.MD{
			"request-timeout-ms":             {rt, connect},
			"request-deadline":               {rd},
			"grpc-timeout":                   {grpcTimeout},
			"connect-timeout-ms":             {connect},
			"x-request-deadline":             {xrd},
			"x-envoy-expected-rq-timeout-ms": {rt},
			"context-ttl-ms":                 {connect},
			"l5d-ctx-deadline":               {rd + " " + xrd},
			"request-attempt":                {attempt},
		}
		for _, v := range variants[int(trust)%len(variants)] {
			ctx := metadata.NewIncomingContext(context.Background(), md)
			cancel := context.CancelFunc(func() {})
			if ctxMs != 0 {
				ctx, cancel = context.WithTimeout(ctx, time.Duration(max64(ctxMs, -1))*time.Millisecond)
			}
			ctxDeadline, hasCtxDeadline := ctx.Deadline()
			ran, left, okDeadline := false, time.Duration(0), false
			var later bool
			var handlerDeadline time.Time
			_, err := v.u(ctx, nil, &grpcUnaryInfo, func(hctx context.Context, _ any) (any, error) {
				dl, ok := hctx.Deadline()
				ran, left, okDeadline = true, time.Until(dl), ok
				later = hasCtxDeadline && dl.After(ctxDeadline)
				handlerDeadline = dl
				return nil, nil
			})
			cancel()
			stillLive := time.Now().Before(handlerDeadline)
			switch code := status.Code(err); {
			case code == codes.OK:
				if !ran || !okDeadline || left > max || later {
					t.Fatalf("strict %v: OK with handler run %v, deadline %v, %v left, later than the context %v; want at most %v",
						v.strict, ran, okDeadline, left, later, max)
				}
			case code == codes.DeadlineExceeded && ran:
				// A handler that ran out of budget and returned nil is
				// answered DEADLINE_EXCEEDED, never OK; one with time left
				// must not have been refused.
				if stillLive {
					t.Fatalf("strict %v: DEADLINE_EXCEEDED after the handler ran, with its budget still live (%v left at its start)", v.strict, left)
				}
			case code == codes.DeadlineExceeded || code == codes.InvalidArgument && v.strict:
				if ran {
					t.Fatalf("strict %v: refused with %v but the handler ran", v.strict, code)
				}
			default:
				t.Fatalf("strict %v: code %v (%v); want OK, DEADLINE_EXCEEDED or (strict) INVALID_ARGUMENT", v.strict, code, err)
			}
		}
	})
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
