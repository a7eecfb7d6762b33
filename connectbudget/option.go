package connectbudget

import (
	"context"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
)

type serverConfig struct {
	edge.ServerSettings
	message time.Duration
	idle    time.Duration

	messageOps func(procedure string) *budget.Op
	classify   func(ctx context.Context, procedure string) budget.Criticality // see WithClassifier
}

type clientConfig struct {
	edge.ClientSettings
	message time.Duration
	idle    time.Duration
}

type (
	serverOption = edge.ServerFunc[serverConfig]
	bothOption   = edge.Both[serverConfig, clientConfig]
)

// WithMessageBudget sets the per-message budget of streams.
//
// On the server, each message the handler receives gets a context of its
// own, returned by [MessageContext], whose deadline is the earlier of the
// stream's deadline and d after the message was received: a handler that
// hangs on one message gives that message up at its budget and goes on with
// the next, while the stream lives on. A caller may ask for a shorter
// per-message budget with the Request-Message-Timeout-Ms header
// ([HeaderMessageTimeout]) when the inbound policy trusts Request-Timeout-Ms;
// it never gets a longer one than d, and the handler gives up a tenth
// before the caller's value, so that the answer reaches it in time.
// With d zero or negative, only a trusted caller's value sets one.
//
// On the client, each Send and Receive of a stream may take at most d: one
// that takes longer ends the whole stream with DeadlineExceeded, since a
// Connect, gRPC or gRPC-Web stream cannot cancel one message alone. A
// Receive's time counts only while the client awaits an answer (a message it
// sent is unanswered, or it closed its request); its own pauses do not. The
// client also sends d to the server as Request-Message-Timeout-Ms.
//
// Unary calls are not affected: their budget is the call's deadline. The
// default is none.
func WithMessageBudget(d time.Duration) edge.Option {
	d = max(d, 0)
	return bothOption{
		Server: func(c *serverConfig) { c.message = d },
		Client: func(c *clientConfig) { c.message = d },
	}
}

// WithMessageAdmission gives the messages of a procedure's streams a
// [budget.Op] each, on the server: lookup returns the op of a procedure, or
// nil. Each received message is one attempt of the op, from its receipt
// until the handler asks for the next message (or returns), so the op
// learns how long a message takes to handle. A message the op's
// measurements say cannot be handled in its time (the per-message budget,
// or what is left of the stream's) is refused: its context
// ([MessageContext]) is over before the handler sees it, with a cause
// matching [budget.ErrInsufficient], and the handler should skip it. An
// admitted message's context is also bounded by the op's Cap. This is
// apart from [edge.WithAdmission], which admits the whole stream. The default
// is none.
func WithMessageAdmission(lookup func(procedure string) *budget.Op) edge.ServerOption {
	return serverOption(func(c *serverConfig) { c.messageOps = lookup })
}

// WithIdleTimeout ends a stream whose peer sends nothing for d: a Receive
// that waits d for the next message ends the stream with DeadlineExceeded
// and an error matching [ErrIdle] and [context.DeadlineExceeded], and the
// call's ledger gets an event naming the side that went quiet. On the
// server that is the client (the handler's Receive returns the error, and
// the call ends with it); on the client it is the server (the stream is
// canceled), and a Receive waits for it only while the client awaits an
// answer, as for [WithMessageBudget]. Time spent between Receive calls
// does not count: only waiting does. The default is none: a stream lives until its
// deadline, however quiet.
//
// On the server, a Receive that is waiting cannot be interrupted (net/http
// offers no way from an interceptor), so it is left to end with the
// request: over HTTP/2 the stream's answer leaves at once, while over
// HTTP/1.1, where the request body holds the connection, net/http sends it
// only once the client sends more or closes the body. The handler has
// stopped either way. The message its waiting Receive was given must not
// be used.
func WithIdleTimeout(d time.Duration) edge.Option {
	d = max(d, 0)
	return bothOption{
		Server: func(c *serverConfig) { c.idle = d },
		Client: func(c *clientConfig) { c.idle = d },
	}
}

// stageOf is the stage of a call to method, named as the server side names
// its stages ([edge.Named]).
func (c *clientConfig) stageOf(method string) string { return edge.Named(c.Stage, method) }
