// Package clean has nothing for budget vet to report.
package clean

import (
	"context"
	"net/http"
	"time"
)

// Fetch spends the caller's deadline.
func Fetch(ctx context.Context, u string) (*http.Response, error) {
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(c, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

// Server bounds the time to read request headers.
func Server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
}
