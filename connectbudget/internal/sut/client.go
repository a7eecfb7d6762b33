package sut

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	v1 "github.com/timebudget/budget/connectbudget/internal/sut/gen/conformancev1"
	"github.com/timebudget/budget/connectbudget/internal/sut/gen/conformancev1/conformancev1connect"
)

// RunClient reads ClientCompatRequests from in until it ends, runs each
// (concurrently) with a connect-go client made with the client options
// opts, and writes each ClientCompatResponse to out.
func RunClient(ctx context.Context, in io.Reader, out io.Writer, opts ...connect.ClientOption) error {
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	defer wg.Wait()
	// A few cases at a time: thousands of concurrent calls on a small
	// machine would turn the suite's 2 s deadlines into a test of its
	// scheduler.
	slots := make(chan struct{}, 8)
	for {
		req := new(v1.ClientCompatRequest)
		if err := ReadMessage(in, req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("sut: reading a client request: %w", err)
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			resp := &v1.ClientCompatResponse{TestName: req.GetTestName()}
			result, err := runCase(ctx, req, opts)
			if err != nil {
				resp.Result = &v1.ClientCompatResponse_Error{Error: &v1.ClientErrorResult{Message: err.Error()}}
			} else {
				resp.Result = &v1.ClientCompatResponse_Response{Response: result}
			}
			mu.Lock()
			defer mu.Unlock()
			_ = WriteMessage(out, resp)
		})
	}
}

func httpClient(req *v1.ClientCompatRequest) (*http.Client, error) {
	p := new(http.Protocols)
	switch req.GetHttpVersion() {
	case v1.HTTPVersion_HTTP_VERSION_1:
		p.SetHTTP1(true)
	case v1.HTTPVersion_HTTP_VERSION_2:
		p.SetUnencryptedHTTP2(true)
	default:
		return nil, fmt.Errorf("HTTP version %v is not supported", req.GetHttpVersion())
	}
	if len(req.GetServerTlsCert()) > 0 {
		return nil, errors.New("TLS is not supported")
	}
	return &http.Client{Transport: &http.Transport{Protocols: p}}, nil
}

func runCase(ctx context.Context, req *v1.ClientCompatRequest, opts []connect.ClientOption) (*v1.ClientResponseResult, error) {
	if req.GetRawRequest() != nil {
		return nil, errors.New("raw requests are not supported")
	}
	hc, err := httpClient(req)
	if err != nil {
		return nil, err
	}
	defer hc.CloseIdleConnections()
	opts = append([]connect.ClientOption(nil), opts...)
	switch req.GetProtocol() {
	case v1.Protocol_PROTOCOL_GRPC:
		opts = append(opts, connect.WithGRPC())
	case v1.Protocol_PROTOCOL_GRPC_WEB:
		opts = append(opts, connect.WithGRPCWeb())
	}
	if req.GetCodec() == v1.Codec_CODEC_JSON {
		opts = append(opts, connect.WithProtoJSON())
	}
	if req.GetCompression() == v1.Compression_COMPRESSION_GZIP {
		opts = append(opts, connect.WithSendGzip())
	}
	if lim := req.GetMessageReceiveLimit(); lim > 0 {
		opts = append(opts, connect.WithReadMaxBytes(int(lim)))
	}
	if req.GetUseGetHttpMethod() {
		opts = append(opts, connect.WithHTTPGet())
	}
	client := conformancev1connect.NewConformanceServiceClient(hc, "http://"+net.JoinHostPort(req.GetHost(), strconv.Itoa(int(req.GetPort()))), opts...)
	if t := req.GetTimeoutMs(); req.TimeoutMs != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Millisecond)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &caseRun{req: req, cancel: cancel}
	switch req.GetMethod() {
	case "Unary":
		return c.unary(ctx, client)
	case "IdempotentUnary":
		return c.idempotent(ctx, client)
	case "Unimplemented":
		return c.unimplemented(ctx, client)
	case "ServerStream":
		return c.serverStream(ctx, client)
	case "ClientStream":
		return c.clientStream(ctx, client)
	case "BidiStream":
		return c.bidiStream(ctx, client)
	}
	return nil, fmt.Errorf("method %q is not supported", req.GetMethod())
}

type caseRun struct {
	req    *v1.ClientCompatRequest
	cancel context.CancelFunc
}

func setHeaders(h http.Header, src []*v1.Header) {
	for _, x := range src {
		for _, v := range x.GetValue() {
			h.Add(x.GetName(), v)
		}
	}
}

// message unpacks the i-th request message into m.
func (c *caseRun) message(i int, m proto.Message) error {
	msgs := c.req.GetRequestMessages()
	if i >= len(msgs) {
		return fmt.Errorf("request message %d is missing", i)
	}
	return msgs[i].UnmarshalTo(m)
}

// protoError converts a connect-go error to the suite's.
func protoError(err error) *v1.Error {
	if err == nil {
		return nil
	}
	ce := new(connect.Error)
	if !errors.As(err, &ce) {
		msg := err.Error()
		return &v1.Error{Code: v1.Code_CODE_UNKNOWN, Message: &msg}
	}
	msg := ce.Message()
	e := &v1.Error{Code: v1.Code(ce.Code()), Message: &msg}
	for _, d := range ce.Details() {
		e.Details = append(e.Details, &anypb.Any{TypeUrl: "type.googleapis.com/" + d.Type(), Value: d.Bytes()})
	}
	return e
}

// errorResult is the result of a call that ended with err.
func errorResult(err error, header, trailer http.Header) *v1.ClientResponseResult {
	r := &v1.ClientResponseResult{Error: protoError(err), ResponseHeaders: protoHeaders(header), ResponseTrailers: protoHeaders(trailer)}
	ce := new(connect.Error)
	if errors.As(err, &ce) && header == nil && trailer == nil {
		r.ResponseHeaders = protoHeaders(ce.Meta())
	}
	return r
}

func (c *caseRun) delay(ctx context.Context) {
	sleep(ctx, time.Duration(c.req.GetRequestDelayMs())*time.Millisecond)
}

func (c *caseRun) unary(ctx context.Context, client conformancev1connect.ConformanceServiceClient) (*v1.ClientResponseResult, error) {
	m := new(v1.UnaryRequest)
	if err := c.message(0, m); err != nil {
		return nil, err
	}
	r := connect.NewRequest(m)
	setHeaders(r.Header(), c.req.GetRequestHeaders())
	c.delay(ctx)
	if c.req.GetCancel().GetBeforeCloseSend() != nil {
		c.cancel()
	}
	// A unary request is closed as it is sent.
	c.afterClose()
	resp, err := client.Unary(ctx, r)
	if err != nil {
		return errorResult(err, nil, nil), nil
	}
	return &v1.ClientResponseResult{ResponseHeaders: protoHeaders(resp.Header()), ResponseTrailers: protoHeaders(resp.Trailer()),
		Payloads: []*v1.ConformancePayload{resp.Msg.GetPayload()}}, nil
}

func (c *caseRun) idempotent(ctx context.Context, client conformancev1connect.ConformanceServiceClient) (*v1.ClientResponseResult, error) {
	m := new(v1.IdempotentUnaryRequest)
	if err := c.message(0, m); err != nil {
		return nil, err
	}
	r := connect.NewRequest(m)
	setHeaders(r.Header(), c.req.GetRequestHeaders())
	c.delay(ctx)
	resp, err := client.IdempotentUnary(ctx, r)
	if err != nil {
		return errorResult(err, nil, nil), nil
	}
	return &v1.ClientResponseResult{ResponseHeaders: protoHeaders(resp.Header()), ResponseTrailers: protoHeaders(resp.Trailer()),
		Payloads: []*v1.ConformancePayload{resp.Msg.GetPayload()}}, nil
}

func (c *caseRun) unimplemented(ctx context.Context, client conformancev1connect.ConformanceServiceClient) (*v1.ClientResponseResult, error) {
	m := new(v1.UnimplementedRequest)
	if err := c.message(0, m); err != nil {
		return nil, err
	}
	r := connect.NewRequest(m)
	setHeaders(r.Header(), c.req.GetRequestHeaders())
	resp, err := client.Unimplemented(ctx, r)
	if err != nil {
		return errorResult(err, nil, nil), nil
	}
	return &v1.ClientResponseResult{ResponseHeaders: protoHeaders(resp.Header()), ResponseTrailers: protoHeaders(resp.Trailer())}, nil
}

func (c *caseRun) serverStream(ctx context.Context, client conformancev1connect.ConformanceServiceClient) (*v1.ClientResponseResult, error) {
	m := new(v1.ServerStreamRequest)
	if err := c.message(0, m); err != nil {
		return nil, err
	}
	r := connect.NewRequest(m)
	setHeaders(r.Header(), c.req.GetRequestHeaders())
	c.delay(ctx)
	st, err := client.ServerStream(ctx, r)
	if err != nil {
		return errorResult(err, nil, nil), nil
	}
	defer st.Close()
	c.afterClose()
	result := new(v1.ClientResponseResult)
	n := uint32(0)
	for st.Receive() {
		result.Payloads = append(result.Payloads, st.Msg().GetPayload())
		n++
		if after := c.req.GetCancel(); after != nil && after.CancelTiming != nil && after.GetAfterNumResponses() == n {
			if _, ok := after.CancelTiming.(*v1.ClientCompatRequest_Cancel_AfterNumResponses); ok {
				c.cancel()
			}
		}
	}
	result.Error = protoError(st.Err())
	result.ResponseHeaders = protoHeaders(st.ResponseHeader())
	result.ResponseTrailers = protoHeaders(st.ResponseTrailer())
	return result, nil
}

// afterClose cancels the call after the request was closed, when the case
// asks for it.
func (c *caseRun) afterClose() {
	if t, ok := c.req.GetCancel().GetCancelTiming().(*v1.ClientCompatRequest_Cancel_AfterCloseSendMs); ok {
		time.AfterFunc(time.Duration(t.AfterCloseSendMs)*time.Millisecond, c.cancel)
	}
}

func (c *caseRun) clientStream(ctx context.Context, client conformancev1connect.ConformanceServiceClient) (*v1.ClientResponseResult, error) {
	st := client.ClientStream(ctx)
	setHeaders(st.RequestHeader(), c.req.GetRequestHeaders())
	result := new(v1.ClientResponseResult)
	msgs := c.req.GetRequestMessages()
	for i := range msgs {
		m := new(v1.ClientStreamRequest)
		if err := c.message(i, m); err != nil {
			return nil, err
		}
		c.delay(ctx)
		if err := st.Send(m); err != nil {
			result.NumUnsentRequests = int32(len(msgs) - i)
			break
		}
	}
	if c.req.GetCancel().GetBeforeCloseSend() != nil {
		c.cancel()
	}
	c.afterClose()
	resp, err := st.CloseAndReceive()
	if err != nil {
		r := errorResult(err, nil, nil)
		r.NumUnsentRequests = result.NumUnsentRequests
		return r, nil
	}
	result.ResponseHeaders = protoHeaders(resp.Header())
	result.ResponseTrailers = protoHeaders(resp.Trailer())
	result.Payloads = []*v1.ConformancePayload{resp.Msg.GetPayload()}
	return result, nil
}

func (c *caseRun) bidiStream(ctx context.Context, client conformancev1connect.ConformanceServiceClient) (*v1.ClientResponseResult, error) {
	st := client.BidiStream(ctx)
	defer st.CloseResponse()
	setHeaders(st.RequestHeader(), c.req.GetRequestHeaders())
	result := new(v1.ClientResponseResult)
	msgs := c.req.GetRequestMessages()
	fullDuplex := c.req.GetStreamType() == v1.StreamType_STREAM_TYPE_FULL_DUPLEX_BIDI_STREAM
	received := uint32(0)
	var recvErr error
	receive := func() bool {
		m, err := st.Receive()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				recvErr = err
			}
			return false
		}
		result.Payloads = append(result.Payloads, m.GetPayload())
		received++
		if t, ok := c.req.GetCancel().GetCancelTiming().(*v1.ClientCompatRequest_Cancel_AfterNumResponses); ok && t.AfterNumResponses == received {
			c.cancel()
		}
		return true
	}
	done := false
	for i := range msgs {
		m := new(v1.BidiStreamRequest)
		if err := c.message(i, m); err != nil {
			return nil, err
		}
		c.delay(ctx)
		if err := st.Send(m); err != nil {
			result.NumUnsentRequests = int32(len(msgs) - i)
			break
		}
		if fullDuplex && !done && !receive() {
			done = true
		}
	}
	if c.req.GetCancel().GetBeforeCloseSend() != nil {
		c.cancel()
	}
	_ = st.CloseRequest()
	c.afterClose()
	for !done && receive() {
	}
	result.Error = protoError(recvErr)
	result.ResponseHeaders = protoHeaders(st.ResponseHeader())
	result.ResponseTrailers = protoHeaders(st.ResponseTrailer())
	return result, nil
}
