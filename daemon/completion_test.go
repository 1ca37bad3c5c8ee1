package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/agentd/agentd/rpc"
	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

const coderModel = "qwen2.5-coder:1.5b-base"

// completionEnv is a daemon whose fake Ollama knows the chat model and the completion model.
func completionEnv(t testing.TB, files map[string]string, generates ...ollamatest.GenerateTurn) *testEnv {
	t.Helper()
	env := newEnv(t, files)
	env.ollama.AddModel(ollamatest.Model{Name: coderModel, Capabilities: []string{"completion", "insert"}, Architecture: "qwen2"})
	env.ollama.AddGenerates(generates...)
	return env
}

// complete sends textDocument/inlineCompletion at line:char.
func (ed *fakeEditor) complete(ctx context.Context, docURI string, line, char uint32) (rpc.InlineCompletionList, error) {
	var res rpc.InlineCompletionList
	err := ed.conn.Call(ctx, rpc.MethodInlineCompletion, rpc.InlineCompletionParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: uri.URI(docURI)},
		Position:     protocol.Position{Line: line, Character: char},
		Context:      rpc.InlineCompletionContext{TriggerKind: 2},
	}, &res)
	return res, err
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func isCancelled(err error) bool {
	var je *jsonrpc2.Error
	return errors.As(err, &je) && je.Code == rpc.CodeRequestCancelled
}

// TestInlineCompletionIsAdvertised: initialize says the daemon serves inline completion, and with
// which model; the default is not "configured", so the editors leave completion off.
func TestInlineCompletionIsAdvertised(t *testing.T) {
	env := completionEnv(t, nil)
	ed := env.editor(true)
	var init struct {
		Capabilities struct {
			InlineCompletionProvider bool `json:"inlineCompletionProvider"`
			Experimental             struct {
				Agentd rpc.ServerInfo `json:"agentd"`
			} `json:"experimental"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(ed.initResult, &init); err != nil {
		t.Fatal(err)
	}
	info := init.Capabilities.Experimental.Agentd
	if !init.Capabilities.InlineCompletionProvider || info.CompletionModel != harness.DefaultCompletionModel || info.CompletionConfigured {
		t.Errorf("initialize result: %s", ed.initResult)
	}
	// The editor's own setting wins, and counts as configured.
	ed2 := env.editorWith(rpc.InitializationOptions{ProtocolVersion: 1, CompletionModel: "starcoder2:3b"})
	json.Unmarshal(ed2.initResult, &init)
	if info := init.Capabilities.Experimental.Agentd; info.CompletionModel != "starcoder2:3b" || !info.CompletionConfigured {
		t.Errorf("initialize result with the editor's model: %s", ed2.initResult)
	}
	var st rpc.DaemonStatusResult
	ed2.mustCall(rpc.MethodDaemonStatus, struct{}{}, &st)
	if st.CompletionModel != "starcoder2:3b" {
		t.Errorf("daemon/status: %+v", st)
	}
}

// TestInlineCompletionReadsTheBufferNotTheDisk: the prompt and suffix are the editor's text after
// didChange, split at the cursor; no session is created and no chat request is sent.
func TestInlineCompletionReadsTheBufferNotTheDisk(t *testing.T) {
	env := completionEnv(t, map[string]string{"add.go": "package add // on disk\n"},
		ollamatest.GenerateTurn{Reply: ollamatest.Text("a + b")})
	ed := env.editor(true)
	uri := ed.open("add.go", "package add\n")
	ed.sendChange(uri, 2, "package add\n\nfunc Add(a, b int) int {\n\treturn \n}\n")
	res, err := ed.complete(waitCtx(t), uri, 3, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := rpc.InlineCompletionList{Items: []rpc.InlineCompletionItem{{InsertText: "a + b",
		Range: protocol.Range{Start: protocol.Position{Line: 3, Character: 8}, End: protocol.Position{Line: 3, Character: 8}}}}}
	if fmt.Sprint(res) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", res, want)
	}
	gens := env.ollama.Generates()
	if len(gens) != 1 {
		t.Fatalf("%d generate requests", len(gens))
	}
	g := gens[0]
	if g.Request.Prompt != "package add\n\nfunc Add(a, b int) int {\n\treturn " || g.Request.Suffix != "\n}\n" || g.Request.Model != coderModel {
		t.Errorf("generate request: %s", g.Body)
	}
	if g.Option("num_ctx") != fimNumCtx || g.Option("num_predict") != fimBlockTokens || g.Request.KeepAlive == nil || g.Request.KeepAlive.Duration != harness.CompletionKeepAlive {
		t.Errorf("options: %s", g.Body)
	}
	for _, c := range env.ollama.Calls() {
		if c == "POST /api/chat" {
			t.Errorf("a completion sent a chat request: %v", env.ollama.Calls())
		}
	}
	if n := env.srv.Sessions(); n != 0 {
		t.Errorf("%d sessions after a completion", n)
	}
}

// TestInlineCompletionStopsAtTheLineOrTheBlock: mid-line the completion ends at the line's end and
// is short; at the end of a line it may run to a blank line.
func TestInlineCompletionStopsAtTheLineOrTheBlock(t *testing.T) {
	mid := fimRequest("f(a, )\n", 5)
	if fmt.Sprint(mid.Stop) != "[\n]" || mid.NumPredict != fimLineTokens {
		t.Errorf("mid-line: %+v", mid)
	}
	eol := fimRequest("func f() {\n\t\n}\n", 12)
	if fmt.Sprint(eol.Stop) != "[\n\n]" || eol.NumPredict != fimBlockTokens {
		t.Errorf("end of line: %+v", eol)
	}
}

// TestTrimDuplicate: text the model repeats from after the cursor is cut off its end.
func TestTrimDuplicate(t *testing.T) {
	for _, tc := range []struct{ completion, suffix, want string }{
		{"b)", ")\n", "b"},
		{"b) {", ") {\n\tx\n", "b"},
		{"x := 1\n\treturn x", "\n\treturn x\n}\n", "x := 1"},
		{"x := 1\n\treturn x\n}", "\n\treturn x\n}\n", "x := 1"},
		{"return x  \n", "\n}\n", "return x  \n"}, // nothing repeated: untouched
		{")", ")\n", ""},
		{"a", "ab\n", "a"}, // part of a line does not count
		{"foo", "", "foo"},
	} {
		if got := trimDuplicate(tc.completion, tc.suffix); got != tc.want {
			t.Errorf("trimDuplicate(%q, %q) = %q, want %q", tc.completion, tc.suffix, got, tc.want)
		}
	}
}

// TestInlineCompletionTrimsWhatFollowsTheCursor: through the daemon, a completion that closes
// the bracket already there is answered without it, and one that only repeats gives no item.
func TestInlineCompletionTrimsWhatFollowsTheCursor(t *testing.T) {
	env := completionEnv(t, nil,
		ollamatest.GenerateTurn{Reply: ollamatest.Text("b)")},
		ollamatest.GenerateTurn{Reply: ollamatest.Text(")")})
	ed := env.editor(true)
	uri := ed.open("f.go", "x := f(a, )\n")
	for _, want := range []string{"b", ""} {
		res, err := ed.complete(waitCtx(t), uri, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(res.Items) > 0 {
			got = res.Items[0].InsertText
		}
		if got != want || (want == "" && res.Items == nil) {
			t.Errorf("got %+v, want %q", res, want)
		}
	}
}

// TestFIMWindowIsStableBetweenKeystrokes: typing at the end of a long file keeps the prompt's
// start where it was, so the model's prompt cache holds everything up to the cursor; the windows
// stay within their token budgets.
func TestFIMWindowIsStableBetweenKeystrokes(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 40_000; i++ {
		fmt.Fprintf(&b, "func f%d(x int) int { return x * %d }\n", i, i)
	}
	head, tail := b.String()[:30_000], b.String()[30_000:]
	head = head[:strings.LastIndexByte(head, '\n')+1]
	typed := "func next() int { return 4"
	var starts []string
	for i := 1; i <= len(typed); i++ {
		text := head + typed[:i] + "\n" + tail
		req := fimRequest(text, len(head)+i)
		if !strings.HasSuffix(req.Prompt, typed[:i]) {
			t.Fatalf("prompt does not end at the cursor: …%q", req.Prompt[len(req.Prompt)-40:])
		}
		if len(req.Prompt) > fimPrefixBytes || len(req.Suffix) > fimSuffixBytes {
			t.Fatalf("windows of %d and %d bytes", len(req.Prompt), len(req.Suffix))
		}
		if !strings.HasPrefix(req.Prompt, "func ") || !strings.HasSuffix(req.Suffix, "\n") {
			t.Errorf("windows do not hold whole lines: %q … %q", req.Prompt[:20], req.Suffix[len(req.Suffix)-20:])
		}
		starts = append(starts, req.Prompt[:40])
	}
	for _, s := range starts[1:] {
		if s != starts[0] {
			t.Fatalf("the prompt's start moved while typing: %q then %q", starts[0], s)
		}
	}

	// Through the daemon: each keystroke's request finds the previous prompt in the cache.
	env := completionEnv(t, nil, ollamatest.GenerateTurn{Repeat: true, Reply: ollamatest.Text("0 }")})
	ed := env.editor(true)
	uri := ed.open("big.go", head+"\n"+tail)
	line := uint32(strings.Count(head, "\n"))
	for i := 1; i <= 3; i++ {
		ed.sendChange(uri, int32(i+1), head+typed[:i]+"\n"+tail)
		if _, err := ed.complete(waitCtx(t), uri, line, uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	gens := env.ollama.Generates()
	for i, g := range gens[1:] {
		// The cache holds the template's opening and the whole previous prompt (four bytes a
		// token in the fake's estimate).
		if prev := len(gens[i].Request.Prompt) / 4; g.Load != "" || g.CachedTokens < prev {
			t.Errorf("request %d: load %q, %d tokens cached, the previous prompt had %d", i+2, g.Load, g.CachedTokens, prev)
		}
	}
}

// TestNewerRequestCancelsTheRunningGeneration: a second request for the document closes the
// first one's HTTP request, which is answered -32800; the second starts only after the first has
// ended, and is answered.
func TestNewerRequestCancelsTheRunningGeneration(t *testing.T) {
	env := completionEnv(t, nil,
		ollamatest.GenerateTurn{Reply: ollamatest.Reply{Text: "loop loop loop", Hang: true}},
		ollamatest.GenerateTurn{Reply: ollamatest.Text("b")})
	ed := env.editor(true)
	uri := ed.open("f.go", "a\n")
	first := make(chan error, 1)
	go func() {
		_, err := ed.complete(waitCtx(t), uri, 0, 1)
		first <- err
	}()
	if _, err := env.ollama.WaitGenerates(waitCtx(t), 1, false); err != nil {
		t.Fatal(err)
	}
	ed.sendChange(uri, 2, "ab\n")
	res, err := ed.complete(waitCtx(t), uri, 0, 2)
	if err != nil || len(res.Items) != 1 || res.Items[0].InsertText != "b" {
		t.Fatalf("second request: %+v, %v", res, err)
	}
	if err := <-first; !isCancelled(err) {
		t.Errorf("first request: %v, want -32800", err)
	}
	gens, err := env.ollama.WaitGenerates(waitCtx(t), 2, true)
	if err != nil || !gens[0].ClientGone {
		t.Errorf("the first generation was not closed: %+v, %v", gens, err)
	}
}

// TestOneGenerationPerDocument: a request for a document whose generation runs cancels it and
// starts only once it has ended; an older request than the running one does not start at all.
func TestOneGenerationPerDocument(t *testing.T) {
	var cs completions
	ctxA, cancelA, endA, ok := cs.begin(context.Background(), "/doc", 1)
	if !ok {
		t.Fatal("first request refused")
	}
	_ = cancelA
	started := make(chan struct{})
	go func() {
		_, _, endB, ok := cs.begin(context.Background(), "/doc", 3)
		if !ok {
			t.Error("newer request refused")
		}
		close(started)
		<-ctxA.Done()
		endB()
	}()
	<-ctxA.Done()
	if cause := context.Cause(ctxA); cause != errSuperseded {
		t.Errorf("first generation ended by %v", cause)
	}
	select {
	case <-started:
		t.Fatal("the newer generation started before the first one ended")
	default:
	}
	if _, _, _, ok := cs.begin(context.Background(), "/doc", 2); ok {
		t.Error("a request older than the running one started")
	}
	endA()
	<-started
	if _, _, end, ok := cs.begin(context.Background(), "/other", 2); !ok {
		t.Error("another document waits for this one")
	} else {
		end()
	}
}

// TestCancelRequestClosesTheGeneration: $/cancelRequest closes the HTTP request and the request is
// answered -32800; the next request is served.
func TestCancelRequestClosesTheGeneration(t *testing.T) {
	env := completionEnv(t, nil,
		ollamatest.GenerateTurn{Reply: ollamatest.Reply{Text: "loop", Hang: true}},
		ollamatest.GenerateTurn{Reply: ollamatest.Text("x")})
	ed := env.editor(true)
	uri := ed.open("f.go", "a\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ed.complete(ctx, uri, 0, 1)
		done <- err
	}()
	if _, err := env.ollama.WaitGenerates(waitCtx(t), 1, false); err != nil {
		t.Fatal(err)
	}
	cancel() // the client sends $/cancelRequest
	gens, err := env.ollama.WaitGenerates(waitCtx(t), 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if !gens[0].ClientGone {
		t.Errorf("the generation was not closed: %+v", gens[0])
	}
	<-done
	// The daemon's answer to the cancelled request, read by a raw call: the client library
	// returns its own error on cancel, so ask again and check the daemon still serves.
	if res, err := ed.complete(waitCtx(t), uri, 0, 1); err != nil || len(res.Items) != 1 {
		t.Errorf("after a cancel: %+v, %v", res, err)
	}
}

// TestOllamaDownAnswersNoItem: with the server gone, a completion answers no item (at once: the
// connection is refused), the daemon keeps serving, and no session is created.
func TestOllamaDownAnswersNoItem(t *testing.T) {
	env := completionEnv(t, nil)
	env.ollama.Close()
	ed := env.editor(true)
	uri := ed.open("f.go", "a\n")
	for range 2 {
		res, err := ed.complete(waitCtx(t), uri, 0, 1)
		if err != nil || res.Items == nil || len(res.Items) != 0 {
			t.Fatalf("got %+v, %v; want no item", res, err)
		}
	}
	var st rpc.DaemonStatusResult
	ed.mustCall(rpc.MethodDaemonStatus, struct{}{}, &st)
	if st.Ollama == "ok" || env.srv.Sessions() != 0 {
		t.Errorf("status %+v, %d sessions", st, env.srv.Sessions())
	}
}

// TestChatKeepsPriority: a chat reply that starts while a completion generates stops the
// completion (its request closed, no item); a completion asked while a reply streams waits for
// the reply's end.
func TestChatKeepsPriority(t *testing.T) {
	env := completionEnv(t, nil,
		ollamatest.GenerateTurn{Reply: ollamatest.Reply{Text: "slow", Hang: true}},
		ollamatest.GenerateTurn{Reply: ollamatest.Text("b")})
	ed := env.editor(true)
	uri := ed.open("f.go", "a\n")
	first := make(chan rpc.InlineCompletionList, 1)
	go func() {
		res, err := ed.complete(waitCtx(t), uri, 0, 1)
		if err != nil {
			t.Errorf("completion during chat: %v", err)
		}
		first <- res
	}()
	if _, err := env.ollama.WaitGenerates(waitCtx(t), 1, false); err != nil {
		t.Fatal(err)
	}
	env.ollama.Enqueue(ollamatest.Reply{Text: "chatting slowly", Hang: true})
	s := ed.newSession()
	ed.prompt(s, "hello")
	if res := <-first; res.Items == nil || len(res.Items) != 0 {
		t.Errorf("the completion a chat reply interrupted answered %+v, want no item", res)
	}
	if gens, err := env.ollama.WaitGenerates(waitCtx(t), 1, true); err != nil || !gens[0].ClientGone {
		t.Errorf("the interrupted generation was not closed: %+v, %v", gens, err)
	}
	ed.waitFor("text", func(n note) bool { return strings.Contains(string(n.params), `"textDelta"`) })
	second := make(chan rpc.InlineCompletionList, 1)
	go func() {
		res, _ := ed.complete(waitCtx(t), uri, 0, 1)
		second <- res
	}()
	// The daemon has read the completion request once it answers a later one (wire order); its
	// generation must not start while the reply streams.
	var st rpc.DaemonStatusResult
	ed.mustCall(rpc.MethodDaemonStatus, struct{}{}, &st)
	if n := len(env.ollama.Generates()); n != 1 {
		t.Errorf("a completion generated while a chat reply streamed (%d generate requests)", n)
	}
	ed.mustCall(rpc.MethodSessionCancel, rpc.SessionCancelParams{SessionID: s}, &rpc.SessionCancelResult{})
	if res := <-second; len(res.Items) != 1 || res.Items[0].InsertText != "b" {
		t.Errorf("the completion after the reply: %+v", res)
	}
}

// TestCompletionOutsideTheWorkspaceAnswersNoItem: a document the daemon does not hold gives no
// item and reads nothing from disk.
func TestCompletionOutsideTheWorkspaceAnswersNoItem(t *testing.T) {
	env := completionEnv(t, nil)
	ed := env.editor(true)
	res, err := ed.complete(waitCtx(t), fileURI(filepath.Join(t.TempDir(), "x.go")), 0, 0)
	if err != nil || res.Items == nil || len(res.Items) != 0 || len(env.ollama.Generates()) != 0 {
		t.Errorf("got %+v, %v", res, err)
	}
}
