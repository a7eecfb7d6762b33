// Command service is a product service built with budget: a public HTTP edge
// that gives every request 300 ms, a pricing service over HTTP, an inventory
// service over gRPC and a product table in PostgreSQL, each behind its own
// Op, with a cache rung the ladder keeps time for. It starts everything on
// loopback, sends three requests and prints what each got.
//
//	DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go run .
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/timebudget/budget/edge"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/grpcbudget"
	"github.com/timebudget/budget/httpbudget"
	"github.com/timebudget/budget/pgxbudget"
	"github.com/timebudget/budget/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// One Op per dependency: it measures the calls and admits one only when it
// can finish in the time left. The database gets at most 100 ms of it (Cap),
// and pgxbudget.IsTimeout tells its Op that PostgreSQL's own
// statement_timeout (SQLSTATE 57014) is a timeout, not a failure.
var (
	pricingOp   = &budget.Op{Name: "pricing", Prior: 20 * time.Millisecond}
	inventoryOp = &budget.Op{Name: "inventory", Prior: 20 * time.Millisecond}
	productOp   = &budget.Op{Name: "product.db", Prior: 50 * time.Millisecond, Cap: 100 * time.Millisecond, Expired: pgxbudget.IsTimeout}
	cacheOp     = &budget.Op{Name: "product.cache", Prior: 5 * time.Millisecond}
)

type service struct {
	db         *pgxbudget.Pool // every statement carries the time left to PostgreSQL
	pricing    *http.Client    // sends the time left on every request
	pricingURL string
	inventory  healthpb.HealthClient // grpc-go sends the time left as grpc-timeout
	cache      sync.Map              // product id → name
}

// ServeHTTP answers GET /product?id=…: the name from PostgreSQL (or from the
// cache when the database cannot answer in time), the stock from inventory
// and the price from pricing, all within the one budget the edge started.
func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, q := r.Context(), r.URL.Query()
	id := q.Get("id")
	ladder := budget.Ladder[string]{Rungs: []budget.Rung[string]{
		{Op: productOp, Fn: func(ctx context.Context) (string, error) { return s.productName(ctx, id, q.Get("db")) }},
		{Op: cacheOp, Fn: func(context.Context) (string, error) { return s.cached(id) }},
	}}
	// The cache's time is held back from every stage before the ladder, so
	// slow inventory or pricing calls cannot spend it.
	ctx = budget.WithFallback(ctx, ladder.Need())
	err := inventoryOp.Do(ctx, func(ctx context.Context) error {
		_, err := s.inventory.Check(ctx, &healthpb.HealthCheckRequest{Service: id})
		return err
	})
	var price, name string
	if err == nil {
		err = pricingOp.Do(ctx, func(ctx context.Context) (err error) {
			price, err = s.price(ctx, id, q.Get("pricing"))
			return err
		})
	}
	var res budget.LadderResult
	if err == nil {
		name, res, err = ladder.Do(ctx)
	}
	if err != nil { // 504 when the budget is spent, wherever that was found out
		httpbudget.WriteError(w, err) // a generic text: err quotes internal URLs
		return
	}
	fmt.Fprintf(w, "%s at %s (name from %s)\n", name, price, ladder.Rungs[res.Answered].Op.Name)
}

// productName reads the product's name. pgxbudget sends the time left to
// PostgreSQL as statement_timeout in the statement's own round trip, so the
// server stops a query nobody waits for, and its error then matches
// context.DeadlineExceeded.
func (s *service) productName(ctx context.Context, id, delay string) (string, error) {
	var name string
	err := s.db.QueryRow(ctx, "SELECT name FROM budget_example_products, pg_sleep($2::float8) WHERE id = $1",
		id, map[string]float64{"slow": 2}[delay]).Scan(&name)
	if err != nil {
		return "", err
	}
	s.cache.Store(id, name)
	return name, nil
}

func (s *service) cached(id string) (string, error) {
	if name, ok := s.cache.Load(id); ok {
		return name.(string), nil
	}
	return "", errors.New("product not in the cache")
}

func (s *service) price(ctx context.Context, id, delay string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.pricingURL+"?id="+id+"&delay="+delay, nil)
	if err != nil {
		return "", err
	}
	resp, err := s.pricing.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("pricing: %s", resp.Status)
	}
	return string(body), err
}

// pricingHandler is the pricing service: with no options NewHandler trusts
// the budget headers a caller sends, applies the strictest, and sets no
// deadline on a request that sends none.
func pricingHandler(w http.ResponseWriter, r *http.Request) {
	wait := map[string]time.Duration{"slow": 2 * time.Second}[r.URL.Query().Get("delay")] + 5*time.Millisecond
	select {
	case <-time.After(wait):
		fmt.Fprint(w, "12.50 EUR")
	case <-r.Context().Done(): // the caller's budget is spent: say so, so it does not retry
		httpbudget.WriteError(w, &budget.Error{Stage: "pricing", Outcome: budget.OutcomeExpired})
	}
}

// inventoryServer is the inventory service over gRPC, with the standard
// health API standing in for a generated one; errors map to codes in one
// place, grpcbudget.CodeOf.
type inventoryServer struct {
	healthpb.UnimplementedHealthServer
}

func (inventoryServer) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	select {
	case <-time.After(3 * time.Millisecond):
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case <-ctx.Done():
		return nil, status.Error(grpcbudget.CodeOf(ctx, ctx.Err()), ctx.Err().Error())
	}
}

func main() {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	db, err := pgxbudget.New(ctx, cfg) // a pgxpool.Pool that pushes the budget down
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE IF NOT EXISTS budget_example_products (id text PRIMARY KEY, name text NOT NULL);
		INSERT INTO budget_example_products VALUES ('1', 'widget') ON CONFLICT DO NOTHING`); err != nil {
		log.Fatal(err)
	}

	// Pricing over HTTP and inventory over gRPC, each trusting its callers' deadlines.
	pricingURL := serve(httpbudget.NewHandler(http.HandlerFunc(pricingHandler))) + "/price"
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(grpcbudget.UnaryServerInterceptor(edge.WithPolicy(&wire.Policy{Max: time.Second}))))
	healthpb.RegisterHealthServer(gs, inventoryServer{})
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(grpcbudget.UnaryClientInterceptor()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	// The public edge trusts no client's deadline: every request gets 300 ms,
	// and nothing a client sends can raise it above 1 s.
	front := httpbudget.NewMiddleware(
		edge.WithPolicy(&wire.Policy{Trust: wire.SourcesNone, Default: 300 * time.Millisecond, Max: time.Second}),
		edge.WithStage("edge"))
	svc := &service{db: db, pricingURL: pricingURL, inventory: healthpb.NewHealthClient(conn),
		pricing: &http.Client{Transport: httpbudget.NewTransport(http.DefaultTransport, edge.WithClientStage("pricing"))}}
	url := serve(front(svc)) + "/product?id=1"

	// The user's side: a client that gives up after 2 s, as a browser would.
	user := &http.Client{Timeout: 2 * time.Second}
	for _, q := range []string{"", "&db=slow", "&pricing=slow"} {
		resp, err := user.Get(url + q)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("GET /product?id=1%s → %d %s", q, resp.StatusCode, body)
	}
}

// serve serves h on a loopback port and returns its URL. ReadHeaderTimeout
// bounds how long a client may take to send its headers, which no request
// budget covers: the budget starts once they have arrived.
func serve(h http.Handler) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(lis) }()
	return "http://" + lis.Addr().String()
}
