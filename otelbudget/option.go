package otelbudget

import (
	"time"

	"go.opentelemetry.io/otel/metric"
)

// Option configures [NewObserver].
type Option interface{ apply(*config) }

type config struct {
	provider    metric.MeterProvider
	stageLimit  int
	orphanGrace time.Duration
	spans       bool
}

type option func(*config)

func (f option) apply(c *config) { f(c) }

// DefaultStageLimit is how many distinct stage values an [Observer] reports
// before it reports further ones as "other", unless [WithStageLimit] says
// otherwise.
const DefaultStageLimit = 64

// OtherStage is the stage value reported for every stage first seen after the
// stage limit was reached.
const OtherStage = "other"

// WithMeterProvider sets the meter provider the instruments are created
// with. The default is the global provider, otel.GetMeterProvider(), as
// it is when NewObserver is called.
func WithMeterProvider(p metric.MeterProvider) Option {
	return option(func(c *config) {
		if p != nil {
			c.provider = p
		}
	})
}

// WithStageLimit bounds the distinct values of the stage attribute: the first
// n stage names the observer sees are reported as they are, and every stage
// first seen after that as "other" (see [OtherStage]). Stage names come from
// code (an Op's name, a handler's stage), but httpbudget's Transport names its
// local refusals after the request's host by default, so an unbounded set of
// hosts could otherwise become an unbounded set of series. A quarter of n is
// held for the names of work the code runs (an Op's attempts, fallbacks and
// hedges, queues, detached work): stage names first seen on a boundary's
// events (arrivals, refusals, ignored headers), which an adapter may derive
// from a request, never take it, so they cannot push an Op's name into
// "other". The default is [DefaultStageLimit]; n of zero or less keeps the
// default.
func WithStageLimit(n int) Option {
	return option(func(c *config) {
		if n > 0 {
			c.stageLimit = n
		}
	})
}

// WithOrphanGrace sets how far past the caller's deadline an attempt may end
// before it counts as orphaned work in budget.orphaned. The default is 5 ms,
// the time within which this project expects work to stop once its caller has
// gone; a negative value counts as zero.
func WithOrphanGrace(d time.Duration) Option {
	return option(func(c *config) { c.orphanGrace = max(d, 0) })
}

// WithoutSpans stops the observer from annotating spans: it then records
// metrics only. The default annotates the span found in each event's context
// when that span is recording.
func WithoutSpans() Option {
	return option(func(c *config) { c.spans = false })
}
