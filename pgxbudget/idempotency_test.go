package pgxbudget_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/idempotency/storetest"
	"github.com/timebudget/budget/pgxbudget"
)

var idemTables atomic.Int64

// newIdemStore makes a store on a table of its own through p, created now
// and dropped at the end of the test.
func newIdemStore(t testing.TB, p *pgxbudget.Pool, o pgxbudget.IdempotencyOptions) *pgxbudget.IdempotencyStore {
	t.Helper()
	if o.Table == "" {
		o.Table = fmt.Sprintf("idem_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, idemTables.Add(1))
	}
	s, err := pgxbudget.NewIdempotencyStore(p, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), serverWait)
	defer cancel()
	if err := s.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), serverWait)
		defer cancel()
		if _, err := p.Pool().Exec(ctx, `DROP TABLE IF EXISTS `+o.Table); err != nil {
			t.Errorf("dropping %s: %v", o.Table, err)
		}
	})
	return s
}

// The PostgreSQL store keeps the contract every store keeps, its clock
// being the server's.
func TestIdempotencyStoreContract(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 4)
	storetest.Run(t, storetest.Suite{
		New: func(t *testing.T, ttl time.Duration) idempotency.Store {
			return newIdemStore(t, p, pgxbudget.IdempotencyOptions{TTL: ttl})
		},
		ShortTTL: 500 * time.Millisecond,
	})
}

// Two replicas, each with its own pool, share one table: of 200
// concurrent reservations of a key spread over both, exactly one wins, and
// what one replica completes the other replays.
func TestIdempotencyStoreReplicas(t *testing.T) {
	t.Parallel()
	p1, _ := newPool(t, 3)
	p2, _ := newPool(t, 3)
	s1 := newIdemStore(t, p1, pgxbudget.IdempotencyOptions{})
	s2, err := pgxbudget.NewIdempotencyStore(p2, pgxbudget.IdempotencyOptions{Table: tableOf(t, s1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var (
		wg     sync.WaitGroup
		wins   atomic.Int32
		failed atomic.Value
	)
	for i := range 200 {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Go(func() {
			_, mine, err := s.Reserve(ctx, "pay-1", [32]byte{7})
			if err != nil {
				failed.Store(err)
			}
			if mine {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	if wins.Load() != 1 {
		t.Fatalf("%d of 200 reservations across two replicas won, want exactly 1", wins.Load())
	}
	if err := s1.Complete(ctx, "pay-1", &idempotency.Record{Replayable: true, Status: 201, Body: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
	rec, mine, err := s2.Reserve(ctx, "pay-1", [32]byte{7})
	if err != nil || mine || !rec.Done || rec.Status != 201 || string(rec.Body) != "ok" {
		t.Fatalf("the other replica saw %+v %v %v, want the done answer", rec, mine, err)
	}
}

// tableOf recovers the table name a store was made with from its DDL.
func tableOf(t testing.TB, s *pgxbudget.IdempotencyStore) string {
	t.Helper()
	ddl := s.DDL()[0]
	name, _, _ := strings.Cut(strings.TrimPrefix(ddl, `CREATE TABLE IF NOT EXISTS "`), `"`)
	return name
}

// A store whose database is gone answers every call with an error, at
// once: a closed pool, and a server address where nothing listens.
func TestIdempotencyStoreDown(t *testing.T) {
	t.Parallel()
	closed, _ := newPool(t, 2)
	s, err := pgxbudget.NewIdempotencyStore(closed, pgxbudget.IdempotencyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	cfg := poolConfig(t, 2, appName(t))
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", 1
	nowhere := newPoolFrom(t, cfg)
	s2, err := pgxbudget.NewIdempotencyStore(nowhere, pgxbudget.IdempotencyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*pgxbudget.IdempotencyStore{"closed pool": s, "nothing listening": s2} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		_, mine, err := s.Reserve(ctx, "k", [32]byte{})
		gerr := func() error { _, _, err := s.Get(ctx, "k"); return err }()
		cerr := s.Complete(ctx, "k", &idempotency.Record{})
		took, late := time.Since(start), ctx.Err()
		cancel()
		if err == nil || mine || gerr == nil || cerr == nil {
			t.Errorf("%s: Reserve %v %v, Get %v, Complete %v: want errors", name, mine, err, gerr, cerr)
		}
		if late != nil {
			t.Errorf("%s: the calls took %v, until their deadline: a store that is down must answer at once", name, took)
		}
	}
}

// Keys the table cannot hold and answers over the bound are refused with
// errors naming why; a too-large answer still completes its key, as done
// and not replayable, so that a repeat is refused rather than run again.
func TestIdempotencyStoreBounds(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 2)
	s := newIdemStore(t, p, pgxbudget.IdempotencyOptions{MaxKey: 8, MaxAnswer: 16})
	ctx := context.Background()
	for key, want := range map[string]string{
		"123456789": "over the store's MaxKey of 8",
		"a\x00b":    "NUL",
		"\xff\xfe":  "not UTF-8",
	} {
		if _, _, err := s.Reserve(ctx, key, [32]byte{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Reserve(%q): %v, want an error saying %q", key, err, want)
		}
	}
	if _, _, err := s.Reserve(ctx, "12345678", [32]byte{}); err != nil {
		t.Fatalf("a key of MaxKey bytes: %v", err)
	}
	err := s.Complete(ctx, "12345678", &idempotency.Record{Replayable: true, Status: 200, Body: []byte(strings.Repeat("x", 17))})
	if !errors.Is(err, pgxbudget.ErrIdempotentAnswerTooLarge) || !strings.Contains(err.Error(), "17 bytes") {
		t.Fatalf("an answer of 17 bytes over 16: %v", err)
	}
	rec, ok, err := s.Get(ctx, "12345678")
	if err != nil || !ok || !rec.Done || rec.Replayable || rec.Status != 200 || len(rec.Body) != 0 {
		t.Fatalf("the too-large answer's key: %+v %v %v, want done, not replayable, status 200", rec, ok, err)
	}
}

// Bad options, a nil pool and a nil store are errors matching
// ErrMisconfigured, never panics.
func TestIdempotencyStoreMisconfigured(t *testing.T) {
	t.Parallel()
	p := pgxbudget.Wrap(nil)
	if _, err := pgxbudget.NewIdempotencyStore(nil, pgxbudget.IdempotencyOptions{}); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("a nil pool: %v", err)
	}
	if _, err := pgxbudget.NewIdempotencyStore(new(pgxbudget.Pool), pgxbudget.IdempotencyOptions{}); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("a zero pool: %v", err)
	}
	for _, o := range []pgxbudget.IdempotencyOptions{
		{Table: "a.b.c"}, {Table: "."}, {Table: "a\x00"}, {Table: strings.Repeat("t", 64)},
		{TTL: -time.Second}, {MaxKey: -1}, {MaxKey: 4096}, {MaxAnswer: -1},
	} {
		if _, err := pgxbudget.NewIdempotencyStore(p, o); !errors.Is(err, budget.ErrMisconfigured) {
			t.Errorf("%+v: %v, want ErrMisconfigured", o, err)
		}
	}
	ctx := context.Background()
	if _, _, err := new(pgxbudget.IdempotencyStore).Reserve(ctx, "k", [32]byte{}); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("zero store Reserve: %v", err)
	}
	var none *pgxbudget.IdempotencyStore
	if _, _, err := none.Reserve(ctx, "k", [32]byte{}); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("nil store Reserve: %v", err)
	}
	if err := none.Complete(ctx, "k", nil); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("nil store Complete: %v", err)
	}
	if _, _, err := none.Get(ctx, "k"); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("nil store Get: %v", err)
	}
	if _, err := none.Purge(ctx); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("nil store Purge: %v", err)
	}
	if err := none.CreateTable(ctx); !errors.Is(err, budget.ErrMisconfigured) {
		t.Errorf("nil store CreateTable: %v", err)
	}
	if none.DDL() != nil {
		t.Error("nil store DDL")
	}
}

// Purge deletes expired keys and leaves live ones.
func TestIdempotencyStorePurge(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 2)
	short := newIdemStore(t, p, pgxbudget.IdempotencyOptions{TTL: 300 * time.Millisecond})
	long, err := pgxbudget.NewIdempotencyStore(p, pgxbudget.IdempotencyOptions{Table: tableOf(t, short)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		if _, _, err := short.Reserve(ctx, fmt.Sprint("old", i), [32]byte{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if _, _, err := long.Reserve(ctx, "live", [32]byte{}); err != nil {
		t.Fatal(err)
	}
	n, err := long.Purge(ctx)
	if err != nil || n != 5 {
		t.Fatalf("Purge: %d, %v; want the 5 expired keys", n, err)
	}
	if _, ok, err := long.Get(ctx, "live"); !ok || err != nil {
		t.Fatalf("Purge took a live key: %v %v", ok, err)
	}
}

// A Reserve whose INSERT committed but whose answer was lost (the
// connection dropped on its way back) deletes its own reservation, through
// another connection: else the key would stay running, unanswered, and
// every repeat would get 409 until it expired, 24 hours later by default.
func TestIdempotencyStoreLostAnswerUnreserves(t *testing.T) {
	t.Parallel()
	direct, _ := newPool(t, 2)
	s := newIdemStore(t, direct, pgxbudget.IdempotencyOptions{})
	cfg := poolConfig(t, 1, appName(t)) // one connection; the clean-up runs on its replacement
	cut := newCutProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, fmt.Sprint(cfg.ConnConfig.Port)))
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = cut.addr()
	cfg.ConnConfig.Fallbacks = nil
	remote, err := pgxbudget.NewIdempotencyStore(newPoolFrom(t, cfg), pgxbudget.IdempotencyOptions{Table: tableOf(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := remote.Reserve(context.Background(), "warm", [32]byte{}); err != nil {
		t.Fatal(err)
	}
	cut.arm() // the open connection's next answer is lost, and the connection with it
	_, mine, err := remote.Reserve(context.Background(), "lost", [32]byte{1})
	if err == nil || mine {
		t.Fatalf("a Reserve whose answer was lost: %v %v, want an error", mine, err)
	}
	if cut.cuts.Load() != 1 {
		t.Fatalf("%d answers cut, want 1", cut.cuts.Load())
	}
	if rec, ok, err := s.Get(context.Background(), "lost"); ok || err != nil {
		t.Fatalf("after a Reserve that failed, its key is kept: %+v %v %v", rec, ok, err)
	}
	if _, mine, err := s.Reserve(context.Background(), "lost", [32]byte{1}); !mine || err != nil {
		t.Fatalf("a retry after the failed Reserve: %v %v, want it to reserve the key", mine, err)
	}
}

// cutProxy forwards connections to a server; once armed, the connections
// open at that moment lose the server's next answer and are closed, as a
// network that fails after a request was sent. Connections opened later
// pass.
type cutProxy struct {
	ln    net.Listener
	armed sync.Map // server side net.Conn -> *atomic.Bool
	cuts  atomic.Int32
	wg    sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	var mu sync.Mutex
	var conns []net.Conn
	p.wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			flag := new(atomic.Bool)
			p.armed.Store(server, flag)
			p.wg.Go(func() { _, _ = io.Copy(server, client); _ = server.Close() })
			p.wg.Go(func() {
				defer client.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := server.Read(buf)
					if flag.Load() {
						p.cuts.Add(1)
						_ = server.Close()
						return
					}
					if n > 0 {
						if _, werr := client.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() (string, uint16) {
	a := p.ln.Addr().(*net.TCPAddr)
	return a.IP.String(), uint16(a.Port)
}

// arm makes every connection open now lose its next answer.
func (p *cutProxy) arm() {
	p.armed.Range(func(_, v any) bool { v.(*atomic.Bool).Store(true); return true })
}

// A store whose table was never created says so, and how to create it.
func TestIdempotencyStoreNoTable(t *testing.T) {
	t.Parallel()
	p, _ := newPool(t, 1)
	s, err := pgxbudget.NewIdempotencyStore(p, pgxbudget.IdempotencyOptions{Table: "never_created_idempotency"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Reserve(context.Background(), "k", [32]byte{})
	if err == nil || !strings.Contains(err.Error(), `"never_created_idempotency" does not exist (create it with IdempotencyStore.CreateTable`) {
		t.Fatalf("Reserve on a missing table: %v", err)
	}
}

// The DDL IdempotencyStore's documentation gives is the DDL the store runs
// (comments and spacing aside), so a column added to one is added to the
// other.
func TestIdempotencyStoreDocumentedDDL(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("idempotency.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	in := false
	for line := range strings.Lines(string(src)) {
		line = strings.TrimSpace(strings.TrimPrefix(line, "//"))
		in = in || strings.HasPrefix(line, "CREATE TABLE")
		if in {
			line, _, _ = strings.Cut(line, "--")
			doc = append(doc, line)
		}
		if strings.HasPrefix(line, "CREATE INDEX") {
			break
		}
	}
	cfg, err := pgxpool.ParseConfig("postgres://nobody@127.0.0.1:1/none") // never connected: pgxpool connects lazily
	if err != nil {
		t.Fatal(err)
	}
	p, err := pgxbudget.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	store, err := pgxbudget.NewIdempotencyStore(p, pgxbudget.IdempotencyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	got := norm(strings.Join(doc, "\n"))
	want := norm(strings.Join(store.DDL(), ";\n") + ";")
	if got != want {
		t.Fatalf("the documented DDL:\n%s\nthe DDL the store runs:\n%s", got, want)
	}
}
