package pgxbudget

// WithoutDirectPath returns a copy of p whose Query, QueryRow and Exec go
// through a pgx.Batch, as they did before the direct pipeline, for
// TestOverheadRatio's comparison.
func WithoutDirectPath(p *Pool) *Pool {
	q := *p
	q.cfg.direct = false
	return &q
}
