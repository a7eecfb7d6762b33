package httpserver

import (
	"net/http"
	"testing"
)

func TestServer(t *testing.T) {
	_ = &http.Server{}
}
