package httpclientctx

import (
	"context"
	"net/http"
)

// A client in a package that sends requests with a context is not reported:
// the deadline travels on each request.
var perRequest = &http.Client{}

func withContext(ctx context.Context, c *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

func doInHandler(w http.ResponseWriter, r *http.Request) {
	out, _ := http.NewRequest("GET", "http://example.com", nil)
	out = out.WithContext(r.Context())
	http.DefaultClient.Do(out)
}

// The package above sends requests with a context, but this function has
// none: its client waits forever on a slow server.
func noContext(u string) {
	c := &http.Client{} // want `http.Client without Timeout`
	c.Get(u)
}

// A context in scope does not reach Get, which takes none.
func getInHandler(w http.ResponseWriter, r *http.Request) {
	c := &http.Client{} // want `http.Client without Timeout`
	c.Get("http://example.com")
}

// Near misses: none of these is reported.

// The request carries the function's context.
func localWithContext(ctx context.Context, u string) {
	c := &http.Client{}
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	c.Do(req)
}

// The client leaves the function; callers in this package send requests
// with a context.
func newClient() *http.Client {
	c := &http.Client{Transport: http.DefaultTransport}
	return c
}

type service struct{ c *http.Client }

func (s *service) init() {
	c := &http.Client{}
	s.c = c
}
