package overload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/priority"
)

// failsafe-go's adaptive limiter settings: its defaults (limits 1, 200 and
// 20; a recent window of 1 s to 30 s and 50 samples; p90; a baseline of 10;
// a correlation window of 50), with queueing on as its documentation
// recommends for servers whose executions would otherwise be rejected
// strictly: up to twice the limit queued before rejections start, three
// times at most (the factors BuildPrioritized uses by default). A queued
// execution waits as long as its request's context lets it.
const (
	failsafeQueueInitial = 2
	failsafeQueueMax     = 3
	// failsafeCalibration is how often the priority limiter's Prioritizer
	// recalibrates its rejection threshold (ScheduleCalibrations).
	failsafeCalibration = time.Second
)

// priorityOf maps the harness's classes to failsafe-go's priorities.
func priorityOf(class string) priority.Priority {
	switch class {
	case classCritical:
		return priority.High
	case classSheddable:
		return priority.Low
	}
	return priority.Medium
}

func failsafeLimiterSetting(prioritized bool) string {
	s := fmt.Sprintf("failsafe-go %s adaptivelimiter on every hop's server (failsafehttp handler, executions run with the request's context): its defaults (limits min 1, max 200, initial 20; recent window 1-30 s, 50 samples, p90; baseline 10; correlation 50) with WithQueueing(%d, %d)",
		failsafeVersion, failsafeQueueInitial, failsafeQueueMax)
	if prioritized {
		s += fmt.Sprintf(", BuildPrioritized with one Prioritizer per process (adaptivelimiter.NewPrioritizer, ScheduleCalibrations every %v); classes as priorities critical=High, default=Medium, sheddable=Low, set at the edge from the route and carried by failsafehttp's level round tripper and handler", failsafeCalibration)
	}
	return s
}

// withFailsafeLimiter puts failsafe-go's adaptive limiter, or with
// prioritized its priority limiter, on every hop's server, as failsafehttp
// serves it. Each process builds its own limiters and, when prioritized,
// one Prioritizer that they share, calibrated on a schedule.
func withFailsafeLimiter(v *variant, prioritized bool) {
	var (
		once        sync.Once
		prioritizer priority.Prioritizer
		stop        context.CancelFunc = func() {}
	)
	newLimiter := func() failsafe.Policy[*http.Response] {
		b := adaptivelimiter.NewBuilder[*http.Response]().WithQueueing(failsafeQueueInitial, failsafeQueueMax)
		if !prioritized {
			return b.Build()
		}
		once.Do(func() {
			prioritizer = adaptivelimiter.NewPrioritizer()
			stop = prioritizer.ScheduleCalibrations(context.Background(), failsafeCalibration)
		})
		return b.BuildPrioritized(prioritizer)
	}
	v.serve = func(hop string, h http.Handler) http.Handler {
		limited := limitedHandler(h, newLimiter())
		if !prioritized {
			return limited
		}
		if hop == "edge" {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p := priorityOf(classOfPath(r.URL.Path))
				limited.ServeHTTP(w, r.WithContext(priority.ContextWithLevel(r.Context(), p.RandomLevel())))
			})
		}
		return failsafehttp.NewHandlerWithLevel(limited, true)
	}
	if prioritized {
		v.transport = func(_ string, base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripperWithLevel(base)
		}
	}
	v.close = func() { stop() }
}

// limitedHandler is failsafehttp.NewHandler with the request's context
// given to the execution, so that a request queued for a permit stops
// waiting when its caller leaves: a refusal is answered 429, as failsafehttp
// answers it.
func limitedHandler(h http.Handler, p failsafe.Policy[*http.Response]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := failsafe.With(p).WithContext(r.Context()).RunWithExecution(func(exec failsafe.Execution[*http.Response]) error {
			h.ServeHTTP(w, r.WithContext(exec.Context()))
			return nil
		})
		switch {
		case err == nil:
		case errors.Is(err, adaptivelimiter.ErrExceeded):
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(statusOf(err))
		}
	})
}
