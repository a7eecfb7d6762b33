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
