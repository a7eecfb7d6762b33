package connectbudget_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/connectbudget"
)

const ms = time.Millisecond

// The procedures of the test service. Its messages are wrapperspb.StringValue.
const (
	unaryProc  = "/budget.test.v1.TestService/Unary"
	serverProc = "/budget.test.v1.TestService/ServerStream"
	clientProc = "/budget.test.v1.TestService/ClientStream"
	bidiProc   = "/budget.test.v1.TestService/Bidi"
	workProc   = "/budget.test.v1.TestService/Work"
)

type str = wrapperspb.StringValue

// service records what its handlers saw.
type service struct {
	calls   atomic.Int32
	mu      sync.Mutex
	left    time.Duration // time left when the last handler started; -1 without deadline
	headers http.Header   // the last request's headers
}

func (s *service) saw(ctx context.Context, h http.Header) {
	s.calls.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left = -1
	if l, ok := budget.Remaining(ctx); ok {
		s.left = l
	}
	s.headers = h.Clone()
}

func (s *service) last() (time.Duration, http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.left, s.headers
}

// handler serves the test service. A unary request "sleep" waits for its
// context to end and returns its error; "nil-after" waits and returns nil.
// The bidi handler answers each message "ok:N", or for "hang" waits for the
// message's context ([connectbudget.MessageContext]) and answers
// "timeout:N". The server stream sends one message and waits for the stream
// to end. The client stream counts messages.
func (s *service) handler(opts ...connect.HandlerOption) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(unaryProc, connect.NewUnaryHandler(unaryProc, func(ctx context.Context, r *connect.Request[str]) (*connect.Response[str], error) {
		s.saw(ctx, r.Header())
		switch r.Msg.GetValue() {
		case "sleep":
			<-ctx.Done()
			return nil, ctx.Err()
		case "nil-after":
			<-ctx.Done()
			return connect.NewResponse(&str{Value: "late"}), nil
		}
		return connect.NewResponse(&str{Value: "ok"}), nil
	}, opts...))
	mux.Handle(serverProc, connect.NewServerStreamHandler(serverProc, func(ctx context.Context, r *connect.Request[str], st *connect.ServerStream[str]) error {
		s.saw(ctx, r.Header())
		if err := st.Send(&str{Value: "first"}); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}, opts...))
	mux.Handle(clientProc, connect.NewClientStreamHandler(clientProc, func(ctx context.Context, st *connect.ClientStream[str]) (*connect.Response[str], error) {
		s.saw(ctx, st.RequestHeader())
		n := 0
		for st.Receive() {
			n++
		}
		if err := st.Err(); err != nil {
			return nil, err
		}
		return connect.NewResponse(&str{Value: fmt.Sprint(n)}), nil
	}, opts...))
	mux.Handle(bidiProc, connect.NewBidiStreamHandler(bidiProc, func(ctx context.Context, st *connect.BidiStream[str, str]) error {
		s.saw(ctx, st.RequestHeader())
		for n := 1; ; n++ {
			m, err := st.Receive()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			answer := fmt.Sprintf("ok:%d", n)
			if m.GetValue() == "hang" {
				mctx, cancel := connectbudget.MessageContext(ctx)
				<-mctx.Done()
				cancel()
				answer = fmt.Sprintf("timeout:%d", n)
			}
			if err := st.Send(&str{Value: answer}); err != nil {
				return err
			}
		}
	}, opts...))
	mux.Handle(workProc, connect.NewBidiStreamHandler(workProc, func(ctx context.Context, st *connect.BidiStream[str, str]) error {
		for {
			if _, err := st.Receive(); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			mctx, cancel := connectbudget.MessageContext(ctx)
			answer := "done"
			if errors.Is(context.Cause(mctx), budget.ErrInsufficient) {
				answer = "refused"
			} else {
				t := time.NewTimer(30 * time.Millisecond) // the work of one message
				select {
				case <-t.C:
				case <-mctx.Done():
					answer = "cut off"
				}
				t.Stop()
			}
			cancel()
			if err := st.Send(&str{Value: answer}); err != nil {
				return err
			}
		}
	}, opts...))
	return mux
}

// transport is how a test reaches its server.
type transport struct {
	name string
	h2c  bool
}

var transports = []transport{{"http1", false}, {"h2c", true}}

// protocol is a client's protocol option.
type protocol struct {
	name string
	opt  connect.ClientOption
}

var protocols = []protocol{
	{"connect", connect.WithClientOptions()},
	{"grpc", connect.WithGRPC()},
	{"grpcweb", connect.WithGRPCWeb()},
}

// serve starts the service on an httptest server speaking HTTP/1.1 and,
// with h2c, HTTP/2 without TLS, and returns its URL and an HTTP client for
// the transport.
func serve(t testing.TB, tr transport, svc *service, opts ...connect.HandlerOption) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(svc.handler(opts...))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	hc := &http.Client{Transport: &http.Transport{}}
	if tr.h2c {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		hc.Transport = &http.Transport{Protocols: p}
	}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL, hc
}

// each runs f for every transport and protocol; grpc needs HTTP/2.
func each(t *testing.T, f func(t *testing.T, tr transport, p protocol)) {
	for _, tr := range transports {
		for _, p := range protocols {
			if p.name == "grpc" && !tr.h2c {
				continue
			}
			t.Run(tr.name+"/"+p.name, func(t *testing.T) {
				t.Parallel()
				f(t, tr, p)
			})
		}
	}
}

func unaryClient(hc *http.Client, url string, opts ...connect.ClientOption) *connect.Client[str, str] {
	return connect.NewClient[str, str](hc, url+unaryProc, opts...)
}

func unary(ctx context.Context, c *connect.Client[str, str], body string) (string, error) {
	resp, err := c.CallUnary(ctx, connect.NewRequest(&str{Value: body}))
	if err != nil {
		return "", err
	}
	return resp.Msg.GetValue(), nil
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	if d <= 0 {
		return context.Background()
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
