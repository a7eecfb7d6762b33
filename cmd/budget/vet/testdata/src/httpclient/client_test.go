package httpclient

import (
	"net/http"
	"testing"
)

// Tests talk to httptest servers on loopback; they are not reported.
func TestGet(t *testing.T) {
	resp, err := http.Get("http://127.0.0.1:1")
	if err == nil {
		resp.Body.Close()
	}
	_ = &http.Client{}
}
