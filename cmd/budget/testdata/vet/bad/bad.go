// Package bad holds one finding of each kind for the budget vet CLI test.
package bad

import (
	"context"
	"net/http"
	"time"
)

// Fetch derives a deadline from Background although the caller passed ctx.
func Fetch(ctx context.Context, u string) (*http.Response, error) {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(c, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

// Serve starts a server that waits forever for request headers.
func Serve(h http.Handler) error {
	return http.ListenAndServe("127.0.0.1:0", h)
}
