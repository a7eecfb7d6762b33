package pgxbudget

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/timebudget/budget"
	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/wire"
)

// Defaults of a zero [IdempotencyOptions].
const (
	defaultIdempotencyTable = "budget_idempotency"
	defaultIdempotencyTTL   = 24 * time.Hour
	defaultMaxAnswer        = 2 << 20
	maxKeyLimit             = 2048 // well under PostgreSQL's limit on a btree entry (about 2.7 kB)
	purgeBatch              = 10_000
)

// ErrIdempotentAnswerTooLarge is returned (wrapped, with the sizes) by
// [IdempotencyStore.Complete] for an answer over
// [IdempotencyOptions.MaxAnswer]. The key is still completed, as done and
// not replayable, so that a repeat is refused rather than run again.
var ErrIdempotentAnswerTooLarge = errors.New("pgxbudget: idempotent answer too large to keep")

// IdempotencyOptions configure an [IdempotencyStore]. The zero value is
// ready: the table budget_idempotency, keys kept 24 hours, keys of at most
// 255 bytes and answers of at most 2 MiB.
type IdempotencyOptions struct {
	// Table is the table's name, optionally qualified by its schema
	// ("app.idempotency"). Zero means "budget_idempotency". It is quoted
	// as an identifier: the name is taken as written, case included.
	Table string
	// TTL is how long a key is kept after it was reserved; an expired key
	// is reserved anew by its next request. Zero means 24 hours; it is
	// kept to whole microseconds, PostgreSQL's resolution.
	TTL time.Duration
	// MaxKey bounds a key's length in bytes. Zero means 255
	// (wire.MaxIdempotencyKey); it is at most 2048, for the primary key's
	// index.
	MaxKey int
	// MaxAnswer bounds the bytes of an answer kept: its body and its
	// encoded header. Zero means 2 MiB.
	MaxAnswer int
}

// IdempotencyStore is an [idempotency.Store] in a PostgreSQL table, shared
// by every replica that uses the same table: a key is reserved by one
// statement, an INSERT ... ON CONFLICT that the server runs atomically, so
// of many concurrent reservations of a key, on any number of replicas,
// exactly one wins. Time is the server's (now()), not the replicas'.
// Statements run through a [Pool], so a Reserve or Get made with a
// request's context runs within its budget.
//
// The table ([IdempotencyStore.CreateTable] creates it; [IdempotencyStore.DDL]
// returns the statements for a migration tool), for the default name:
//
//	CREATE TABLE IF NOT EXISTS "budget_idempotency" (
//		key         text PRIMARY KEY,
//		token       bytea NOT NULL,               -- the reservation's, to tell its winner
//		fingerprint bytea NOT NULL,               -- 32 bytes, a hash of the first request
//		done        boolean NOT NULL DEFAULT false,
//		replayable  boolean NOT NULL DEFAULT false,
//		status      integer NOT NULL DEFAULT 0,
//		header      bytea,                        -- the answer's header, encoded by this package
//		body        bytea,
//		expires_at  timestamptz NOT NULL
//	);
//	CREATE INDEX IF NOT EXISTS "budget_idempotency_expires_at" ON "budget_idempotency" (expires_at);
//
// An expired row stays until its key is reserved again (which replaces it)
// or [IdempotencyStore.Purge] deletes it: call Purge from time to time (say
// hourly) to keep the table to the keys of one TTL.
//
// Keys are text: a key that is not UTF-8, holds a NUL byte, or is longer
// than MaxKey is refused with an error (the net/http middleware refuses
// such keys before they reach a store). Complete keeps the reservation's
// fingerprint and ignores a key that expired; Complete(nil) deletes a key
// that still runs, never a done one. A Reserve that fails after its
// statement may have reached the server deletes its own reservation (a
// token tells it apart, and the clean-up waits at most a second), so that
// an INSERT committed just before the connection or the deadline was lost
// does not hold the key, unanswered, until it expires. An IdempotencyStore is safe for
// concurrent use; a nil one returns an error matching
// [budget.ErrMisconfigured].
type IdempotencyStore struct {
	pool              *Pool
	ttlMicros         int64
	maxKey, maxAnswer int
	table             string // quoted
	ddl               []string
	// The statements, on the table's quoted name.
	reserveSQL, unreserveSQL, completeSQL, forgetSQL, getSQL, purgeSQL string
}

// NewIdempotencyStore returns a store keeping keys in the table o names,
// through p. It checks the options, not the table: create it with
// [IdempotencyStore.CreateTable] or a migration. It returns an error
// matching [budget.ErrMisconfigured] for a nil p, a malformed table name, or
// a negative or excessive bound.
func NewIdempotencyStore(p *Pool, o IdempotencyOptions) (*IdempotencyStore, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	table, index, err := idempotencyTable(o.Table)
	if err != nil {
		return nil, err
	}
	if o.TTL < 0 || o.MaxKey < 0 || o.MaxKey > maxKeyLimit || o.MaxAnswer < 0 {
		return nil, fmt.Errorf("%w: pgxbudget.IdempotencyOptions: TTL %v, MaxKey %d, MaxAnswer %d: none may be negative, and MaxKey at most %d",
			budget.ErrMisconfigured, o.TTL, o.MaxKey, o.MaxAnswer, maxKeyLimit)
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = defaultIdempotencyTTL
	}
	s := &IdempotencyStore{
		pool:      p,
		ttlMicros: max(ttl.Microseconds(), 1),
		maxKey:    orInt(o.MaxKey, wire.MaxIdempotencyKey),
		maxAnswer: orInt(o.MaxAnswer, defaultMaxAnswer),
		table:     table,
	}
	s.statements(table, index)
	return s, nil
}

// statements writes the store's DDL and statements on the quoted table and
// index names.
func (s *IdempotencyStore) statements(table, index string) {
	s.ddl = []string{
		`CREATE TABLE IF NOT EXISTS ` + table + ` (
	key         text PRIMARY KEY,
	token       bytea NOT NULL,
	fingerprint bytea NOT NULL,
	done        boolean NOT NULL DEFAULT false,
	replayable  boolean NOT NULL DEFAULT false,
	status      integer NOT NULL DEFAULT 0,
	header      bytea,
	body        bytea,
	expires_at  timestamptz NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS ` + index + ` ON ` + table + ` (expires_at)`,
	}
	// One statement: a new key is inserted; a key whose row expired is
	// replaced; a live key is left as it is (each column set to itself).
	// Either way the row comes back, locked and current, and the token
	// tells whether it is this reservation's.
	var set []string
	for _, c := range []string{"token", "fingerprint", "done", "replayable", "status", "header", "body", "expires_at"} {
		set = append(set, c+` = CASE WHEN i.expires_at <= now() THEN EXCLUDED.`+c+` ELSE i.`+c+` END`)
	}
	s.reserveSQL = `INSERT INTO ` + table + ` AS i (key, token, fingerprint, expires_at)
VALUES ($1, $2, $3, now() + $4::float8 * interval '1 microsecond')
ON CONFLICT (key) DO UPDATE SET ` + strings.Join(set, ", ") + `
RETURNING i.token = $2, i.fingerprint, i.done, i.replayable, i.status, i.header, i.body`
	s.completeSQL = `UPDATE ` + table + ` SET done = true, replayable = $2, status = $3, header = $4, body = $5
WHERE key = $1 AND expires_at > now()`
	s.forgetSQL = `DELETE FROM ` + table + ` WHERE key = $1 AND NOT done AND expires_at > now()`
	s.unreserveSQL = `DELETE FROM ` + table + ` WHERE key = $1 AND token = $2 AND NOT done`
	s.getSQL = `SELECT fingerprint, done, replayable, status, header, body FROM ` + table + `
WHERE key = $1 AND expires_at > now()`
	s.purgeSQL = `DELETE FROM ` + table + ` WHERE key IN (SELECT key FROM ` + table + `
WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)`
}

// idempotencyTable quotes name (zero: the default), a table optionally
// qualified by its schema, and names its expiry index.
func idempotencyTable(name string) (table, index string, err error) {
	if name == "" {
		name = defaultIdempotencyTable
	}
	parts := strings.Split(name, ".")
	for _, p := range parts {
		if p == "" || strings.ContainsRune(p, 0) || !utf8.ValidString(p) || len(p) > 63 {
			return "", "", fmt.Errorf("%w: pgxbudget.IdempotencyOptions.Table %q: want a table name or schema.table, each part 1 to 63 bytes of UTF-8 without NUL",
				budget.ErrMisconfigured, name)
		}
	}
	if len(parts) > 2 {
		return "", "", fmt.Errorf("%w: pgxbudget.IdempotencyOptions.Table %q: want a table name or schema.table", budget.ErrMisconfigured, name)
	}
	idx := parts[len(parts)-1]
	idx = idx[:min(len(idx), 63-len("_expires_at"))]
	for !utf8.ValidString(idx) { // cut inside a character
		idx = idx[:len(idx)-1]
	}
	idx += "_expires_at"
	return pgx.Identifier(parts).Sanitize(), pgx.Identifier{idx}.Sanitize(), nil
}

// DDL returns the statements that create the store's table and its expiry
// index (IF NOT EXISTS), for a migration tool; [IdempotencyStore.CreateTable]
// runs them.
func (s *IdempotencyStore) DDL() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.ddl...)
}

// CreateTable creates the store's table and its index if they do not exist.
func (s *IdempotencyStore) CreateTable(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	for _, q := range s.ddl {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("pgxbudget: creating the idempotency table: %w", err)
		}
	}
	return nil
}

// Reserve implements [idempotency.Store] in one statement.
func (s *IdempotencyStore) Reserve(ctx context.Context, key string, fp [32]byte) (idempotency.Record, bool, error) {
	if err := s.checkKey(key); err != nil {
		return idempotency.Record{}, false, err
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token) // never fails (crypto/rand)
	var (
		mine bool
		rec  idempotency.Record
	)
	row := s.pool.QueryRow(ctx, s.reserveSQL, key, token, fp[:], float64(s.ttlMicros))
	if err := scanRecord(row, &rec, &mine); err != nil {
		s.unreserve(key, token, err)
		return idempotency.Record{}, false, s.fail("reserving an idempotency key", err)
	}
	if mine {
		return idempotency.Record{}, true, nil
	}
	return rec, false, nil
}

// unreserveWait bounds the clean-up of a reservation whose outcome is
// unknown: it delays only a Reserve that failed.
const unreserveWait = time.Second

// unreserve deletes the reservation token made, when the Reserve that made
// it failed with err after its statement may have reached the server: the
// INSERT may have committed before the answer was lost (the caller's
// deadline, a dropped connection), and the caller, told of an error, will
// never complete the key, which would hold every repeat off until the key
// expires. The token is this call's alone, so nothing else is deleted.
func (s *IdempotencyStore) unreserve(key string, token []byte, err error) {
	var failed *pgconn.PgError
	if pgconn.SafeToRetry(err) || errors.Is(err, budget.ErrInsufficient) || errors.Is(err, budget.ErrMisconfigured) {
		return // the statement never left
	} else if errors.As(err, &failed) {
		return // the server answered that it failed: nothing was kept
	}
	ctx, cancel := context.WithTimeout(context.Background(), unreserveWait)
	defer cancel()
	_, _ = s.pool.Exec(ctx, s.unreserveSQL, key, token)
}

// Complete implements [idempotency.Store]. An answer over MaxAnswer is kept
// as done and not replayable, and Complete returns an error matching
// [ErrIdempotentAnswerTooLarge]. Complete(nil) deletes the key only while it
// runs.
func (s *IdempotencyStore) Complete(ctx context.Context, key string, rec *idempotency.Record) error {
	if err := s.checkKey(key); err != nil {
		return err
	}
	if rec == nil {
		if _, err := s.pool.Exec(ctx, s.forgetSQL, key); err != nil {
			return s.fail("forgetting an idempotency key", err)
		}
		return nil
	}
	if rec.Status < math.MinInt32 || rec.Status > math.MaxInt32 {
		return fmt.Errorf("pgxbudget: idempotent answer status %d does not fit the table's integer", rec.Status)
	}
	replayable, body, header := rec.Replayable, rec.Body, encodeHeader(rec.Header)
	var tooLarge error
	if size := len(body) + len(header); size > s.maxAnswer {
		tooLarge = fmt.Errorf("%w: %d bytes of body and header, over MaxAnswer %d: kept as done and not replayable",
			ErrIdempotentAnswerTooLarge, size, s.maxAnswer)
		replayable, body, header = false, nil, nil
	}
	if !replayable {
		body = nil
	}
	if body == nil {
		body = []byte{} // a replayable empty body is an empty body, not NULL
	}
	if _, err := s.pool.Exec(ctx, s.completeSQL, key, replayable, int32(rec.Status), header, body); err != nil {
		return s.fail("completing an idempotency key", err)
	}
	return tooLarge
}

// Get implements [idempotency.Store].
func (s *IdempotencyStore) Get(ctx context.Context, key string) (idempotency.Record, bool, error) {
	if err := s.checkKey(key); err != nil {
		return idempotency.Record{}, false, err
	}
	var rec idempotency.Record
	err := scanRecord(s.pool.QueryRow(ctx, s.getSQL, key), &rec, nil)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return idempotency.Record{}, false, nil
	case err != nil:
		return idempotency.Record{}, false, s.fail("reading an idempotency key", err)
	}
	return rec, true, nil
}

// Purge deletes expired keys, 10,000 per statement, until none is left or
// ctx ends, and returns how many it deleted. Rows locked by a concurrent
// Reserve or Purge are skipped, so replicas may purge at the same time.
func (s *IdempotencyStore) Purge(ctx context.Context) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var n int64
	for {
		tag, err := s.pool.Exec(ctx, s.purgeSQL, purgeBatch)
		if err != nil {
			return n, s.fail("purging expired idempotency keys", err)
		}
		n += tag.RowsAffected()
		if tag.RowsAffected() < purgeBatch {
			return n, nil
		}
	}
}

// fail wraps the error of a statement, saying what it was for, and how to
// create the table when it is missing.
func (s *IdempotencyStore) fail(what string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table
		return fmt.Errorf("pgxbudget: %s: the table %s does not exist (create it with IdempotencyStore.CreateTable, or run IdempotencyStore.DDL): %w",
			what, s.table, err)
	}
	return fmt.Errorf("pgxbudget: %s: %w", what, err)
}

func (s *IdempotencyStore) check() error {
	if s == nil || s.pool == nil {
		return fmt.Errorf("%w: a nil or zero *pgxbudget.IdempotencyStore (make one with pgxbudget.NewIdempotencyStore)", budget.ErrMisconfigured)
	}
	return nil
}

// checkKey refuses what the key column cannot hold, naming why.
func (s *IdempotencyStore) checkKey(key string) error {
	if err := s.check(); err != nil {
		return err
	}
	switch {
	case len(key) > s.maxKey:
		return fmt.Errorf("pgxbudget: an idempotency key of %d bytes, over the store's MaxKey of %d", len(key), s.maxKey)
	case strings.IndexByte(key, 0) >= 0:
		return errors.New("pgxbudget: an idempotency key with a NUL byte, which a text column cannot hold")
	case !utf8.ValidString(key):
		return errors.New("pgxbudget: an idempotency key that is not UTF-8, which a text column cannot hold")
	}
	return nil
}

// scanRecord reads a record's columns into rec, after a leading "mine"
// column when mine is not nil.
func scanRecord(row pgx.Row, rec *idempotency.Record, mine *bool) error {
	var (
		fp, header []byte
		status     int32
	)
	dest := []any{&fp, &rec.Done, &rec.Replayable, &status, &header, &rec.Body}
	if mine != nil {
		dest = append([]any{mine}, dest...)
	}
	if err := row.Scan(dest...); err != nil {
		return err
	}
	if len(fp) != len(rec.Fingerprint) {
		return fmt.Errorf("the table holds a fingerprint of %d bytes, want %d", len(fp), len(rec.Fingerprint))
	}
	copy(rec.Fingerprint[:], fp)
	rec.Status = int(status)
	h, err := decodeHeader(header)
	rec.Header = h
	return err
}

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
