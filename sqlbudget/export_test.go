package sqlbudget

import "time"

// Limit exposes the statement rewrite to the black-box tests.
func (d Dialect) Limit(query string, to time.Duration) (string, bool) { return d.limit(query, to) }
