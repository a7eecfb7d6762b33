package overload

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"
)

// Classes of requests, and the edge routes they arrive on.
const (
	classCritical  = "critical"
	classDefault   = "default"
	classSheddable = "sheddable"
)

// classOfPath is the edge's policy: the route says the class.
func classOfPath(path string) string {
	switch path {
	case "/" + classCritical:
		return classCritical
	case "/" + classSheddable:
		return classSheddable
	}
	return classDefault
}

// graph is one running service graph: the edge and the middle hop in this
// process, the backend in a child.
type graph struct {
	v          *variant
	backend    *child
	servers    []*http.Server
	transports []*http.Transport
	edgeURL    string
	fanout     int // backend calls the edge needs for one request
}

// newTransport is the base transport of every client of a run: enough idle
// connections per host that an open-loop load does not churn them.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}

// startGraph starts the named variant's graph.
func startGraph(exe, name string, spec backendSpec, cg *cgroups, fanout int) (*graph, error) {
	spec.Variant = name
	v, err := newVariant(name, spec.params)
	if err != nil {
		return nil, err
	}
	g := &graph{v: v, fanout: max(fanout, 1)}
	g.backend, err = startBackend(exe, spec, cg)
	if err != nil {
		v.close()
		return nil, err
	}
	middleURL, err := g.serve(g.hop("middle", "http://"+g.backend.addr+"/work", false))
	if err != nil {
		g.close()
		return nil, err
	}
	edgeAddr, err := g.serve(g.hop("edge", middleURL+"/work", true))
	if err != nil {
		g.close()
		return nil, err
	}
	g.edgeURL = edgeAddr
	return g, nil
}

// serve serves h on a loopback port and returns its base URL.
func (g *graph) serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	g.servers = append(g.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// hop is the handler of the edge or the middle: it forwards the request to
// next through the variant's protection and answers with what came back.
func (g *graph) hop(name, next string, edge bool) http.Handler {
	base := newTransport()
	g.transports = append(g.transports, base)
	client := &http.Client{Transport: g.v.transport(name, base)}
	v := g.v
	return v.serve(name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		class := r.Header.Get(classHeader)
		ctx := r.Context()
		if edge {
			class = classOfPath(r.URL.Path)
			ctx = v.classify(ctx, class)
		}
		one := func(ctx context.Context, part string) (int, error) {
			return v.call(ctx, name, func(ctx context.Context) (int, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
				if err != nil {
					return 0, err
				}
				for _, h := range []string{idHeader, unitsHeader} {
					req.Header.Set(h, r.Header.Get(h))
				}
				req.Header.Set(partHeader, part)
				req.Header.Set(classHeader, class)
				resp, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				return resp.StatusCode, nil
			})
		}
		var status int
		var err error
		if edge && g.fanout > 1 {
			status, err = v.gather(ctx, g.fanout, one)
		} else {
			status, err = one(ctx, r.Header.Get(partHeader))
		}
		switch {
		case err != nil:
			v.fail(w, err)
		case status != http.StatusOK:
			w.WriteHeader(status)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
}

// close stops the graph: its servers, its connections, the backend process
// and what the variant started.
func (g *graph) close() {
	for _, s := range g.servers {
		_ = s.Close()
	}
	for _, t := range g.transports {
		t.CloseIdleConnections()
	}
	if g.backend != nil {
		g.backend.stop()
	}
	g.v.close()
}
