package dependency

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"net"
	"net/http"
	"time"

	"github.com/timebudget/budget/cmd/budget/internal/loopback"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// This file serves the fake dependencies (dependency.go) over HTTP and gRPC,
// each behind the same inbound policy, so the same servers serve callers
// with and without budgets.

// ServerHTTP wraps a dependency's HTTP handler with its inbound policy: the
// request's deadline is what the caller sent, and there is none when it sent
// nothing, so the same server serves callers with and without budgets.
func ServerHTTP(h http.Handler, stage string) http.Handler {
	return httpbudget.NewHandler(h, edge.WithPolicy(&wire.Policy{}), edge.WithStage(stage))
}

// serverGRPCOptions returns the options of a dependency's gRPC server: the
// same inbound policy as its HTTP peers, applied to grpc-timeout and the
// budget metadata, whatever the caller sent.
func serverGRPCOptions(stage string) []grpc.ServerOption {
	return []grpc.ServerOption{grpc.UnaryInterceptor(grpcbudget.UnaryServerInterceptor(
		edge.WithPolicy(&wire.Policy{}), edge.WithStage(stage)))}
}

// DepHTTPServer serves a dependency over HTTP: "/" does a call of the
// dependency's typical latency, and each extra path a call of its own typical
// latency on the same engine (so a fault hits every path).
type DepHTTPServer struct {
	*loopback.HTTPServer
	dep *Dependency
}

// StartDependencyHTTP serves d over HTTP/1.1 on loopback, extra paths
// included.
func StartDependencyHTTP(d *Dependency, extra map[string]time.Duration) (*DepHTTPServer, error) {
	return StartDependencyHTTPServer(d, extra, false)
}

// StartDependencyHTTPServer is startDependencyHTTP; with h2c it also
// speaks HTTP/2 without TLS. A call that fails answers 503, one that ran out
// of the time its caller sent answers 504 with Budget-Expired, so no client
// layer retries it.
func StartDependencyHTTPServer(d *Dependency, extra map[string]time.Duration, h2c bool) (*DepHTTPServer, error) {
	mux := http.NewServeMux()
	handle := func(base time.Duration) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := d.serveWork(r.Context(), base); err != nil {
				code := http.StatusGatewayTimeout
				switch {
				case errors.Is(err, ErrDependencyFailed):
					code = http.StatusServiceUnavailable
				case errors.Is(err, context.DeadlineExceeded):
					// The work stopped at the deadline the caller sent: say
					// the budget is spent, so no client layer retries.
					w.Header().Set("Budget-Expired", d.Name)
				}
				http.Error(w, err.Error(), code)
				return
			}
			_, _ = w.Write([]byte("ok\n"))
		})
	}
	mux.Handle("/", handle(d.Base))
	for path, base := range extra {
		mux.Handle(path, handle(base))
	}
	s, err := loopback.StartHTTPServer(ServerHTTP(mux, d.Name), h2c)
	if err != nil {
		return nil, err
	}
	return &DepHTTPServer{HTTPServer: s, dep: d}, nil
}

// Close stops the server, then ends the dependency's work still running.
func (s *DepHTTPServer) Close() {
	s.HTTPServer.Close()
	s.dep.Close()
}

// depGRPCServer serves a dependency over gRPC.
type depGRPCServer struct {
	srv  *grpc.Server
	Addr string
	dep  *Dependency
	done chan struct{}
}

// StartDependencyGRPC serves d over gRPC on loopback, as the single
// budgetdemo.Dependency/Call method.
func StartDependencyGRPC(d *Dependency) (*depGRPCServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	opts := append([]grpc.ServerOption{grpc.WaitForHandlers(true)}, serverGRPCOptions(d.Name)...)
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&grpcServiceDesc, d)
	s := &depGRPCServer{srv: srv, Addr: ln.Addr().String(), dep: d, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the server, then ends the dependency's work still running.
func (s *depGRPCServer) Close() {
	s.srv.Stop()
	<-s.done
	s.dep.Close()
}

// grpcServiceDesc registers a *dependency as the budgetdemo.Dependency service.
var grpcServiceDesc = grpc.ServiceDesc{
	ServiceName: "budgetdemo.Dependency",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Call", Handler: grpcCallHandler}},
	Metadata:    "budgetdemo",
}

// grpcCallHandler is the Call method's handler, as protoc would generate
// it: decode, run the interceptor chain, serve.
func grpcCallHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	in := new(wrapperspb.StringValue)
	if err := dec(in); err != nil {
		return nil, err
	}
	d := srv.(*Dependency)
	handler := func(ctx context.Context, _ any) (any, error) {
		if err := d.serve(ctx); err != nil {
			return nil, grpcStatus(err)
		}
		return wrapperspb.String(d.Name), nil
	}
	if interceptor == nil {
		return handler(ctx, in)
	}
	return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: grpcMethod}, handler)
}

// grpcStatus maps a dependency's error to a gRPC status: a failure is
// UNAVAILABLE, a context's end its own code.
func grpcStatus(err error) error {
	if errors.Is(err, ErrDependencyFailed) {
		return status.Error(codes.Unavailable, err.Error())
	}
	return status.FromContextError(err).Err()
}
