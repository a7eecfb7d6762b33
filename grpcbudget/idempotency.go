package grpcbudget

import (
	"context"
	"errors"
	"sync"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/wire"
)

// IdempotentReplayedKey is the header metadata key, set to "true", of an
// answer [IdempotentUnaryServerInterceptor] replays: "idempotent-replayed",
// httpbudget's Idempotent-Replayed header in lower case.
const IdempotentReplayedKey = "idempotent-replayed"

// Reserved keys of a stored record's Header: the reply's message type, and
// the prefix of trailer keys. Neither can be a metadata key, which holds no
// ':'.
const (
	recordType    = ":type"
	recordTrailer = "trailer:"
)

// IdempotentUnaryServerInterceptor returns an interceptor that runs each
// unary handler at most once per idempotency key, sharing store with every
// replica that uses it: a call carrying [IdempotencyKeyKey] metadata
// ("idempotency-key", as this package's client sends the key of
// [budget.WithIdempotencyKey]) that the store has seen before gets the
// first call's answer again (its reply or status, with its header and
// trailer metadata, and the header "idempotent-replayed: true") instead of
// running the handler. Calls without the key run the handler unchanged, at
// the cost of one metadata lookup. Streams are not deduplicated: this
// interceptor is for unary calls only, and a stream carrying a key runs as
// any other.
//
// The key is bound to the call: its full method name and its request
// message (SHA-256 of the message marshalled deterministically). A repeat of
// the key with another call is refused with INVALID_ARGUMENT, never answered
// with the first's answer. A repeat that arrives while the first still runs
// waits for it and replays its answer, within its own budget (its context's
// deadline, less a millisecond to answer; 10 s when it has none); when its
// budget cannot cover the wait it gets ABORTED ("try again") and the handler
// does not run. A malformed key (empty, over 255 bytes, control characters,
// several values: see [wire.ParseIdempotencyKey]) is refused with
// INVALID_ARGUMENT naming what was wrong.
//
// The store fails closed: when it cannot reserve or read a key (an error,
// or [idempotency.ErrStoreFull]), the call gets UNAVAILABLE and the handler
// does not run, since running it could repeat work the store would have
// stopped. A reply over 1 MiB marshalled, or that is not a protocol buffer
// message, is not kept: repeats get ABORTED. When the handler panics, the
// key is forgotten, so that a repeat runs the handler again, and the panic
// goes on. Every answer is kept, errors included: a repeat gets the first
// call's status, since the work it reports on may have run.
//
// A replayed reply is a new message of the reply's type, found by name in
// the global registry of protocol buffer types (generated code registers
// its types). Install the interceptor after [UnaryServerInterceptor]
// (grpc.ChainUnaryInterceptor), so that a repeat's wait is bounded by its
// budget. It panics if store is nil, at setup. It is safe for concurrent
// use when store is.
func IdempotentUnaryServerInterceptor(store idempotency.Store) grpc.UnaryServerInterceptor {
	if store == nil {
		panic("grpcbudget: IdempotentUnaryServerInterceptor with a nil store")
	}
	return (&idempotent{store: store}).unary
}

type idempotent struct{ store idempotency.Store }

func (s *idempotent) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	vals := metadata.ValueFromIncomingContext(ctx, IdempotencyKeyKey)
	if len(vals) == 0 {
		return handler(ctx, req)
	}
	key, _, err := wire.ParseIdempotencyKey(vals)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	fp, err := callFingerprint(info.FullMethod, req)
	if err != nil {
		return nil, err
	}
	var resp any
	var herr error
	rec, res, err := idempotency.Once(ctx, s.store, key, fp, idempotency.MaxWait, func(ctx context.Context) idempotency.Record {
		rs := &recordingStream{ServerTransportStream: grpc.ServerTransportStreamFromContext(ctx)}
		if rs.ServerTransportStream != nil {
			ctx = grpc.NewContextWithServerTransportStream(ctx, rs)
		}
		resp, herr = handler(ctx, req)
		return rs.record(resp, herr)
	})
	switch res {
	case idempotency.Ran:
		return resp, herr
	case idempotency.Replayed:
		return replay(ctx, rec)
	case idempotency.Mismatch:
		return nil, status.Error(codes.InvalidArgument, "grpcbudget: idempotency-key reused with another call (method or request message)")
	case idempotency.Busy:
		return nil, status.Error(codes.Aborted, "grpcbudget: a call with this idempotency-key is still running, or failed: try again")
	case idempotency.NotReplayable:
		return nil, status.Error(codes.Aborted, "grpcbudget: the first answer for this idempotency-key could not be kept to replay")
	}
	msg := "grpcbudget: idempotency store unavailable"
	if errors.Is(err, idempotency.ErrStoreFull) {
		msg = err.Error()
	}
	return nil, status.Error(codes.Unavailable, msg)
}

// callFingerprint returns the fingerprint ([idempotency.Fingerprint]) of
// method and req marshalled deterministically, or INTERNAL when req is not
// a protocol buffer message.
func callFingerprint(method string, req any) ([32]byte, error) {
	m, ok := req.(proto.Message)
	if !ok {
		return [32]byte{}, status.Errorf(codes.Internal, "grpcbudget: an idempotent call's request must be a protocol buffer message, not %T", req)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return [32]byte{}, status.Error(codes.Internal, "grpcbudget: marshalling the request to fingerprint it: "+err.Error())
	}
	return idempotency.Fingerprint([]byte(method), b), nil
}

// recordingStream passes the metadata a handler sets through to the call,
// and keeps a copy of it for the record.
type recordingStream struct {
	grpc.ServerTransportStream
	mu              sync.Mutex
	header, trailer metadata.MD
}

func (r *recordingStream) SetHeader(md metadata.MD) error {
	r.mu.Lock()
	r.header = metadata.Join(r.header, md)
	r.mu.Unlock()
	return r.ServerTransportStream.SetHeader(md)
}

func (r *recordingStream) SendHeader(md metadata.MD) error {
	r.mu.Lock()
	r.header = metadata.Join(r.header, md)
	r.mu.Unlock()
	return r.ServerTransportStream.SendHeader(md)
}

func (r *recordingStream) SetTrailer(md metadata.MD) error {
	r.mu.Lock()
	r.trailer = metadata.Join(r.trailer, md)
	r.mu.Unlock()
	return r.ServerTransportStream.SetTrailer(md)
}

// record returns the record of a handler's answer: the reply marshalled
// (its type's name in the header) or the status's protocol buffer, and the
// header and trailer metadata the handler set.
func (r *recordingStream) record(resp any, herr error) idempotency.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := make(map[string][]string, len(r.header)+len(r.trailer)+1)
	for k, v := range r.header {
		h[k] = v
	}
	for k, v := range r.trailer {
		h[recordTrailer+k] = v
	}
	var b []byte
	var err error
	rec := idempotency.Record{Header: h}
	if herr != nil {
		st := status.Convert(herr)
		rec.Status = int(st.Code())
		b, err = proto.Marshal(st.Proto())
	} else if m, ok := resp.(proto.Message); ok && m != nil {
		h[recordType] = []string{string(m.ProtoReflect().Descriptor().FullName())}
		b, err = proto.Marshal(m)
	} else {
		return rec // not a message: not replayable
	}
	rec.Replayable = err == nil && len(b) <= idempotency.MaxAnswer
	rec.Body = b
	return rec
}

// replay answers with rec, a key's first answer: its metadata, marked
// replayed, and its reply or status.
func replay(ctx context.Context, rec idempotency.Record) (any, error) {
	header := metadata.MD{IdempotentReplayedKey: {"true"}}
	var trailer metadata.MD
	for k, v := range rec.Header {
		switch {
		case k == recordType:
		case len(k) > len(recordTrailer) && k[:len(recordTrailer)] == recordTrailer:
			if trailer == nil {
				trailer = metadata.MD{}
			}
			trailer[k[len(recordTrailer):]] = v
		default:
			header[k] = v
		}
	}
	if grpc.ServerTransportStreamFromContext(ctx) != nil {
		_ = grpc.SetHeader(ctx, header)
		_ = grpc.SetTrailer(ctx, trailer)
	}
	if rec.Status != int(codes.OK) {
		p := new(spb.Status)
		if err := proto.Unmarshal(rec.Body, p); err != nil {
			return nil, status.Error(codes.Internal, "grpcbudget: the first answer for this idempotency-key could not be read: "+err.Error())
		}
		return nil, status.ErrorProto(p)
	}
	var name string
	if v := rec.Header[recordType]; len(v) == 1 {
		name = v[0]
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "grpcbudget: the first answer for this idempotency-key has a reply type %q that is not registered", name)
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(rec.Body, m); err != nil {
		return nil, status.Error(codes.Internal, "grpcbudget: the first answer for this idempotency-key could not be read: "+err.Error())
	}
	return m, nil
}
