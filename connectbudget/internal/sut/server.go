// Package sut is connect-go's side of the conformance run of connectbudget
// (connectrpc.com/conformance): a server and a client under test, each with
// connectbudget's interceptors installed, or without them for the plain
// baseline. The runner, in the module of internal/conformance, builds
// cmd/server and cmd/client from here and drives them with the suite's
// reference client and server. The protocol buffers under gen are generated
// from the suite's .proto files (see gen.go).
package sut

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v1 "github.com/timebudget/budget/connectbudget/internal/sut/gen/conformancev1"
	"github.com/timebudget/budget/connectbudget/internal/sut/gen/conformancev1/conformancev1connect"
)

// ReadMessage reads one size-delimited message, as the suite writes them:
// a 4-byte big-endian length, then the message.
func ReadMessage(r io.Reader, m proto.Message) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 64<<20 {
		return fmt.Errorf("sut: message of %d bytes is too large", size)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(r, buf); err != nil {
		return err
	}
	return proto.Unmarshal(buf, m)
}

// WriteMessage writes one size-delimited message.
func WriteMessage(w io.Writer, m proto.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err = w.Write(append(out, b...))
	return err
}

// Serve reads a ServerCompatRequest from in, starts the conformance
// service on a loopback port with the handler options opts, writes the
// ServerCompatResponse to out, and serves until ctx ends.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts ...connect.HandlerOption) error {
	req := new(v1.ServerCompatRequest)
	if err := ReadMessage(in, req); err != nil {
		return fmt.Errorf("sut: reading the server request: %w", err)
	}
	if req.GetUseTls() {
		return errors.New("sut: TLS is not supported")
	}
	if lim := req.GetMessageReceiveLimit(); lim > 0 {
		opts = append(opts, connect.WithReadMaxBytes(int(lim)))
	}
	mux := http.NewServeMux()
	mux.Handle(conformancev1connect.NewConformanceServiceHandler(conformanceServer{}, opts...))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, Protocols: new(http.Protocols), ReadHeaderTimeout: 10 * time.Second}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	p, _ := strconv.Atoi(port)
	if err := WriteMessage(out, &v1.ServerCompatResponse{Host: "127.0.0.1", Port: uint32(p)}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
		return nil
	}
}

type conformanceServer struct {
	conformancev1connect.UnimplementedConformanceServiceHandler
}

func protoHeaders(h http.Header) []*v1.Header {
	out := make([]*v1.Header, 0, len(h))
	for k, v := range h {
		out = append(out, &v1.Header{Name: k, Value: v})
	}
	return out
}

func addHeaders(src []*v1.Header, dst http.Header) {
	for _, h := range src {
		for _, v := range h.GetValue() {
			dst.Add(h.GetName(), v)
		}
	}
}

func asAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err) // the suite's own messages always marshal
	}
	return a
}

// requestInfo echoes what the server saw of a request, as the suite asks.
func requestInfo(ctx context.Context, h http.Header, peer connect.Peer, reqs []*anypb.Any) *v1.ConformancePayload_RequestInfo {
	info := &v1.ConformancePayload_RequestInfo{RequestHeaders: protoHeaders(h), Requests: reqs}
	if dl, ok := ctx.Deadline(); ok {
		ms := time.Until(dl).Milliseconds()
		info.TimeoutMs = &ms
	}
	if len(peer.Query) > 0 {
		info.ConnectGetInfo = &v1.ConformancePayload_ConnectGetInfo{QueryParams: protoHeaders(http.Header(peer.Query))}
	}
	return info
}

// toError turns the suite's error definition into a *connect.Error.
func toError(e *v1.Error, info *v1.ConformancePayload_RequestInfo) *connect.Error {
	var cause error
	if e.Message != nil {
		cause = errors.New(e.GetMessage())
	}
	ce := connect.NewError(connect.Code(e.GetCode()), cause)
	details := e.GetDetails()
	if info != nil {
		details = append(details, asAny(info))
	}
	for _, d := range details {
		if ed, err := connect.NewErrorDetail(d); err == nil {
			ce.AddDetail(ed)
		}
	}
	return ce
}

// unary answers a unary request (or a client stream's requests) as its
// response definition says.
func unary(ctx context.Context, def *v1.UnaryResponseDefinition, h http.Header, peer connect.Peer,
	reqs []*anypb.Any, respHeader, respTrailer http.Header) (*v1.ConformancePayload, error) {
	info := requestInfo(ctx, h, peer, reqs)
	if def == nil {
		return &v1.ConformancePayload{RequestInfo: info}, nil
	}
	if e := def.GetError(); e != nil {
		ce := toError(e, info)
		addHeaders(def.GetResponseHeaders(), ce.Meta())
		addHeaders(def.GetResponseTrailers(), ce.Meta())
		return nil, ce
	}
	addHeaders(def.GetResponseHeaders(), respHeader)
	addHeaders(def.GetResponseTrailers(), respTrailer)
	sleep(ctx, time.Duration(def.GetResponseDelayMs())*time.Millisecond)
	return &v1.ConformancePayload{RequestInfo: info, Data: def.GetResponseData()}, nil
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (conformanceServer) Unary(ctx context.Context, req *connect.Request[v1.UnaryRequest]) (*connect.Response[v1.UnaryResponse], error) {
	resp := connect.NewResponse(&v1.UnaryResponse{})
	p, err := unary(ctx, req.Msg.GetResponseDefinition(), req.Header(), req.Peer(), []*anypb.Any{asAny(req.Msg)}, resp.Header(), resp.Trailer())
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp.Msg.Payload = p
	return resp, nil
}

func (conformanceServer) IdempotentUnary(ctx context.Context, req *connect.Request[v1.IdempotentUnaryRequest]) (*connect.Response[v1.IdempotentUnaryResponse], error) {
	resp := connect.NewResponse(&v1.IdempotentUnaryResponse{})
	p, err := unary(ctx, req.Msg.GetResponseDefinition(), req.Header(), req.Peer(), []*anypb.Any{asAny(req.Msg)}, resp.Header(), resp.Trailer())
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp.Msg.Payload = p
	return resp, nil
}

func (conformanceServer) ClientStream(ctx context.Context, st *connect.ClientStream[v1.ClientStreamRequest]) (*connect.Response[v1.ClientStreamResponse], error) {
	var def *v1.UnaryResponseDefinition
	var reqs []*anypb.Any
	for first := true; st.Receive(); first = false {
		if first {
			def = st.Msg().GetResponseDefinition()
		}
		reqs = append(reqs, asAny(st.Msg()))
	}
	if err := st.Err(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp := connect.NewResponse(&v1.ClientStreamResponse{})
	p, err := unary(ctx, def, st.RequestHeader(), st.Peer(), reqs, resp.Header(), resp.Trailer())
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp.Msg.Payload = p
	return resp, nil
}

func (conformanceServer) ServerStream(ctx context.Context, req *connect.Request[v1.ServerStreamRequest], st *connect.ServerStream[v1.ServerStreamResponse]) error {
	def := req.Msg.GetResponseDefinition()
	reqs := []*anypb.Any{asAny(req.Msg)}
	if def == nil {
		return nil
	}
	addHeaders(def.GetResponseHeaders(), st.ResponseHeader())
	addHeaders(def.GetResponseTrailers(), st.ResponseTrailer())
	delay := time.Duration(def.GetResponseDelayMs()) * time.Millisecond
	n := 0
	for _, data := range def.GetResponseData() {
		resp := &v1.ServerStreamResponse{Payload: &v1.ConformancePayload{Data: data}}
		if n == 0 {
			resp.Payload.RequestInfo = requestInfo(ctx, req.Header(), req.Peer(), reqs)
		}
		sleep(ctx, delay)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := st.Send(resp); err != nil {
			return connect.NewError(connect.CodeInternal, fmt.Errorf("error sending on stream: %w", err))
		}
		n++
	}
	if e := def.GetError(); e != nil {
		var info *v1.ConformancePayload_RequestInfo
		if n == 0 {
			info = requestInfo(ctx, req.Header(), req.Peer(), reqs)
		}
		return toError(e, info)
	}
	return nil
}

func (conformanceServer) BidiStream(ctx context.Context, st *connect.BidiStream[v1.BidiStreamRequest, v1.BidiStreamResponse]) error {
	var def *v1.StreamResponseDefinition
	var delay time.Duration
	fullDuplex, first, n := false, true, 0
	var reqs []*anypb.Any
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		req, err := st.Receive()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("receive request: %w", err)
		}
		reqs = append(reqs, asAny(req))
		if first {
			first = false
			def, fullDuplex = req.GetResponseDefinition(), req.GetFullDuplex()
			if def != nil {
				addHeaders(def.GetResponseHeaders(), st.ResponseHeader())
				addHeaders(def.GetResponseTrailers(), st.ResponseTrailer())
				delay = time.Duration(def.GetResponseDelayMs()) * time.Millisecond
			}
		}
		if !fullDuplex {
			continue
		}
		if n >= len(def.GetResponseData()) {
			break
		}
		resp := &v1.BidiStreamResponse{Payload: &v1.ConformancePayload{Data: def.GetResponseData()[n]}}
		if n == 0 {
			resp.Payload.RequestInfo = requestInfo(ctx, st.RequestHeader(), st.Peer(), reqs)
		} else {
			resp.Payload.RequestInfo = &v1.ConformancePayload_RequestInfo{Requests: reqs}
		}
		sleep(ctx, delay)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := st.Send(resp); err != nil {
			return connect.NewError(connect.CodeInternal, fmt.Errorf("error sending on stream: %w", err))
		}
		n++
		reqs = nil
	}
	if def == nil {
		return nil
	}
	for ; n < len(def.GetResponseData()); n++ {
		resp := &v1.BidiStreamResponse{Payload: &v1.ConformancePayload{Data: def.GetResponseData()[n]}}
		if n == 0 {
			resp.Payload.RequestInfo = requestInfo(ctx, st.RequestHeader(), st.Peer(), reqs)
		}
		sleep(ctx, delay)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := st.Send(resp); err != nil {
			return connect.NewError(connect.CodeInternal, fmt.Errorf("error sending on stream: %w", err))
		}
	}
	if e := def.GetError(); e != nil {
		var info *v1.ConformancePayload_RequestInfo
		if n == 0 {
			info = requestInfo(ctx, st.RequestHeader(), st.Peer(), reqs)
		}
		return toError(e, info)
	}
	return nil
}
