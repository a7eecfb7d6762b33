package grpcbudget

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget/edge/pick"
)

// budgetPicker picks among the endpoints that were ready when it was built.
// reps[i] holds the measurements of the endpoint whose pick_first picker is
// pickers[i].
type budgetPicker struct {
	chooser *pick.Balancer
	reps    []*pick.Replica
	pickers []balancer.Picker
}

// Pick chooses an endpoint for the call (see [BalancerName]) and lets its
// pick_first child pick the subchannel. It allocates nothing: the record
// of the call that its Done callback fills in comes from a pool. (Recording
// a call's end recomputes the replica's tail estimate at most every 5 ms,
// which allocates once.)
func (p *budgetPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	ctx := info.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	now := time.Now()
	i, probe := p.chooser.Choose(ctx, now, p.reps)
	res, err := p.pickers[i].Pick(info)
	if err != nil {
		return res, err
	}
	r := p.reps[i]
	r.Begin()
	c := newPickedCall()
	c.chooser, c.rep, c.start, c.probe, c.next = p.chooser, r, now, probe, res.Done
	c.deadline, c.hasDeadline = ctx.Deadline()
	res.Done = c.doneFunc
	return res, nil
}

// pickedCall is one picked call, until grpc-go reports its end.
type pickedCall struct {
	chooser  *pick.Balancer
	rep      *pick.Replica
	start    time.Time
	deadline time.Time // the call's own deadline, if hasDeadline
	probe    bool
	// hasDeadline: the call had a deadline.
	hasDeadline bool
	next        func(balancer.DoneInfo) // the child picker's own Done, if any
	doneFunc    func(balancer.DoneInfo) // c.done, bound once
}

var callPool sync.Pool // of *pickedCall

func newPickedCall() *pickedCall {
	if c, ok := callPool.Get().(*pickedCall); ok {
		return c
	}
	c := new(pickedCall)
	c.doneFunc = c.done
	return c
}

func (c *pickedCall) done(info balancer.DoneInfo) {
	end := time.Now()
	chooser, r, start, probe, next := c.chooser, c.rep, c.start, c.probe, c.next
	deadline, has := c.deadline, c.hasDeadline
	if r == nil {
		return // reported twice
	}
	*c = pickedCall{doneFunc: c.doneFunc}
	callPool.Put(c)
	chooser.Done(r, start, end, probe, resultOf(info.Err, pick.CutOff(start, end, deadline, has)))
	if next != nil {
		next(info)
	}
}

// resultOf says what a call's end tells of its replica (see the table in
// [BalancerName]'s doc). cutOff says the call reached its own deadline.
func resultOf(err error, cutOff bool) pick.Result {
	if err == nil {
		return pick.OK
	}
	code := status.Code(err)
	if _, ok := status.FromError(err); !ok {
		code = status.FromContextError(err).Code() // a context's error, bare
	}
	switch code {
	case codes.DeadlineExceeded:
		if cutOff {
			return pick.Expired
		}
		return pick.Failed // the replica answered so, with time left: it sheds or its own work timed out
	case codes.Canceled:
		return pick.Canceled
	case codes.Unavailable, codes.ResourceExhausted, codes.Unknown, codes.Internal, codes.DataLoss:
		return pick.Failed
	}
	// InvalidArgument, NotFound, AlreadyExists, PermissionDenied,
	// FailedPrecondition, Aborted, OutOfRange, Unimplemented,
	// Unauthenticated: the replica answered.
	return pick.Answered
}
