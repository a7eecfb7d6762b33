package connectbudget

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/timebudget/budget/idempotency"
	"github.com/timebudget/budget/wire"
)

// HeaderIdempotentReplayed is set to "true" on an answer the interceptor of
// [NewIdempotentInterceptor] replays, as httpbudget's Idempotent sets it.
const HeaderIdempotentReplayed = "Idempotent-Replayed"

// Reserved keys of a stored record's Header: the reply's message type, the
// error's details, and the prefix of trailer keys. None can be an HTTP
// header name, which holds no ':'.
const (
	recordType    = ":type"
	recordDetail  = ":detail"
	recordTrailer = "trailer:"
)

// NewIdempotentInterceptor returns an interceptor that runs each unary
// handler at most once per idempotency key, sharing store with every
// replica that uses it: a call carrying an Idempotency-Key header (as this
// package's client sends the key of [budget.WithIdempotencyKey]) that the
// store has seen before gets the first call's answer again (its reply or
// error, with the headers and trailers of its response or the error's
// metadata, and Idempotent-Replayed: true) instead of running the handler.
// Calls without the key run the handler unchanged, at the cost of one
// header lookup. Streams are not deduplicated: a stream carrying a key runs
// as any other. It leaves calls a client makes unchanged.
//
// The key is bound to the call: its procedure and its request message
// (SHA-256 of the message marshalled deterministically as a protocol buffer,
// whatever the codec on the wire). A repeat of the key with another call is
// refused with InvalidArgument, never answered with the first's answer. A
// repeat that arrives while the first still runs waits for it and replays
// its answer, within its own budget (its context's deadline, less a
// millisecond to answer; 10 s when it has none); when its budget cannot
// cover the wait it gets Aborted ("try again") and the handler does not
// run. A malformed key (empty, over 255 bytes, control characters, several
// values: see [wire.ParseIdempotencyKey]) is refused with InvalidArgument
// naming what was wrong.
//
// The store fails closed: when it cannot reserve or read a key (an error,
// or [idempotency.ErrStoreFull]), the call gets Unavailable and the handler
// does not run, since running it could repeat work the store would have
// stopped. A reply over 1 MiB marshalled, or that is not a protocol buffer
// message, is not kept: repeats get Aborted. When the handler panics, the
// key is forgotten, so that a repeat runs the handler again, and the panic
// goes on. Every answer is kept, errors included.
//
// A replayed reply is a new message of the reply's type, found by name in
// the global registry of protocol buffer types (generated code registers
// its types). Install it after [NewServerInterceptor]
// (connect.WithInterceptors(budget, idempotent)), so that a repeat's wait is
// bounded by its budget. It panics if store is nil, at setup. It is safe for
// concurrent use when store is.
func NewIdempotentInterceptor(store idempotency.Store) connect.Interceptor {
	if store == nil {
		panic("connectbudget: NewIdempotentInterceptor with a nil store")
	}
	return &idempotent{store: store}
}

type idempotent struct{ store idempotency.Store }

// WrapStreamingClient returns next unchanged: streams are not deduplicated.
func (s *idempotent) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler returns next unchanged: streams are not deduplicated.
func (s *idempotent) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func (s *idempotent) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		vals := req.Header()[idempotencyKeyKey]
		if req.Spec().IsClient || len(vals) == 0 {
			return next(ctx, req)
		}
		key, _, err := wire.ParseIdempotencyKey(vals)
		if err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, err)
		}
		fp, err := callFingerprint(req.Spec().Procedure, req.Any())
		if err != nil {
			return nil, err
		}
		var resp connect.AnyResponse
		var herr error
		rec, res, err := idempotency.Once(ctx, s.store, key, fp, idempotency.MaxWait, func(ctx context.Context) idempotency.Record {
			resp, herr = next(ctx, req)
			return record(resp, herr)
		})
		switch res {
		case idempotency.Ran:
			return resp, herr
		case idempotency.Replayed:
			return replay(rec)
		case idempotency.Mismatch:
			return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("connectbudget: Idempotency-Key reused with another call (procedure or request message)"))
		case idempotency.Busy:
			return nil, connect.NewError(connect.CodeAborted, errors.New("connectbudget: a call with this Idempotency-Key is still running, or failed: try again"))
		case idempotency.NotReplayable:
			return nil, connect.NewError(connect.CodeAborted, errors.New("connectbudget: the first answer for this Idempotency-Key could not be kept to replay"))
		}
		if !errors.Is(err, idempotency.ErrStoreFull) {
			err = errors.New("connectbudget: idempotency store unavailable")
		}
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
}

// callFingerprint returns the fingerprint ([idempotency.Fingerprint]) of
// procedure and msg marshalled deterministically, or Internal when msg is
// not a protocol buffer message.
func callFingerprint(procedure string, msg any) ([32]byte, error) {
	m, ok := msg.(proto.Message)
	if !ok {
		return [32]byte{}, connect.NewError(connect.CodeInternal, errors.New("connectbudget: an idempotent call's request must be a protocol buffer message"))
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return [32]byte{}, connect.NewError(connect.CodeInternal, errors.New("connectbudget: marshalling the request to fingerprint it: "+err.Error()))
	}
	return idempotency.Fingerprint([]byte(procedure), b), nil
}

// record returns the record of a handler's answer: the reply marshalled
// (its type's name in the header) with the response's headers and
// trailers, or the error's code, message, details and metadata.
func record(resp connect.AnyResponse, herr error) idempotency.Record {
	h := make(map[string][]string)
	if herr != nil {
		var ce *connect.Error
		if !errors.As(herr, &ce) {
			ce = connect.NewError(connect.CodeUnknown, herr)
		}
		if !connect.IsWireError(ce) { // connect-go does not send a wire error's metadata
			for k, v := range ce.Meta() {
				h[k] = v
			}
		}
		for _, d := range ce.Details() {
			b, err := proto.Marshal(&anypb.Any{TypeUrl: "type.googleapis.com/" + d.Type(), Value: d.Bytes()})
			if err != nil {
				return idempotency.Record{}
			}
			h[recordDetail] = append(h[recordDetail], base64.StdEncoding.EncodeToString(b))
		}
		return idempotency.Record{Status: int(ce.Code()), Header: h, Body: []byte(ce.Message()), Replayable: true}
	}
	m, ok := resp.Any().(proto.Message)
	if !ok || m == nil {
		return idempotency.Record{} // not a message: not replayable
	}
	for k, v := range resp.Header() {
		h[k] = v
	}
	for k, v := range resp.Trailer() {
		h[recordTrailer+k] = v
	}
	h[recordType] = []string{string(m.ProtoReflect().Descriptor().FullName())}
	b, err := proto.Marshal(m)
	return idempotency.Record{Header: h, Body: b, Replayable: err == nil && len(b) <= idempotency.MaxAnswer}
}

// replay answers with rec, a key's first answer, marked replayed.
func replay(rec idempotency.Record) (connect.AnyResponse, error) {
	if rec.Status != 0 {
		ce := connect.NewError(connect.Code(rec.Status), errors.New(string(rec.Body)))
		for k, v := range rec.Header {
			if k != recordDetail {
				ce.Meta()[k] = v
			}
		}
		ce.Meta().Set(HeaderIdempotentReplayed, "true")
		for _, v := range rec.Header[recordDetail] {
			b, err := base64.StdEncoding.DecodeString(v)
			a := new(anypb.Any)
			if err == nil {
				err = proto.Unmarshal(b, a)
			}
			if err != nil {
				return nil, unreadable(err)
			}
			d, err := connect.NewErrorDetail(a)
			if err != nil {
				return nil, unreadable(err)
			}
			ce.AddDetail(d)
		}
		return nil, ce
	}
	var name string
	if v := rec.Header[recordType]; len(v) == 1 {
		name = v[0]
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, errors.New("connectbudget: the first answer for this Idempotency-Key has a reply type that is not registered: "+name))
	}
	r := &replayed{msg: mt.New().Interface(), header: http.Header{}, trailer: http.Header{}}
	if err := proto.Unmarshal(rec.Body, r.msg); err != nil {
		return nil, unreadable(err)
	}
	for k, v := range rec.Header {
		switch {
		case k == recordType:
		case strings.HasPrefix(k, recordTrailer):
			r.trailer[k[len(recordTrailer):]] = v
		default:
			r.header[k] = v
		}
	}
	r.header.Set(HeaderIdempotentReplayed, "true")
	return r, nil
}

func unreadable(err error) error {
	return connect.NewError(connect.CodeInternal, errors.New("connectbudget: the first answer for this Idempotency-Key could not be read: "+err.Error()))
}

// replayed is a replayed reply. connect-go's handlers read a response
// through Any, Header and Trailer only; the embedded response gives the
// type the method connect.AnyResponse requires of its implementations.
type replayed struct {
	*connect.Response[struct{}]
	msg             proto.Message
	header, trailer http.Header
}

func (r *replayed) Any() any             { return r.msg }
func (r *replayed) Header() http.Header  { return r.header }
func (r *replayed) Trailer() http.Header { return r.trailer }
