package ollama

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultHost is where Ollama listens unless OLLAMA_HOST says otherwise.
const DefaultHost = "http://127.0.0.1:11434"

// Config configures a Client.
type Config struct {
	// Host is the server address with OLLAMA_HOST semantics: empty means DefaultHost; "host",
	// "host:port", ":port", "http://host[:port][/prefix]" and "https://…" are accepted. A port left
	// out is 11434 without a scheme, 80 for http:// and 443 for https://, as in Ollama. The bind-all
	// addresses 0.0.0.0 and :: are replaced by the loopback address. The caller passes
	// os.Getenv("OLLAMA_HOST") when it wants the environment to count; New never reads it.
	Host string
	// Model is the model name as Ollama knows it ("qwen3:8b"). Info and Chat need it; ListModels
	// and Version do not.
	Model string
	// KeepAlive is how long the server keeps the model loaded after each request. Nil sends none:
	// the server's own keep-alive applies (OLLAMA_KEEP_ALIVE, 5 minutes unless set), and
	// KeepLoaded holds the model while a turn needs it; 0 unloads the model after every reply; a
	// negative value keeps it loaded until the server stops.
	KeepAlive *time.Duration
	// Retry is the policy for "server busy" (HTTP 503) answers.
	Retry RetryPolicy
	// HTTPClient, when set, carries the requests (tests pass httptest's client). Its Timeout must be
	// 0: loading a big model takes minutes before the first byte, and only the caller's context
	// cancels a request. Nil uses a client without any timeout that never goes through a proxy.
	HTTPClient *http.Client
}

// RetryPolicy is a capped exponential backoff for HTTP 503. The zero value is the default policy.
type RetryPolicy struct {
	// Attempts is the total number of tries; 0 means 4, 1 disables retrying.
	Attempts int
	// Initial is the wait before the first retry; 0 means 500ms. Each further wait doubles.
	Initial time.Duration
	// Max caps a single wait; 0 means 8s.
	Max time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 4
	}
	if p.Initial <= 0 {
		p.Initial = 500 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 8 * time.Second
	}
	if p.Max < p.Initial {
		p.Max = p.Initial
	}
	return p
}

// backoff is the wait before retry number n (1-based).
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.Initial
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// ParseHost turns an OLLAMA_HOST-style address into the server's base URL (see Config.Host).
func ParseHost(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = DefaultHost
	}
	scheme, rest, hasScheme := strings.Cut(s, "://")
	defaultPort := "11434"
	switch {
	case !hasScheme:
		scheme, rest = "http", s
	case scheme == "http":
		defaultPort = "80"
	case scheme == "https":
		defaultPort = "443"
	default:
		return nil, fmt.Errorf("ollama: host %q: scheme must be http or https", s)
	}
	hostport, path, _ := strings.Cut(rest, "/")
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		// No port given: "host", "[::1]", "::1" or "".
		host, port = strings.Trim(hostport, "[]"), defaultPort
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return nil, fmt.Errorf("ollama: host %q: invalid port %q", s, port)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	if strings.ContainsAny(host, " \t/?#@") {
		return nil, fmt.Errorf("ollama: host %q: invalid host name", s)
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}
	if path = strings.Trim(path, "/"); path != "" {
		u.Path = "/" + path
	}
	return u, nil
}
