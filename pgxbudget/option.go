package pgxbudget

import "time"

// Option configures a [Pool] or, for the options that concern connections,
// [Configure].
type Option interface{ apply(*config) }

type config struct {
	stage   string
	acquire string
	reserve time.Duration
	grace   time.Duration
	settle  time.Duration

	direct   bool // Query, QueryRow and Exec drive pgconn's pipeline (pipeline.go)
	capacity int  // of the direct path's statement cache, per connection
}

const (
	defaultReserve = 10 * time.Millisecond
	defaultGrace   = 100 * time.Millisecond
	defaultSettle  = 100 * time.Millisecond
)

func newConfig(opts []Option) config {
	c := config{stage: "postgres", reserve: defaultReserve, grace: defaultGrace, settle: defaultSettle}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	c.acquire = c.stage + ".acquire"
	return c
}

type option func(*config)

func (f option) apply(c *config) { f(c) }

// WithStage names the stage in errors and in the ledger. The default is
// "postgres"; waiting for a connection is recorded as the stage followed by
// ".acquire".
func WithStage(name string) Option {
	return option(func(c *config) {
		if name != "" {
			c.stage = name
		}
	})
}

// WithReserve sets the time kept back from statement_timeout for the answer
// to travel back and be handled: the server stops a statement that long
// before the budget's deadline, so the caller hears the timeout inside its
// budget. The default is 10 ms. The reserve never takes more than a fifth of
// the time available, so short budgets still get a statement timeout close
// to what they have. Zero or less keeps nothing back.
func WithReserve(d time.Duration) Option {
	return option(func(c *config) { c.reserve = max(d, 0) })
}

// WithCancelGrace sets how long, after a statement's context ends, the
// connection waits for the server to answer the cancel request before pgx
// closes it. It applies to connections of a pool set up with [Configure].
// The default is 100 ms: a local server answers a cancel in about a
// millisecond, and a server that takes longer is probably unreachable, so
// the connection is not worth keeping. A statement whose context ends returns
// to its caller as soon as the server answers, or at the latest after the
// grace. A statement whose budget the server enforces (statement_timeout was
// set) waits the grace plus one second, since the server's answer is known
// to be coming and the connection is worth keeping.
func WithCancelGrace(d time.Duration) Option {
	return option(func(c *config) {
		if d > 0 {
			c.grace = d
		}
	})
}
