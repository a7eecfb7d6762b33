package httpbudget

import (
	"bufio"
	"io"
	"net"
	"net/http"

	"github.com/timebudget/budget"
)

// answerWriter is the ResponseWriter a handler sees under a budget. It holds
// back the status line until the body starts, the handler flushes, or the
// handler returns, and it records whether anything reached net/http, so that
// the middleware can answer 504 for a handler that ran out of budget and
// wrote nothing. It buffers no body bytes: a Write goes straight through.
//
// It implements http.Flusher, http.Hijacker and io.ReaderFrom itself (to
// see flushes, hijacks and bodies) and Unwrap for http.ResponseController's
// other methods (deadlines, full duplex).
type answerWriter struct {
	http.ResponseWriter
	ledger *budget.Ledger // for Server-Timing; nil when off
	code   int            // the status the handler chose, not sent yet
	sent   bool           // the status line went to the underlying writer
}

// WriteHeader records the status; it is sent with the first byte of the body,
// a flush, or when the handler returns. Informational statuses (1xx but 101)
// go out at once, as net/http sends them.
func (a *answerWriter) WriteHeader(code int) {
	switch {
	case a.sent:
		a.ResponseWriter.WriteHeader(code) // superfluous: net/http logs it
	case code >= 100 && code < 200 && code != http.StatusSwitchingProtocols:
		a.ResponseWriter.WriteHeader(code)
	case a.code == 0:
		a.code = code
	}
}

// send sends the status line, once.
func (a *answerWriter) send() {
	if a.sent {
		return
	}
	a.sent = true
	if a.ledger != nil {
		if st := a.ledger.ServerTiming(); st != "" {
			a.Header().Set("Server-Timing", st)
		}
	}
	if a.code != 0 {
		a.ResponseWriter.WriteHeader(a.code)
	}
}

func (a *answerWriter) Write(p []byte) (int, error) {
	a.send()
	return a.ResponseWriter.Write(p)
}

// ReadFrom keeps net/http's sendfile path for io.Copy into the response.
func (a *answerWriter) ReadFrom(r io.Reader) (int64, error) {
	a.send()
	return io.Copy(a.ResponseWriter, r)
}

// Flush sends the status line and flushes, when the underlying writer can.
func (a *answerWriter) Flush() { _ = a.FlushError() }

// FlushError is Flush for http.ResponseController, reporting its error.
func (a *answerWriter) FlushError() error {
	a.send()
	return http.NewResponseController(a.ResponseWriter).Flush()
}

// Hijack hands the connection over; the middleware writes nothing after.
func (a *answerWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(a.ResponseWriter).Hijack()
	if err == nil {
		a.sent = true
	}
	return c, rw, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }
