package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
)

// gatedConn is an editor's end of the pipe that stops reading when told: after stop, at most the
// read already in progress completes, then nothing more is read until the pipe closes.
type gatedConn struct {
	net.Conn
	stop, closed chan struct{}
	stopOnce     sync.Once
	closeOnce    sync.Once
}

func newGated(c net.Conn) *gatedConn {
	return &gatedConn{Conn: c, stop: make(chan struct{}), closed: make(chan struct{})}
}

func (g *gatedConn) Read(p []byte) (int, error) {
	select {
	case <-g.stop:
		<-g.closed
		return 0, net.ErrClosed
	default:
		return g.Conn.Read(p)
	}
}

func (g *gatedConn) stopReading() { g.stopOnce.Do(func() { close(g.stop) }) }

func (g *gatedConn) Close() error {
	g.closeOnce.Do(func() { close(g.closed) })
	return g.Conn.Close()
}

type nopHandler struct{}

func (nopHandler) Call(context.Context, string, json.RawMessage) (any, error) {
	return nil, rpc.ErrMethodNotFound
}
func (nopHandler) Notify(context.Context, string, json.RawMessage) {}

// textRecorder concatenates the text deltas it receives.
type textRecorder struct {
	mu   sync.Mutex
	text strings.Builder
	seqs []int64
	got  chan struct{}
}

func (r *textRecorder) Call(context.Context, string, json.RawMessage) (any, error) {
	return nil, rpc.ErrMethodNotFound
}

func (r *textRecorder) Notify(_ context.Context, method string, params json.RawMessage) {
	var u rpc.SessionUpdateParams
	if method != rpc.MethodSessionUpdate || json.Unmarshal(params, &u) != nil {
		return
	}
	r.mu.Lock()
	r.text.WriteString(u.Update.Text)
	r.seqs = append(r.seqs, u.Seq)
	r.mu.Unlock()
	select {
	case r.got <- struct{}{}:
	default:
	}
}

// An outbox whose editor does not read merges thousands of deltas in linear work, and delivers
// them whole and in order once the editor reads again.
func TestOutboxCoalescesInLinearWork(t *testing.T) {
	server, editor := net.Pipe() // nothing reads editor until the end
	c := &client{attached: map[string]*liveSession{}}
	c.conn = rpc.NewConn(server)
	c.conn.Go(nopHandler{})
	t.Cleanup(func() { editor.Close(); c.conn.Abort() })
	o := newOutbox(c)
	t.Cleanup(o.close)

	const n = 20000
	var want strings.Builder
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		tok := fmt.Sprintf("tok%05d ", i)
		want.WriteString(tok)
		o.push(rpc.SessionUpdateParams{SessionID: "s", TurnID: "t1", Update: rpc.Update{Type: rpc.UpdateTextDelta, Text: tok}})
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// 20,000 deltas make 180 kB of text; appending to one string would allocate ~1.8 GB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("queueing %d deltas (%d bytes of text) for a stuck editor allocated %d MiB", n, want.Len(), alloc>>20)
	}
	o.mu.Lock()
	queued := len(o.items)
	o.mu.Unlock()
	if queued > 2 {
		t.Errorf("%d items queued for a stuck editor, want the deltas merged into at most 2", queued)
	}

	// The editor reads again: everything arrives, in order, numbered without gaps.
	rec := &textRecorder{got: make(chan struct{}, 1)}
	reader := rpc.NewConn(editor)
	reader.Go(rec)
	t.Cleanup(func() { reader.Abort() })
	deadline := time.After(20 * time.Second)
	for {
		rec.mu.Lock()
		got := rec.text.Len()
		rec.mu.Unlock()
		if got >= want.Len() {
			break
		}
		select {
		case <-rec.got:
		case <-deadline:
			t.Fatalf("the editor received %d of %d bytes of deltas", got, want.Len())
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.text.String() != want.String() {
		t.Fatalf("deltas arrived out of order or altered")
	}
	for i, s := range rec.seqs {
		if s != int64(i+1) {
			t.Fatalf("seq %d at position %d", s, i)
		}
	}
}

// One editor never reads, one does: the turns complete, the reading editor gets every token in
// order, and the stuck editor is detached once it is past the queue's bound. The bound is set
// between what one turn queues (the most a reading editor can be behind, however slowly it
// reads) and what two turns queue (what the stuck editor holds during the second turn).
func TestStuckEditorIsDetachedAndTheTurnGoesOn(t *testing.T) {
	const tokens = 3000 // few enough that the session does not compact between the turns
	text := func(turn int) string {
		var b strings.Builder
		for i := range tokens {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "t%dw%05d", turn, i)
		}
		return b.String()
	}
	// A turn queues its text twice (the deltas, then messageCompleted) plus a few small updates.
	defer func(old int) { maxOutboxBytes = old }(maxOutboxBytes)
	maxOutboxBytes = 3 * len(text(1))

	env := newEnv(t, map[string]string{"a.txt": "a\n"})
	reading := env.editor(true)
	session := reading.newSession()

	// The stuck editor: initialized and attached, then it stops reading.
	env.srv.mu.Lock()
	known := map[*client]bool{}
	for c := range env.srv.clients {
		known[c] = true
	}
	env.srv.mu.Unlock()
	server, editor := net.Pipe()
	served := make(chan struct{})
	go func() { env.srv.ServeConn(server); close(served) }()
	gate := newGated(editor)
	stuck := rpc.NewConn(gate)
	stuck.Go(nopHandler{})
	t.Cleanup(func() { gate.Close(); stuck.Abort() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var initRes json.RawMessage
	if err := stuck.Call(ctx, "initialize", map[string]any{"processId": nil, "rootUri": fileURI(env.ws), "capabilities": map[string]any{},
		"workspaceFolders":      []map[string]any{{"uri": fileURI(env.ws), "name": "ws"}},
		"initializationOptions": rpc.InitializationOptions{ProtocolVersion: 1}}, &initRes); err != nil {
		t.Fatal(err)
	}
	stuck.Notify(ctx, "initialized", map[string]any{})
	var att rpc.SessionAttachResult
	if err := stuck.Call(ctx, rpc.MethodSessionAttach, rpc.SessionAttachParams{SessionID: session}, &att); err != nil {
		t.Fatal(err)
	}
	gate.stopReading()
	var stuckClient *client
	env.srv.mu.Lock()
	for c := range env.srv.clients {
		if !known[c] {
			stuckClient = c
		}
	}
	env.srv.mu.Unlock()
	if stuckClient == nil {
		t.Fatal("the stuck editor's connection is not known to the server")
	}

	for turnNo := 1; turnNo <= 2; turnNo++ {
		want := text(turnNo)
		env.ollama.Enqueue(ollamatest.Text(want))
		turn := reading.prompt(session, "stream a lot")
		var end rpc.SessionUpdateParams
		json.Unmarshal(reading.waitFor("end of "+turn, func(n note) bool {
			var u rpc.SessionUpdateParams
			return n.method == rpc.MethodSessionUpdate && json.Unmarshal(n.params, &u) == nil && u.TurnID == turn &&
				(u.Update.Type == rpc.UpdateTurnCompleted || u.Update.Type == rpc.UpdateTurnFailed)
		}), &end)
		if end.Update.Type != rpc.UpdateTurnCompleted {
			t.Fatalf("turn %s ended with %+v (error %+v)", turn, end.Update, end.Update.Error)
		}
		var got strings.Builder
		reading.mu.Lock()
		for _, n := range reading.notes {
			var u rpc.SessionUpdateParams
			if n.method == rpc.MethodSessionUpdate && json.Unmarshal(n.params, &u) == nil && u.TurnID == turn && u.Update.Type == rpc.UpdateTextDelta {
				got.WriteString(u.Update.Text)
			}
		}
		reading.mu.Unlock()
		if got.String() != want {
			t.Fatalf("turn %s: the reading editor got %d bytes of text deltas, want all %d in order", turn, got.Len(), len(want))
		}
		select {
		case <-stuckClient.out.detached:
			if turnNo == 1 {
				t.Fatal("the stuck editor was detached during the first turn, before it was past the bound")
			}
		default:
		}
	}

	select {
	case <-stuckClient.out.detached:
	case <-time.After(20 * time.Second):
		t.Fatal("the stuck editor was not detached")
	}
	select {
	case <-served:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not finish with the stuck editor's connection after detaching it")
	}
	select {
	case <-reading.conn.Done():
		t.Fatal("the reading editor was disconnected")
	default:
	}
	var list rpc.SessionListResult
	reading.mustCall(rpc.MethodSessionList, map[string]any{}, &list)
	for _, s := range list.Sessions {
		if s.SessionID == session && s.Attached != 1 {
			t.Errorf("session lists %d attached editors after the stuck one was detached, want 1", s.Attached)
		}
	}
}

// BenchmarkOutboxStuckEditor queues one turn's 50,000 text deltas for an editor that does not
// read (the figure in the report: bytes allocated and time per turn).
func BenchmarkOutboxStuckEditor(b *testing.B) {
	toks := make([]string, 50000)
	for i := range toks {
		toks[i] = fmt.Sprintf(" w%05d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		server, editor := net.Pipe()
		c := &client{attached: map[string]*liveSession{}}
		c.conn = rpc.NewConn(server)
		c.conn.Go(nopHandler{})
		o := newOutbox(c)
		for _, tok := range toks {
			o.push(rpc.SessionUpdateParams{SessionID: "s", TurnID: "t1", Update: rpc.Update{Type: rpc.UpdateTextDelta, Text: tok}})
		}
		o.close()
		editor.Close()
		c.conn.Abort()
	}
}
