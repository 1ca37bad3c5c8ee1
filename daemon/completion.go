package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"

	"github.com/agentd/agentd/rpc"
	"go.lsp.dev/protocol"
)

// Inline completion (textDocument/inlineCompletion, LSP 3.18): the text around the cursor, from
// the editor's buffer in the overlay, goes to the completion model as a fill-in-the-middle request
// (fim.go); no session is involved.
//
// Invariant: at most one generation runs per document. A newer request for the document, or
// $/cancelRequest, closes the running generation's HTTP request at once, and its request is
// answered -32800 (RequestCancelled).
//
// Invariant: chat turns keep priority on the model server. A completion waits while a session's
// model streams a reply, and one that is generating when a reply starts stops and answers no item.
//
// Invariant: a completion that cannot be had (Ollama down, the model missing or unable to fill in
// the middle) answers no item at once; the daemon logs why, once per cause.

// errSuperseded ends a generation whose document got a newer request.
var errSuperseded = errors.New("a newer completion request for the document superseded this one")

// errChatPriority ends a generation when a chat reply starts streaming.
var errChatPriority = errors.New("a chat reply started streaming")

// completions holds the running generation of each document.
type completions struct {
	mu      sync.Mutex
	running map[string]*generation // by canonical document path
	// logged is the last failure logged per model, so a server that is down is logged once.
	logged map[string]string
}

// generation is one running completion request.
type generation struct {
	arrival uint64 // rpc.Arrival of its request
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when it has ended (its HTTP request closed)
}

// begin makes the request that arrived at arrival the document's generation: a running one that
// arrived earlier is cancelled and waited for. It returns false when a newer request already holds
// the document. end must be called when the generation is over.
func (cs *completions) begin(ctx context.Context, path string, arrival uint64) (gctx context.Context, cancel context.CancelCauseFunc, end func(), ok bool) {
	gctx, cancel = context.WithCancelCause(ctx)
	g := &generation{arrival: arrival, cancel: cancel, done: make(chan struct{})}
	cs.mu.Lock()
	prev := cs.running[path]
	if prev != nil && prev.arrival > arrival {
		cs.mu.Unlock()
		cancel(nil)
		return nil, nil, nil, false
	}
	if cs.running == nil {
		cs.running = map[string]*generation{}
	}
	cs.running[path] = g
	cs.mu.Unlock()
	if prev != nil {
		// Cancelled, the previous generation ends at once: its HTTP request is closed.
		prev.cancel(errSuperseded)
		<-prev.done
	}
	return gctx, cancel, func() {
		cs.mu.Lock()
		if cs.running[path] == g {
			delete(cs.running, path)
		}
		cs.mu.Unlock()
		cancel(nil)
		close(g.done)
	}, true
}

// logFailure logs a completion failure, once per model and message.
func (cs *completions) logFailure(model string, err error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.logged == nil {
		cs.logged = map[string]string{}
	}
	if cs.logged[model] == err.Error() {
		return
	}
	cs.logged[model] = err.Error()
	slog.Warn("inline completion unavailable", "model", model, "err", err)
}

// completionModel is the connection's completion model and whether someone configured it.
func (c *client) completionModel() (model, host string, configured bool) {
	c.mu.Lock()
	model, host = c.init.CompletionModel, c.init.OllamaHost
	c.mu.Unlock()
	if model != "" {
		return model, host, true
	}
	model, configured = c.srv.rt.CompletionModel()
	return model, host, configured
}

func (c *client) inlineCompletion(ctx context.Context, params json.RawMessage) (any, error) {
	var p rpc.InlineCompletionParams
	if err := rpc.Decode(params, &p); err != nil {
		return nil, err
	}
	none := rpc.InlineCompletionList{Items: []rpc.InlineCompletionItem{}}
	path, ok := c.docPath(string(p.TextDocument.URI))
	if !ok {
		return none, nil
	}
	doc, ok := c.srv.overlay.getFrom(path, c)
	if !ok {
		return none, nil
	}
	cursor, err := offsetOf(doc.text, p.Position)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	}
	req := fimRequest(doc.text, cursor)

	gctx, cancel, end, ok := c.srv.completions.begin(ctx, path, rpc.Arrival(ctx))
	if !ok {
		return nil, rpc.Errorf(rpc.CodeRequestCancelled, "%v", errSuperseded)
	}
	defer end()
	// Chat first: wait while a reply streams, and give way if one starts.
	busy, changed := c.srv.rt.ChatBusy()
	for busy {
		select {
		case <-gctx.Done():
			return nil, cancelled(gctx)
		case <-changed:
		}
		busy, changed = c.srv.rt.ChatBusy()
	}
	over := make(chan struct{})
	defer close(over)
	go func() {
		select {
		case <-changed:
			cancel(errChatPriority)
		case <-over:
		}
	}()

	model, host, _ := c.completionModel()
	inf, err := c.srv.rt.Infiller(host, model)
	if err != nil {
		c.srv.completions.logFailure(model, err)
		return none, nil
	}
	resp, err := inf.Infill(gctx, req)
	switch {
	case err == nil:
	case gctx.Err() != nil && context.Cause(gctx) == errChatPriority && ctx.Err() == nil:
		return none, nil
	case gctx.Err() != nil:
		return nil, cancelled(gctx)
	default:
		c.srv.completions.logFailure(model, err)
		return none, nil
	}
	text := trimDuplicate(resp.Text, req.Suffix)
	if text == "" {
		return none, nil
	}
	return rpc.InlineCompletionList{Items: []rpc.InlineCompletionItem{{InsertText: text,
		Range: protocol.Range{Start: p.Position, End: p.Position}}}}, nil
}

// cancelled is the answer to a completion request whose generation was stopped: -32800.
func cancelled(gctx context.Context) error {
	cause := context.Cause(gctx)
	if cause == nil || errors.Is(cause, context.Canceled) {
		return rpc.Errorf(rpc.CodeRequestCancelled, "request cancelled")
	}
	return rpc.Errorf(rpc.CodeRequestCancelled, "%v", cause)
}
