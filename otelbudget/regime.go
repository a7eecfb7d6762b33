package otelbudget

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/timebudget/budget"
)

// AttrRegime is the attribute naming an op's regime on budget.op.regime:
// measuring, shedding, throttling, refusing or probing (see [budget.Regime]).
const AttrRegime = attribute.Key("budget.regime")

// WatchRegimes reports the regime each op is in ([budget.Op.RegimeAt]) as an
// observable gauge, read at each collection:
//
//	budget.op.regime   gauge, s  {stage, regime}  how long the op has been in the regime it is in
//
// Each op gives one point a collection, for its current regime, so that an
// operator sees an op that is refusing, throttling or probing, and for how
// long: a protection that has not let go shows as a regime whose duration
// keeps growing after its cause is gone. An op that has been measuring since
// it was created reports the time since WatchRegimes was called. The stage
// is the op's Name (code chooses it, so the number of series is the number
// of ops). A nil provider means the global one; nil ops are skipped.
//
// Unregister the returned registration to stop reporting. WatchRegimes
// fails only when the meter provider refuses the instrument or the
// callback; the error says which.
func WatchRegimes(provider metric.MeterProvider, ops ...*budget.Op) (metric.Registration, error) {
	if provider == nil {
		provider = otel.GetMeterProvider()
	}
	var watched []*budget.Op
	for _, op := range ops {
		if op != nil {
			watched = append(watched, op)
		}
	}
	m := provider.Meter(ScopeName)
	g, err := m.Float64ObservableGauge("budget.op.regime", metric.WithUnit("s"),
		metric.WithDescription("How long each op has been in its admission regime (measuring, shedding, throttling, refusing, probing)."))
	if err != nil {
		return nil, errors.New("otelbudget: creating budget.op.regime: " + err.Error())
	}
	started := time.Now()
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		now := time.Now()
		for _, op := range watched {
			regime, since := op.RegimeAt(now)
			if since.IsZero() {
				since = started
			}
			o.ObserveFloat64(g, max(now.Sub(since), 0).Seconds(),
				metric.WithAttributes(AttrStage.String(op.Name), AttrRegime.String(regime.String())))
		}
		return nil
	}, g)
	if err != nil {
		return nil, errors.New("otelbudget: registering the budget.op.regime callback: " + err.Error())
	}
	return reg, nil
}
