package dependency

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Hop is one network call from the edge to a dependency. The edge's code is
// the same whichever protocol carries the call; the pattern decides only
// which context the call gets and whether the transport sends the budget.
type Hop interface {
	// Call makes one request and returns nil on an answer. An error says why
	// there was none: ctx's error (possibly wrapped) when time ran out or the
	// caller gave up, a refusal matching budget.ErrInsufficient, or a failure.
	Call(ctx context.Context) error
}

// HTTPHop calls a dependency over HTTP/1.1.
type HTTPHop struct {
	Client *http.Client
	URL    string
}

// Call makes one GET and returns nil on a 200 answer.
func (h HTTPHop) Call(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
	if err != nil {
		return err
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		// An upstream's Budget-Expired answer matches
		// context.DeadlineExceeded, so the caller's Op records the attempt
		// as timed out.
		return unwrapURLError(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	err = &statusError{code: resp.StatusCode, stage: resp.Header.Get("Budget-Expired")}
	// A dependency that stopped at the deadline it was handed answers just
	// before the caller's own context ends; count both as running out of time.
	if ctxErr := ctx.Err(); ctxErr != nil || resp.StatusCode == http.StatusGatewayTimeout {
		return fmt.Errorf("%w (%v)", cmp.Or(ctxErr, context.DeadlineExceeded), err)
	}
	return err
}

// unwrapURLError keeps the cause of a failed HTTP call (a context error, a
// budget refusal) visible to errors.Is without the URL noise.
func unwrapURLError(err error) error {
	if cause := errors.Unwrap(err); cause != nil {
		return cause
	}
	return err
}

// statusError is a dependency's non-200 answer.
type statusError struct {
	code  int
	stage string // from a Budget-Expired header, when the server refused for lack of time
}

// Error says the status and, when the server refused for lack of time,
// the stage it named.
func (e *statusError) Error() string {
	if e.stage != "" {
		return fmt.Sprintf("HTTP %d: budget expired at %s", e.code, e.stage)
	}
	return fmt.Sprintf("HTTP %d", e.code)
}

// GrpcHop calls a dependency's Call method over gRPC. Every dependency served
// over gRPC has the same single unary method, so no generated code is needed:
// the messages are protobuf's well-known StringValue.
type GrpcHop struct {
	Conn *grpc.ClientConn
}

const grpcMethod = "/budgetdemo.Dependency/Call"

// Call invokes the dependency's Call method once.
func (h GrpcHop) Call(ctx context.Context) error {
	out := new(wrapperspb.StringValue)
	err := h.Conn.Invoke(ctx, grpcMethod, wrapperspb.String("q"), out)
	if err == nil {
		return nil
	}
	// Give the caller the context's own error when the context ended, and
	// context.DeadlineExceeded when the callee ran out of the time it was
	// sent a moment before, so timeouts are told apart from failures the
	// same way for every hop (and an Op records them as timed out).
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%w (%v)", ctxErr, status.Code(err))
	}
	if status.Code(err) == codes.DeadlineExceeded {
		return fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	return err
}
