package ollama

import (
	"context"
	"log/slog"
	"time"

	"github.com/ollama/ollama/api"
)

// Keeping the model loaded while a turn needs it, and only then.
//
// Ollama unloads a model once it has been idle for its keep-alive: the one a request sent, or the
// server's own (OLLAMA_KEEP_ALIVE, 5 minutes unless set) when none was — and a request without
// keep_alive leaves a loaded model's duration as it was. A turn can leave the model idle for
// longer than that (the user reads a diff, a test suite runs), and the reload that follows costs
// seconds to minutes plus the whole prompt's evaluation. So while a turn runs the harness holds a
// lease (KeepLoaded): shortly before /api/ps says the model expires, the client sends a load
// request — a chat without messages — with the runner options of its last chat request (num_ctx
// and shift: other runner options make Ollama reload the model, the very thing to avoid) and no
// keep_alive, so the server's duration stays in force. When the turn ends nothing is sent: the
// model stays for the server's own keep-alive after the last request, loaded with the options the
// next session sends too, so that session — in any workspace — finds it with its prompt cache.

// lease is the client's side of KeepLoaded, guarded by Client.mu.
type lease struct {
	numCtx  int           // num_ctx of the last chat request; 0 before the first
	flying  int           // chat requests in flight
	settled chan struct{} // closed and forgotten when a chat request ends
}

// chatStarted and chatEnded bracket every chat request.
func (c *Client) chatStarted(numCtx int) {
	c.mu.Lock()
	c.lease.numCtx = numCtx
	c.lease.flying++
	c.mu.Unlock()
}

func (c *Client) chatEnded() {
	c.mu.Lock()
	c.lease.flying--
	if c.lease.settled != nil {
		close(c.lease.settled)
		c.lease.settled = nil
	}
	c.mu.Unlock()
}

// leaseState returns the num_ctx to renew with (0: no request yet), whether a chat request is in
// flight, and a channel closed when the next one ends.
func (c *Client) leaseState() (numCtx int, flying bool, next <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lease.settled == nil {
		c.lease.settled = make(chan struct{})
	}
	return c.lease.numCtx, c.lease.flying > 0, c.lease.settled
}

// KeepLoaded keeps the model loaded until ctx ends (see the comment at the top of this file) and
// then returns; the harness runs it for the length of each turn. With an explicit keep-alive
// (Config.KeepAlive) it returns at once: every request carries the user's choice. It never loads
// a model that is not loaded, never changes its runner options, and sends nothing once ctx ends.
func (c *Client) KeepLoaded(ctx context.Context) {
	if c.keepAlive != nil || c.model == "" {
		return
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		numCtx, flying, next := c.leaseState()
		var renew <-chan time.Time
		if numCtx > 0 && !flying {
			if left, ok := c.expiresIn(ctx); ok {
				if timer != nil {
					timer.Stop()
				}
				timer = time.NewTimer(left / 2)
				renew = timer.C
			}
		}
		// Without a renewal time (no request yet, one in flight, the model not loaded, the server
		// unreachable) the next chat request's end is the next moment to look again.
		select {
		case <-ctx.Done():
			return
		case <-next:
			continue
		case <-renew:
		}
		if numCtx, flying, _ = c.leaseState(); flying {
			continue
		}
		if err := c.renew(ctx, numCtx); err != nil && ctx.Err() == nil {
			slog.Debug("keeping the model loaded", "model", c.model, "err", err)
		}
	}
}

// expiresIn reads /api/ps: how long until the model unloads, and false when it is not loaded (or
// the server cannot say).
func (c *Client) expiresIn(ctx context.Context) (time.Duration, bool) {
	running, err := c.api.ListRunning(ctx)
	if err != nil {
		return 0, false
	}
	for _, m := range running.Models {
		if sameModel(m.Name, c.model) || sameModel(m.Model, c.model) {
			if left := time.Until(m.ExpiresAt); left > 0 {
				return left, true
			}
		}
	}
	return 0, false
}

// renew sends a load request with the runner options of the last chat request and no keep_alive.
func (c *Client) renew(ctx context.Context, numCtx int) error {
	no := false
	req := &api.ChatRequest{
		Model:    c.model,
		Messages: []api.Message{},
		Options:  map[string]any{"num_ctx": numCtx},
		Shift:    &no,
	}
	ctx, ex := withExchange(ctx)
	if err := c.api.Chat(ctx, req, func(api.ChatResponse) error { return nil }); err != nil {
		return c.fail(ctx, err, ex.Status())
	}
	return nil
}
