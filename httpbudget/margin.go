package httpbudget

import "time"

// WithAnswerMargin sets the answer margin: time held back from the handler's
// deadline so that, when the handler runs out of budget, the 504 the
// middleware answers reaches the caller before the caller's own deadline.
// The handler's deadline is the caller's less the larger of the margin and
// the policy's AnswerMargin.
//
// The default (zero) is adaptive: 1 ms plus four times a peak-following average
// of how late, after a handler's deadline, this handler's answers leave,
// at most 10 ms. A positive d is a fixed margin; a negative d holds back
// nothing but AnswerMargin, so every hop of a request expires at the same
// instant. Either way the margin is at most 1/10 of the caller's
// time left, so it never eats a meaningful share of a small budget.
//
// Why a margin: with one shared deadline every hop expires at once, each
// caller cancels its request as the callee answers, and the cancellations
// (timers, HTTP/1.1 connections closed mid-request, reconnects) all land on
// the machine at the moment the first caller stops waiting. With a margin
// at every hop the innermost handler stops first and every hop answers an
// honest 504 while its caller still listens; connections stay open.
func WithAnswerMargin(d time.Duration) ServerOption {
	return handlerOption(func(c *handlerConfig) { c.margin = d })
}
