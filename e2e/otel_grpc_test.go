package e2e_test

import (
	"context"
	"errors"
	"github.com/timebudget/budget/edge"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/otelbudget"
	"github.com/timebudget/budget/wire"
)

// The health service's methods, as the interceptors and the observer name
// them.
const (
	checkMethod = healthpb.Health_Check_FullMethodName
	listMethod  = "/grpc.health.v1.Health/List"
)

// scenarioKey is the metadata entry that tells the health service below which
// kind of budget event to make happen.
const scenarioKey = "x-scenario"

// scenarioHealth is a health service whose Check makes one kind of budget
// event happen per call, chosen by the call's x-scenario metadata, and
// deterministically: none depends on how fast the machine is.
type scenarioHealth struct {
	healthpb.UnimplementedHealthServer

	costly, cheap, hedged *budget.Op
}

func newScenarioHealth() *scenarioHealth {
	return &scenarioHealth{
		costly: &budget.Op{Name: "costly", Prior: time.Hour},
		cheap:  &budget.Op{Name: "cheap"},
		hedged: &budget.Op{Name: "hedged", MinSamples: 1 << 20},
	}
}

// The orphan scenario: a call with orphanGRPCBudget whose handler ignores its
// context and returns orphanGRPCSleep later, far enough past the deadline to
// count as orphaned even on a loaded machine.
const (
	orphanGRPCBudget = 100 * time.Millisecond
	orphanGRPCSleep  = 250 * time.Millisecond

	// The hang scenario's budget, and the answer margin the server holds
	// back from it (at most a tenth of the budget is held back).
	hangBudget = 500 * time.Millisecond
	hangMargin = 40 * time.Millisecond
)

func (h *scenarioHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var scenario string
	if v := md.Get(scenarioKey); len(v) > 0 {
		scenario = v[0]
	}
	serving := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
	ok := func(context.Context) error { return nil }
	var err error
	switch scenario {
	case "hang":
		<-ctx.Done()
		err = ctx.Err()
	case "orphan":
		time.Sleep(orphanGRPCSleep) // ignores its context on purpose
	case "fallback":
		l := budget.Ladder[int]{Rungs: []budget.Rung[int]{
			{Op: h.costly, Fn: func(context.Context) (int, error) { return 1, nil }},
			{Op: h.cheap, Fn: func(context.Context) (int, error) { return 2, nil }},
		}}
		_, _, err = l.Do(ctx)
	case "hedge":
		hedge := budget.Hedge{Delay: time.Millisecond}
		err = hedge.Do(ctx, h.hedged, func(ctx context.Context) error {
			if budget.AttemptNumber(ctx) == 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
	case "queue":
		var q budget.Queue[int]
		gone, cancel := context.WithCancel(ctx)
		err = q.Put(gone, 1)
		cancel()
		if err == nil {
			err = q.Put(ctx, 2)
		}
		if err == nil {
			_, _, err = q.Get(ctx) // drops 1, hands out 2
		}
	case "detach":
		var d budget.Detacher
		if err = d.Go(ctx, "audit", ok); err == nil {
			err = d.Wait(context.Background())
		}
	}
	if err != nil {
		return nil, status.Error(grpcbudget.CodeOf(ctx, err), err.Error())
	}
	return serving, nil
}

func (h *scenarioHealth) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	return &healthpb.HealthListResponse{}, nil
}

// startHealth serves h on loopback through grpcbudget's server interceptor
// with opts, and returns its address and a function that stops it, waiting
// for every handler to return.
func startHealth(t *testing.T, h healthpb.HealthServer, opts ...edge.ServerOption) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(grpcbudget.UnaryServerInterceptor(opts...)))
	healthpb.RegisterHealthServer(srv, h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			srv.GracefulStop()
			<-done
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// dialHealth connects to addr through grpcbudget's client interceptor with
// opts; the connection is closed when the test ends.
func dialHealth(t *testing.T, addr string, opts ...edge.ClientOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(grpcbudget.UnaryClientInterceptor(opts...)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// otelRig is an observer wired to an in-memory metric reader.
type otelRig struct {
	reader *sdkmetric.ManualReader
	obs    *otelbudget.Observer
}

func newOtelRig(t *testing.T, opts ...otelbudget.Option) *otelRig {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	obs, err := otelbudget.NewObserver(append([]otelbudget.Option{otelbudget.WithMeterProvider(provider)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &otelRig{reader: reader, obs: obs}
}

// otelPoint is one data point of a counter or histogram.
type otelPoint struct {
	attrs attribute.Set
	count int64 // a counter's value, or a histogram's sample count
}

// otelMetric is one instrument's collected data.
type otelMetric struct {
	unit   string
	points []otelPoint
}

// collect reads every metric the rig's reader holds, by name.
func (r *otelRig) collect(t *testing.T) map[string]otelMetric {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]otelMetric{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelbudget.ScopeName {
			t.Errorf("metrics in scope %q, want %q", sm.Scope.Name, otelbudget.ScopeName)
		}
		for _, m := range sm.Metrics {
			got := otelMetric{unit: m.Unit}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !data.IsMonotonic {
					t.Errorf("%s: a counter that is not monotonic", m.Name)
				}
				for _, dp := range data.DataPoints {
					got.points = append(got.points, otelPoint{attrs: dp.Attributes, count: dp.Value})
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					got.points = append(got.points, otelPoint{attrs: dp.Attributes, count: int64(dp.Count)})
				}
			default:
				t.Errorf("%s: unexpected aggregation %T", m.Name, m.Data)
			}
			out[m.Name] = got
		}
	}
	return out
}

// find returns the point of m whose attributes are exactly kv.
func (m otelMetric) find(kv ...attribute.KeyValue) (otelPoint, bool) {
	want := attribute.NewSet(kv...)
	for _, p := range m.points {
		if p.attrs.Equals(&want) {
			return p, true
		}
	}
	return otelPoint{}, false
}

func (m otelMetric) sets() []string {
	var out []string
	for _, p := range m.points {
		out = append(out, p.attrs.Encoded(attribute.DefaultEncoder()))
	}
	return out
}

// otelUnits are the names and units of every metric the observer registers.
var otelUnits = map[string]string{
	"budget.remaining":   "s",
	"budget.queue.wait":  "s",
	"budget.used":        "1",
	"budget.refusals":    "{refusal}",
	"budget.expiries":    "{attempt}",
	"budget.hedges":      "{attempt}",
	"budget.queue.drops": "{item}",
	"budget.detached":    "{task}",
	"budget.orphaned":    "{attempt}",
}

// checkAttributes reports every data point with an attribute key the
// observer does not register, or an event, outcome or reason value that is
// not one of the closed-list labels, and returns the distinct stage values
// and the number of data points.
func checkAttributes(t *testing.T, got map[string]otelMetric) (stages map[string]bool, points int) {
	t.Helper()
	stages = map[string]bool{}
	for name, m := range got {
		if _, ok := otelUnits[name]; !ok {
			t.Errorf("unexpected metric %s", name)
		}
		for _, p := range m.points {
			points++
			if _, ok := p.attrs.Value("stage"); !ok {
				t.Errorf("%s: a point without a stage: %s", name, p.attrs.Encoded(attribute.DefaultEncoder()))
			}
			for _, kv := range p.attrs.ToSlice() {
				switch kv.Key {
				case "stage":
					stages[kv.Value.AsString()] = true
				case "event", "outcome", "reason":
					if !isBudgetLabel(kv.Value.AsString()) {
						t.Errorf("%s: %s=%q is not a label from code", name, kv.Key, kv.Value.AsString())
					}
				default:
					t.Errorf("%s: attribute %s is not one the observer registers", name, kv.Key)
				}
			}
		}
	}
	return stages, points
}

// isBudgetLabel reports whether s is one of the closed-list values the
// observer uses for event, outcome and reason.
func isBudgetLabel(s string) bool {
	for o := budget.OutcomeNone; o <= budget.OutcomeLimit; o++ {
		if s == o.String() {
			return true
		}
	}
	switch s {
	case "arrival", "attempt", "fallback", "skew", "malformed":
		return true
	}
	return false
}

func kvStage(s string) attribute.KeyValue   { return attribute.String("stage", s) }
func kvEvent(s string) attribute.KeyValue   { return attribute.String("event", s) }
func kvOutcome(s string) attribute.KeyValue { return attribute.String("outcome", s) }
func kvReason(s string) attribute.KeyValue  { return attribute.String("reason", s) }

// TestOtelMetricsThroughGRPC drives every kind of budget event through a
// real grpc-go server and client with grpcbudget's interceptors and the
// OpenTelemetry observer on both sides, and checks every metric's name, unit
// and attribute sets: calls served, refused on arrival (no time left, less
// than the policy's Min), refused by admission on either side, refused
// locally by the client, expired in the handler, orphaned by a handler that
// ignores its deadline, and the root package's fallback, hedge, queue and
// detach events inside a handler.
func TestOtelMetricsThroughGRPC(t *testing.T) {
	t.Parallel()
	r := newOtelRig(t)
	serverOps := edge.Ops{
		checkMethod: {Name: "check"},
		listMethod:  {Name: "list", Prior: time.Hour}, // refuses every call
	}
	addr, stop := startHealth(t, newScenarioHealth(),
		edge.WithObserver(r.obs),
		edge.WithPolicy(&wire.Policy{Min: 50 * time.Millisecond}),
		// A fixed answer margin makes the handler's budget, not the
		// client's cancellation, end a hanging handler even on a loaded
		// machine, so its attempt is an expiry.
		edge.WithAnswerMargin(hangMargin),
		edge.WithAdmission(serverOps.Op))

	plain := healthpb.NewHealthClient(dialHealth(t, addr))
	admitted := healthpb.NewHealthClient(dialHealth(t, addr,
		edge.WithAdmission(edge.Ops{checkMethod: {Name: "check-client"}}.Op)))
	refusing := healthpb.NewHealthClient(dialHealth(t, addr,
		edge.WithAdmission(edge.Ops{checkMethod: {Name: "check-costly", Prior: time.Hour}}.Op)))
	tooShort := healthpb.NewHealthClient(dialHealth(t, addr, edge.WithMinUseful(time.Hour)))

	// call makes one call with a budget of d observed by r.obs, with the
	// metadata pairs md, and returns its status code.
	call := func(c healthpb.HealthClient, d time.Duration, md ...string) codes.Code {
		ctx, cancel := budget.Config{Observer: r.obs}.Start(context.Background(), d)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
		return status.Code(err)
	}
	const long = 2 * time.Second
	expect := func(what string, got, want codes.Code) {
		t.Helper()
		if got != want {
			t.Errorf("%s: code %v, want %v", what, got, want)
		}
	}
	for range 3 {
		expect("served", call(admitted, long), codes.OK)
	}
	for _, s := range []string{"fallback", "hedge", "queue", "detach"} {
		expect(s, call(plain, long, scenarioKey, s), codes.OK)
	}
	expect("less than Min", call(plain, 20*time.Millisecond), codes.DeadlineExceeded)
	expect("no time left", call(plain, long, "request-timeout-ms", "0"), codes.DeadlineExceeded)
	expect("malformed header", call(plain, long, "request-timeout-ms", "junk"), codes.OK)
	expect("skewed header", call(plain, long, "request-deadline",
		strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)), codes.OK)
	expect("refused by the client's admission", call(refusing, long), codes.DeadlineExceeded)
	expect("refused by the client's minimum", call(tooShort, long), codes.DeadlineExceeded)
	{
		ctx, cancel := budget.Config{Observer: r.obs}.Start(context.Background(), long)
		_, err := plain.List(ctx, &healthpb.HealthListRequest{})
		cancel()
		expect("refused by the server's admission", status.Code(err), codes.DeadlineExceeded)
	}
	expect("expired in the handler", call(admitted, hangBudget, scenarioKey, "hang"), codes.DeadlineExceeded)
	expect("orphaned", call(plain, orphanGRPCBudget, scenarioKey, "orphan"), codes.DeadlineExceeded)
	stop() // waits for the orphaned handler, whose attempt is recorded when it returns

	got := r.collect(t)
	want := []struct {
		name  string
		attrs []attribute.KeyValue
		min   int64 // the least count (a counter's value or a histogram's samples)
	}{
		{"budget.remaining", []attribute.KeyValue{kvStage(checkMethod), kvEvent("arrival")}, 9},
		{"budget.remaining", []attribute.KeyValue{kvStage("check"), kvEvent("attempt")}, 9},
		{"budget.remaining", []attribute.KeyValue{kvStage("check-client"), kvEvent("attempt")}, 4},
		{"budget.remaining", []attribute.KeyValue{kvStage("cheap"), kvEvent("fallback")}, 1},
		{"budget.used", []attribute.KeyValue{kvStage("check"), kvOutcome("ok")}, 8},
		{"budget.used", []attribute.KeyValue{kvStage("check"), kvOutcome("expired")}, 1},
		{"budget.used", []attribute.KeyValue{kvStage("check-client"), kvOutcome("ok")}, 3},
		{"budget.queue.wait", []attribute.KeyValue{kvStage("queue"), kvOutcome("ok")}, 1},
		{"budget.queue.wait", []attribute.KeyValue{kvStage("queue"), kvOutcome("canceled")}, 1},
		{"budget.refusals", []attribute.KeyValue{kvStage(checkMethod), kvReason("shed")}, 1},
		{"budget.refusals", []attribute.KeyValue{kvStage(checkMethod), kvReason("expired")}, 1},
		{"budget.refusals", []attribute.KeyValue{kvStage(checkMethod), kvReason("malformed")}, 1},
		{"budget.refusals", []attribute.KeyValue{kvStage(checkMethod), kvReason("skew")}, 1},
		{"budget.refusals", []attribute.KeyValue{kvStage(checkMethod), kvReason("insufficient")}, 1},
		{"budget.refusals", []attribute.KeyValue{kvStage("check-costly"), kvReason("insufficient")}, 1},
		{"budget.refusals", []attribute.KeyValue{kvStage("list"), kvReason("insufficient")}, 1},
		{"budget.refusals", []attribute.KeyValue{kvStage("costly"), kvReason("insufficient")}, 1},
		{"budget.expiries", []attribute.KeyValue{kvStage("check")}, 1},
		{"budget.hedges", []attribute.KeyValue{kvStage("hedged")}, 1},
		{"budget.queue.drops", []attribute.KeyValue{kvStage("queue"), kvReason("canceled")}, 1},
		{"budget.detached", []attribute.KeyValue{kvStage("audit")}, 1},
		{"budget.orphaned", []attribute.KeyValue{kvStage("check")}, 1},
	}
	seen := map[string]bool{}
	for _, w := range want {
		seen[w.name] = true
		m, ok := got[w.name]
		if !ok {
			t.Errorf("no metric %s", w.name)
			continue
		}
		p, ok := m.find(w.attrs...)
		if !ok {
			t.Errorf("%s: no point with %v; have %v", w.name, w.attrs, m.sets())
			continue
		}
		if p.count < w.min {
			t.Errorf("%s %v: count %d, want at least %d", w.name, w.attrs, p.count, w.min)
		}
	}
	for name, unit := range otelUnits {
		if !seen[name] {
			t.Errorf("the test expects nothing of %s", name)
		}
		if m, ok := got[name]; ok && m.unit != unit {
			t.Errorf("%s: unit %q, want %q", name, m.unit, unit)
		}
	}
	stages, points := checkAttributes(t, got)
	t.Logf("%d metrics, %d data points, %d stage values", len(got), points, len(stages))
}

// TestOtelCardinalityThroughGRPC makes 10,000 calls (2,000 with -short),
// about 3 s under the race detector, through grpcbudget's interceptors with random
// method names, random budgets and random deadline and bogus metadata, and
// checks that the number of attribute sets stays bounded. The client names
// its local refusals after the call's full method name, which a caller
// invoking arbitrary methods controls, so the method names reach the stage
// attribute unless the observer's stage limit bounds them; the server's
// stage is the method name too, but only methods it serves reach its
// interceptor. No other attribute may take a value from the call.
func TestOtelCardinalityThroughGRPC(t *testing.T) {
	t.Parallel()
	calls := 10_000
	if testing.Short() {
		calls = 2_000
	}
	const workers = 4
	r := newOtelRig(t)
	addr, stop := startHealth(t, newScenarioHealth(),
		edge.WithObserver(r.obs),
		edge.WithPolicy(&wire.Policy{Min: 5 * time.Millisecond}),
		edge.WithAdmission(edge.Ops{checkMethod: {Name: "check"}}.Op))
	send := dialHealth(t, addr, grpcbudget.WithBudgetMetadata())
	refuse := dialHealth(t, addr, edge.WithMinUseful(time.Hour))

	headers := []string{"request-timeout-ms", "request-deadline", "x-request-deadline", "connect-timeout-ms",
		"grpc-timeout", "request-attempt", scenarioKey}
	var mu sync.Mutex
	local := 0 // calls refused locally by the client
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			token := func() string { return strconv.FormatUint(rng.Uint64(), 36) }
			values := []func() string{
				func() string { return strconv.Itoa(rng.IntN(3000)) },
				func() string { return "0" },
				token,
				func() string { return strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10) },
			}
			for i := w; i < calls; i += workers {
				ctx, cancel := budget.Config{Observer: r.obs}.Start(context.Background(),
					time.Duration(1+rng.IntN(2000))*time.Millisecond)
				var md []string
				for range rng.IntN(5) {
					key := headers[rng.IntN(len(headers))]
					if rng.IntN(3) == 0 {
						key = "x-" + token()
					}
					md = append(md, key, values[rng.IntN(len(values))]())
				}
				ctx = metadata.AppendToOutgoingContext(ctx, md...)
				method := checkMethod
				if rng.IntN(2) == 0 {
					method = "/" + token() + ".Svc/" + token()
				}
				conn := send
				if i%2 == 1 {
					conn = refuse
				}
				err := conn.Invoke(ctx, method, &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
				cancel()
				if conn == refuse {
					if !errors.Is(err, budget.ErrInsufficient) && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("call %d to %s: %v, want a local refusal", i, method, err)
						return
					}
					mu.Lock()
					local++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	stop()

	got := r.collect(t)
	stages, points := checkAttributes(t, got)
	limit := otelbudget.DefaultStageLimit
	if len(stages) > limit+1 {
		t.Errorf("%d distinct stage values, want at most %d", len(stages), limit+1)
	}
	if !stages[otelbudget.OtherStage] {
		t.Errorf("stage values past the limit were not reported as %q", otelbudget.OtherStage)
	}
	// Each stage has at most a few dozen attribute sets (events, outcomes,
	// reasons), whatever the traffic.
	if most := (limit + 1) * 40; points > most {
		t.Errorf("%d data points, want at most %d", points, most)
	}
	if p, ok := got["budget.refusals"].find(kvStage(otelbudget.OtherStage), kvReason("insufficient")); !ok || p.count < int64(local/4) {
		t.Errorf("refusals past the stage limit: %d (found %v), want most of the %d local refusals", p.count, ok, local)
	}
	for _, m := range []string{"budget.remaining", "budget.refusals", "budget.used"} {
		if len(got[m].points) == 0 {
			t.Errorf("no %s recorded", m)
		}
	}
	t.Logf("%d calls (%d refused locally): %d data points, %d stage values", calls, local, points, len(stages))
}
