package grpcbudget

import "time"

// WithAnswerMargin sets the answer margin of the server interceptors: time
// held back from the handler's deadline so that, when the handler runs out
// of budget, DEADLINE_EXCEEDED reaches the caller before the caller's own
// deadline. The handler's deadline is the caller's less the larger of the
// margin and the policy's AnswerMargin.
//
// The default (zero) is adaptive: 1 ms plus four times a peak-following average
// of how late, after a handler's deadline, handlers return, at most 10 ms.
// A positive d is a fixed margin; a negative d holds back nothing but
// AnswerMargin. Either way the margin is at most 1/10 of the caller's
// time left, so it never eats a meaningful share of a small budget.
//
// With a margin at every hop the innermost handler stops first and each
// hop answers its caller while the caller still listens, instead of every
// hop expiring at the same instant as the caller and being canceled.
func WithAnswerMargin(d time.Duration) ServerOption {
	return serverOption(func(c *serverConfig) { c.Margin = d })
}
