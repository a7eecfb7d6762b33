// Package compare runs the same simulated traffic against the same fault
// through several ways of calling a dependency, and measures what each way
// costs: how many requests were answered within the user's patience, how
// much work the dependency did for callers who had already left, and how
// soon calls succeed again once the dependency recovers.
//
// The ways compared are the common bug (a per-call timeout derived from
// context.Background), careful Go (a per-call timeout derived from the
// request's context, larger than what is left), failsafe-go (a circuit
// breaker composed with a timeout policy, run with the request's context) and
// budget (an [github.com/timebudget/budget.Op] admitting calls inside one
// request deadline, with a cheap fallback). Every figure is measured while
// the traffic runs: the dependency records how long it worked and when each
// caller gave up, and each request records when and how it was answered.
// Nothing is derived from a model of the strategies.
//
// [Scenario.Run] uses the clock it is given. Inside a testing/synctest bubble
// the whole run takes fake time, so twelve seconds of traffic run in a
// fraction of a second with no timing noise; outside one it takes real time.
// Fake time does not order goroutines that wake at the same instant: at a
// fixed arrival rate a request often arrives just as another's deadline
// passes, and which runs first can differ between runs. budget's figures
// barely move (one request either way); failsafe-go's breaker can shift its
// open and half-open cycle by its delay, so its recovery is best read over
// several recovery moments, as the tests do.
//
// The module is separate from the root module so that the root keeps no
// requirements: only this module requires failsafe-go.
package compare
