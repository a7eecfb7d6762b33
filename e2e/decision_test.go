package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/timebudget/budget/edge"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/amqpbudget"
	"github.com/timebudget/budget/connectbudget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// decision is what an adapter made of one request: refused (and why, as
// its protocol says it: "malformed" for HTTP 400, gRPC and Connect
// INVALID_ARGUMENT and an AMQP reject; "expired" for HTTP 504, gRPC and
// Connect DEADLINE_EXCEEDED and an AMQP drop), or run, with the handler's
// time left (to the second) and class.
type decision struct {
	refused string
	left    time.Duration // -1: no deadline
	class   budget.Criticality
}

func (d decision) String() string {
	if d.refused != "" {
		return "refused " + d.refused
	}
	return fmt.Sprintf("ran, %v left, %v", d.left, d.class)
}

// ran is the decision seen by a handler running with ctx.
func ran(ctx context.Context) decision {
	d := decision{left: -1, class: budget.CriticalityFrom(ctx)}
	if dl, ok := ctx.Deadline(); ok {
		// To the second: every value of the corpus is whole seconds apart,
		// and transit inside the process takes microseconds.
		d.left = time.Until(dl).Round(time.Second)
	}
	return d
}

// hostileValues is the hostile header corpus (package wire's
// TestHostileDigits and TestHostileGRPCTimeout values), with valid values of
// each grammar beside them.
var hostileValues = []string{
	"", "0", "0005", "-5", "+5", " 5", "5 ", "5 0", "\t5", "1e300", "0x10", "1.5",
	"5,6", "5\x00", "5ms", "\u0665", "\u06f5", "\uff15", "\u096b", "\xff",
	strings.Repeat("1", 4096), strings.Repeat("a", 4096),
	"99999999999", "9999999999", "999999999999999", "5000", "20000",
	"5S", "5M", "5n", "100000000S", "1H", "-5S", "critical", "SHEDDABLE", "urgent",
}

// hostileHeaders are the headers each value is sent in, and whether the
// value is a duration in milliseconds, an instant (sent as now plus the
// value's milliseconds when it is a plain number, so that valid values mean
// the same), or a class.
var hostileHeaders = []string{
	wire.HeaderRequestTimeout, wire.HeaderRequestDeadline, wire.HeaderXRequestDeadline,
	wire.HeaderEnvoyExpectedTimeout, wire.HeaderContextTTL, wire.HeaderRequestCriticality,
	wire.HeaderConnectTimeout, wire.HeaderGRPCTimeout,
}

// instant turns a plain millisecond count into an absolute value of the
// same meaning for the absolute headers, and leaves the rest as they are.
func instant(header, v string, now time.Time) string {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > 1e9 || v != strconv.FormatInt(n, 10) {
		return v
	}
	switch header {
	case wire.HeaderRequestDeadline:
		return strconv.FormatInt(now.Add(time.Duration(n)*time.Millisecond).UnixMilli(), 10)
	case wire.HeaderXRequestDeadline:
		return strconv.FormatInt(now.Add(time.Duration(n)*time.Millisecond).UnixMicro(), 10)
	}
	return v
}

// transport runs one request carrying header: value through an adapter
// under policy p and returns its decision, or false when the protocol does
// not carry the header as a budget header of ours (grpc-go owns grpc-timeout,
// connect-go owns Connect-Timeout-Ms, baggage carries only the deadline and
// the class).
type transport struct {
	name string
	run  func(t *testing.T, p *wire.Policy, header, value string) (decision, bool)
}

func viaHTTP(t *testing.T, p *wire.Policy, header, value string) (decision, bool) {
	var d decision
	h := httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { d = ran(r.Context()) }),
		edge.WithPolicy(p))
	req := httptest.NewRequest("GET", "/", nil)
	req.Header[http.CanonicalHeaderKey(header)] = []string{value}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return httpDecision(t, rec.Code, d)
}

func viaGRPC(t *testing.T, p *wire.Policy, header, value string) (decision, bool) {
	if header == wire.HeaderGRPCTimeout {
		return decision{}, false
	}
	var d decision
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(strings.ToLower(header), value))
	_, err := grpcbudget.UnaryServerInterceptor(edge.WithPolicy(p))(ctx, nil,
		&grpc.UnaryServerInfo{FullMethod: unaryCall},
		func(ctx context.Context, _ any) (any, error) { d = ran(ctx); return nil, nil })
	return refusal(t, "gRPC", status.Code(err).String(), err, d)
}

func viaConnect(t *testing.T, p *wire.Policy, header, value string) (decision, bool) {
	if header == wire.HeaderConnectTimeout {
		return decision{}, false
	}
	var d decision
	h := connect.NewUnaryHandler(unaryCall,
		func(ctx context.Context, _ *connect.Request[grpc_testing.SimpleRequest]) (*connect.Response[grpc_testing.SimpleResponse], error) {
			d = ran(ctx)
			return connect.NewResponse(&grpc_testing.SimpleResponse{}), nil
		}, connect.WithInterceptors(connectbudget.NewServerInterceptor(edge.WithPolicy(p))))
	req := httptest.NewRequest("POST", unaryCall, strings.NewReader(""))
	req.Header.Set("Content-Type", "application/proto")
	req.Header[http.CanonicalHeaderKey(header)] = []string{value}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code == http.StatusOK {
		return d, true
	}
	var code string
	switch rec.Code {
	case http.StatusBadRequest:
		code = "InvalidArgument"
	case http.StatusGatewayTimeout:
		code = "DeadlineExceeded"
	default:
		t.Fatalf("Connect: HTTP status %d: %s", rec.Code, rec.Body)
	}
	return refusal(t, "Connect", code, errors.New(rec.Body.String()), d)
}

// refusal maps a gRPC or Connect code to a decision.
func refusal(t *testing.T, name, code string, err error, d decision) (decision, bool) {
	switch code {
	case "OK":
		return d, true
	case "InvalidArgument":
		return decision{refused: "malformed"}, true
	case "DeadlineExceeded":
		return decision{refused: "expired"}, true
	}
	t.Fatalf("%s: code %s: %v", name, code, err)
	return d, false
}

// acks records what a consumer did with a delivery.
type acks struct{ acked, rejected, requeued bool }

func (a *acks) Ack(uint64, bool) error         { a.acked = true; return nil }
func (a *acks) Nack(_ uint64, _, r bool) error { a.requeued = r; return nil }
func (a *acks) Reject(_ uint64, r bool) error  { a.rejected, a.requeued = true, r; return nil }

func viaAMQP(t *testing.T, p *wire.Policy, header, value string) (decision, bool) {
	var d decision
	ran := false
	c := &amqpbudget.Consumer{Policy: p, Handler: func(ctx context.Context, _ amqp.Delivery) error {
		ran = true
		d = decisionOf(ctx)
		return nil
	}}
	a := new(acks)
	err := c.Handle(context.Background(), amqp.Delivery{Acknowledger: a, Headers: amqp.Table{header: value}})
	switch {
	case ran:
		return d, true
	case a.rejected && !a.requeued:
		return decision{refused: "malformed"}, true
	case a.acked:
		return decision{refused: "expired"}, true
	}
	t.Fatalf("AMQP: handler not run, delivery %+v: %v", a, err)
	return d, false
}

var decisionOf = ran

func viaBaggage(t *testing.T, p *wire.Policy, header, value string) (decision, bool) {
	key := map[string]string{wire.HeaderRequestDeadline: otelbudget.BaggageKey,
		wire.HeaderRequestCriticality: otelbudget.BaggageCriticalityKey}[header]
	if key == "" {
		return decision{}, false
	}
	// A baggage member's value is a W3C token: what it cannot carry, the
	// propagator never sees.
	if value == "" || strings.ContainsAny(value, " \t,;=\\\"\x00\x7f") || strings.ContainsFunc(value, func(r rune) bool { return r > 0x7e || r < 0x21 }) {
		return decision{}, false
	}
	// The class member is read under the edge's trust rule with no policy
	// given to the propagator. The deadline member is placed on the context
	// by the propagator itself, which a server adapter cannot lengthen: to
	// put it under an edge's rule, the propagator is given the edge's
	// policy.
	prop := otelbudget.NewPropagator()
	if header == wire.HeaderRequestDeadline {
		prop = otelbudget.NewPropagator(otelbudget.WithPolicy(p))
	}
	ctx := prop.Extract(context.Background(), propagation.HeaderCarrier(http.Header{"Baggage": {key + "=" + value}}))
	// The server adapter that runs next decides the rest (Default, Max
	// when nothing is sent, refusals): here, httpbudget.
	var d decision
	h := httpbudget.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { d = ran(r.Context()) }),
		edge.WithPolicy(p))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	if dec, ok := otelbudget.BaggageDecision(ctx); ok && dec.Refused() {
		return decision{refused: dec.Reason.String()}, true
	}
	return httpDecision(t, rec.Code, d)
}

// httpDecision maps httpbudget's answer to a decision.
func httpDecision(t *testing.T, code int, d decision) (decision, bool) {
	switch code {
	case http.StatusOK:
		return d, true
	case http.StatusBadRequest:
		return decision{refused: "malformed"}, true
	case http.StatusGatewayTimeout:
		return decision{refused: "expired"}, true
	}
	t.Fatalf("HTTP status %d", code)
	return d, false
}

// tooShortToTell reports that a and b differ only by when the clock was
// read: a request with a few milliseconds left (a valid "5") may run with
// them or, on a busy machine, have expired before its adapter decided.
func tooShortToTell(a, b decision) bool {
	short := func(d decision) bool { return d.refused == "" && d.left == 0 }
	return short(a) && b.refused == "expired" || short(b) && a.refused == "expired"
}

// TestHostileHeadersOneDecision runs every case of the hostile header corpus
// through HTTP, gRPC, Connect, AMQP and W3C baggage under a lenient and a
// strict policy, and requires one decision: refused for the same reason, or
// run with the same time left and class.
func TestHostileHeadersOneDecision(t *testing.T) {
	t.Parallel()
	transports := []transport{{"HTTP", viaHTTP}, {"gRPC", viaGRPC}, {"Connect", viaConnect}, {"AMQP", viaAMQP}, {"baggage", viaBaggage}}
	policies := map[string]*wire.Policy{
		"lenient": {Max: 30 * time.Second},
		"strict":  {Max: 30 * time.Second, Strict: true},
		"edge":    {Max: 30 * time.Second, Trust: wire.SourcesNone, Criticality: wire.CriticalitySheddable},
	}
	for pname, p := range policies {
		for _, header := range hostileHeaders {
			for _, raw := range hostileValues {
				name := fmt.Sprintf("%s/%s/%.20q", pname, header, raw)
				t.Run(name, func(t *testing.T) {
					value := instant(header, raw, time.Now())
					var first decision
					var firstName string
					for _, tr := range transports {
						if (tr.name == "gRPC" || tr.name == "AMQP") && strings.ContainsAny(value, "\x00\n\r") {
							continue // not a valid metadata value: grpc-go refuses to send it
						}
						d, ok := tr.run(t, p, header, value)
						if !ok {
							continue
						}
						if firstName == "" {
							first, firstName = d, tr.name
							continue
						}
						if d != first && !tooShortToTell(d, first) {
							t.Errorf("%s: %v; %s: %v", firstName, first, tr.name, d)
						}
					}
				})
			}
		}
	}
}
