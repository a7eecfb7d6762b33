package sqlbudget

import "time"

// Option configures a [DB].
type Option interface{ apply(*config) }

type config struct {
	stage   string
	acquire string
	reserve time.Duration
}

type option func(*config)

func (f option) apply(c *config) { f(c) }

// WithStage names the stage in errors and in the ledger. The default is the
// dialect's name ("postgres", "mysql", "mariadb"); taking a connection is
// recorded as the stage followed by ".acquire".
func WithStage(name string) Option {
	return option(func(c *config) {
		if name != "" {
			c.stage = name
		}
	})
}

// WithReserve sets the time kept back from the server-side limit for the
// answer to travel back and be handled. The default is 20 ms, more than
// pgxbudget's 10 ms because the common database/sql drivers (pgx's stdlib,
// go-sql-driver/mysql) close a connection whose context ends mid-statement,
// so the server's own limit should answer first. The reserve never takes
// more than a fifth of the time available. Zero or less keeps nothing back.
func WithReserve(d time.Duration) Option {
	return option(func(c *config) { c.reserve = max(d, 0) })
}
