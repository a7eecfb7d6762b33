package httpbudget

import (
	"net/http"
	"time"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/edge"
)

type handlerConfig struct {
	edge.ServerSettings
	serverTiming bool
	classify     func(*http.Request) budget.Criticality // see WithClassifier
}

type clientConfig struct {
	edge.ClientSettings
	connect    bool
	envoy      bool
	noDeadline bool          // so that the zero Transport sends both headers
	linger     time.Duration // 0: adaptive; positive: always; negative: never
}

type (
	handlerOption = edge.ServerFunc[handlerConfig]
	clientOption  = edge.ClientFunc[clientConfig]
)

// WithServerTiming adds a Server-Timing header rendered from the request's
// ledger when the handler writes its response header. The default is off: the
// header tells clients how the server spent its time, which an edge facing
// the public may not want to say. It costs one allocation per request.
func WithServerTiming() edge.ServerOption {
	return handlerOption(func(c *handlerConfig) { c.serverTiming = true })
}

// WithConnectTimeoutHeader also sends Connect-Timeout-Ms, for Connect
// protocol servers. The default is off.
func WithConnectTimeoutHeader() edge.ClientOption {
	return clientOption(func(c *clientConfig) { c.connect = true })
}

// WithEnvoyTimeoutHeader also sends x-envoy-upstream-rq-timeout-ms, so an
// Envoy in front of the callee times the request out with the budget. The
// default is off.
func WithEnvoyTimeoutHeader() edge.ClientOption {
	return clientOption(func(c *clientConfig) { c.envoy = true })
}

// WithoutDeadlineHeader stops sending Request-Deadline (the absolute form),
// for callees whose clocks are known not to agree with ours. The default
// sends both headers.
func WithoutDeadlineHeader() edge.ClientOption {
	return clientOption(func(c *clientConfig) { c.noDeadline = true })
}
