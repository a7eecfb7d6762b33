package connectbudget_test

import (
	"context"
	"github.com/timebudget/budget/edge"
	"io"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/wire"
)

// fakeConn is a server stream that delivers one message and then ends.
type fakeConn struct {
	header http.Header
	sent   bool
}

func (c *fakeConn) Spec() connect.Spec {
	return connect.Spec{Procedure: bidiProc, StreamType: connect.StreamTypeBidi}
}
func (c *fakeConn) Peer() connect.Peer          { return connect.Peer{} }
func (c *fakeConn) RequestHeader() http.Header  { return c.header }
func (c *fakeConn) Send(any) error              { return nil }
func (c *fakeConn) ResponseHeader() http.Header { return http.Header{} }
func (c *fakeConn) ResponseTrailer() http.Header {
	return http.Header{}
}
func (c *fakeConn) Receive(any) error {
	if c.sent {
		return io.EOF
	}
	c.sent = true
	return nil
}

// FuzzServerInterceptor calls the server interceptor as connect-go does,
// unary and streaming, with hostile request headers and any deadline on the
// context, under a strict policy with a Max and its lenient twin, for
// several trust sets. Whatever arrives: no panic; the call ends with
// success, DeadlineExceeded or (strict only) InvalidArgument; a refused call
// never runs the handler; the handler never has more than Max, nor more
// than the context allowed; and a message's context never outlives the
// stream's nor the server's per-message budget.
func FuzzServerInterceptor(f *testing.F) {
	f.Add("1500", "", "", "", "", int64(0), uint8(0))
	f.Add("0", "", "", "", "50", int64(3_600_000), uint8(1))
	f.Add("3600000", "1", "99999999H", "9999999999", "9999999999999999999", int64(-5), uint8(2))
	f.Add("5,  300 ,x", "1700000000000", "0n", ",,,,", "+5", int64(1), uint8(3))
	f.Add("", "", "2S", "", "-1", int64(50), uint8(4))
	const max, perMessage = time.Second, 200 * time.Millisecond
	trusts := []wire.Sources{0, wire.SourcesNone, wire.SourcesOurs, wire.SourcesAll, wire.SourceConnectTimeout}
	var interceptors [][2]connect.Interceptor
	for _, trust := range trusts {
		var pair [2]connect.Interceptor
		for i, strict := range []bool{false, true} {
			p := wire.Policy{Max: max, Min: time.Millisecond, AnswerMargin: time.Millisecond, Trust: trust, Strict: strict}
			pair[i] = connectbudget.NewServerInterceptor(edge.WithPolicy(&p), connectbudget.WithMessageBudget(perMessage))
		}
		interceptors = append(interceptors, pair)
	}
	f.Fuzz(func(t *testing.T, rt, rd, grpcTimeout, connectTimeout, messageTimeout string, ctxMs int64, trust uint8) {
		h := http.Header{}
		for k, v := range map[string]string{"Request-Timeout-Ms": rt, "Request-Deadline": rd, "Grpc-Timeout": grpcTimeout,
			"Connect-Timeout-Ms": connectTimeout, connectbudget.HeaderMessageTimeout: messageTimeout} {
			if v != "" {
				h.Set(k, v)
			}
		}
		for i, strict := range []bool{false, true} {
			ic := interceptors[int(trust)%len(trusts)][i]
			ctx := context.Background()
			var ctxDeadline time.Time
			if ctxMs != 0 {
				ctxDeadline = time.Now().Add(time.Duration(ctxMs%3_600_000) * time.Millisecond)
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, ctxDeadline)
				defer cancel()
			}
			check := func(hctx context.Context, ran bool, err error) {
				code := connect.CodeOf(err)
				switch {
				case err == nil:
				case code == connect.CodeDeadlineExceeded:
				case code == connect.CodeInvalidArgument && strict:
				default:
					t.Fatalf("strict=%v: error %v with code %v", strict, err, code)
				}
				if err != nil && code == connect.CodeInvalidArgument && ran {
					t.Fatal("a refused call ran its handler")
				}
				if !ran {
					return
				}
				if left, ok := budget.Remaining(hctx); ok && left > max {
					t.Fatalf("handler has %v, more than Max %v", left, max)
				}
				if dl, ok := hctx.Deadline(); ok && !ctxDeadline.IsZero() && dl.After(ctxDeadline) {
					t.Fatalf("handler deadline %v after the context's %v", dl, ctxDeadline)
				}
			}
			var hctx context.Context
			unary := ic.WrapUnary(func(ctx context.Context, _ connect.AnyRequest) (connect.AnyResponse, error) {
				hctx = ctx
				return connect.NewResponse(&str{}), nil
			})
			req := connect.NewRequest(&str{})
			for k, v := range h {
				req.Header()[k] = v
			}
			_, err := unary(ctx, req)
			check(hctx, hctx != nil, err)

			hctx = nil
			stream := ic.WrapStreamingHandler(func(ctx context.Context, conn connect.StreamingHandlerConn) error {
				hctx = ctx
				if err := conn.Receive(new(str)); err != nil {
					return err
				}
				mctx, mcancel := connectbudget.MessageContext(ctx)
				defer mcancel()
				if dl, ok := mctx.Deadline(); ok {
					if sdl, ok := ctx.Deadline(); ok && dl.After(sdl) {
						t.Fatalf("message deadline %v after the stream's %v", dl, sdl)
					}
					if time.Until(dl) > perMessage {
						t.Fatalf("message has %v, more than the per-message budget %v", time.Until(dl), perMessage)
					}
				}
				return nil
			})
			err = stream(ctx, &fakeConn{header: h})
			check(hctx, hctx != nil, err)
		}
	})
}
