package ollama

import (
	"context"
	"net/http"
	"sync/atomic"
)

// exchange records what the transport saw of one request. The api package hides the HTTP status of
// a streamed answer whose body is empty (Chat then returns nil without any chunk), so the status is
// taken from the transport instead.
type exchange struct {
	status atomic.Int32 // HTTP status of the response, 0 while no response headers arrived
}

func (e *exchange) Status() int { return int(e.status.Load()) }

type exchangeKey struct{}

func withExchange(ctx context.Context) (context.Context, *exchange) {
	ex := new(exchange)
	return context.WithValue(ctx, exchangeKey{}, ex), ex
}

// recordingTransport stores the response status in the request's exchange, if it has one.
type recordingTransport struct {
	base http.RoundTripper
}

func (t recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		if ex, ok := r.Context().Value(exchangeKey{}).(*exchange); ok {
			ex.status.Store(int32(resp.StatusCode))
		}
	}
	return resp, err
}

// httpClient returns the client the api package uses: the configured one (or a fresh one without
// timeouts or proxy) with its transport wrapped by recordingTransport.
func httpClient(configured *http.Client) *http.Client {
	var hc http.Client
	if configured != nil {
		hc = *configured
	}
	base := hc.Transport
	if base == nil {
		if configured != nil {
			base = http.DefaultTransport
		} else {
			t := http.DefaultTransport.(*http.Transport).Clone()
			// Ollama is local: never send the prompt through a proxy from the environment.
			t.Proxy = nil
			// No ResponseHeaderTimeout: headers arrive only once the model is loaded and the
			// prompt evaluated, which can take minutes. Cancellation is the caller's context.
			t.ResponseHeaderTimeout = 0
			base = t
		}
	}
	hc.Transport = recordingTransport{base: base}
	return &hc
}
