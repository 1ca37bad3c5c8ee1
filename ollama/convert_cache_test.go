package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd/agentd/agent"
	"github.com/ollama/ollama/api"
)

// argumentVariants are the shapes of arguments the adapter meets: objects in the model's key
// order, code with < > &, long numbers, a JSON string holding an object, malformed calls.
var argumentVariants = []string{
	`{"path":"a.go","old_string":"return 1","new_string":"return 2"}`,
	`{"z":1,"a":2,"m":{"y":[1,2,{"b":true,"a":null}],"x":"é\u2028"}}`,
	`{"code":"if a < b && c > d { x := <-ch }"}`,
	`{"n":12345678901234567890123,"f":1.50,"e":1e400}`,
	`"{\"path\":\"wrapped.go\",\"limit\":10}"`,
	`  {"padded":true}  `,
	`not json`,
	`[1,2,3]`,
	`{"truncated":`,
	``,
	`"just a string"`,
}

// longHistory is a session with n past tool calls (each with its result) after a prompt.
func longHistory(n int) []agent.Message {
	msgs := []agent.Message{{Role: agent.RoleSystem, Content: "system"}, {Role: agent.RoleUser, Content: "go"}}
	for i := range n {
		args := argumentVariants[i%len(argumentVariants)]
		if i%3 == 0 {
			args = fmt.Sprintf(`{"path":"f%d.go","old_string":"return %d","new_string":"return %d","note":%q}`, i, i, i+1, strings.Repeat("x", i))
		}
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			agent.Message{Role: agent.RoleAssistant, Thinking: "t", ToolCalls: []agent.ToolCall{{ID: id, Name: "edit", Arguments: json.RawMessage(args)}}},
			agent.Message{Role: agent.RoleTool, ToolCallID: id, ToolName: "edit", Content: fmt.Sprintf("edited %d", i)})
	}
	return msgs
}

func wireBytes(t testing.TB, msgs []api.Message) []byte {
	t.Helper()
	b, err := json.Marshal(&api.ChatRequest{Model: "m", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The cached conversion sends the bytes of the uncached one: on a growing history, after a
// compaction that replaces the history, and when a position holds a different call than before.
func TestArgsCacheSendsTheUncachedBytes(t *testing.T) {
	var c argsCache
	check := func(what string, msgs []agent.Message) {
		t.Helper()
		want := wireBytes(t, toAPIMessages(msgs, nil))
		for round := range 2 { // a miss, then (all) hits
			if got := wireBytes(t, toAPIMessages(msgs, &c)); !bytes.Equal(got, want) {
				t.Fatalf("%s, round %d: cached request differs from the uncached one:\n got %s\nwant %s", what, round, got, want)
			}
		}
	}
	h := longHistory(60)
	for n := 2; n <= len(h); n += 7 {
		check(fmt.Sprintf("history of %d messages", n), h[:n])
	}
	// A compaction: a summary, then the last calls, with the same call IDs given to other calls.
	compacted := append([]agent.Message{h[0], {Role: agent.RoleUser, Content: "summary"}}, longHistory(5)[2:]...)
	compacted[4].ToolCalls[0].Arguments = json.RawMessage(`{"path":"after-compaction.go"}`)
	check("compacted history", compacted)
	// A mutated message at a position the cache has seen: the new arguments are sent.
	h2 := longHistory(60)
	h2[6].ToolCalls[0].Arguments = json.RawMessage(`{"path":"changed.go","old_string":"a","new_string":"b"}`)
	check("history with a changed call", h2)
}

// buildRequest uses the client's cache: the second request converts no arguments again.
func TestBuildRequestUsesTheArgsCache(t *testing.T) {
	c, err := New(Config{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	req := &agent.ModelRequest{Messages: longHistory(40), NumCtx: 4096}
	first, err := c.buildRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	c.args.mu.Lock()
	cached := len(c.args.cur)
	// Poison every entry: if the next request reads the cache it sends these.
	for k := range c.args.cur {
		a := api.NewToolCallFunctionArguments()
		a.Set("from_cache", true)
		c.args.cur[k] = a
	}
	c.args.mu.Unlock()
	if cached == 0 {
		t.Fatal("the first request cached no arguments")
	}
	second, err := c.buildRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := wireBytes(t, first.Messages), wireBytes(t, second.Messages); bytes.Equal(a, b) || !bytes.Contains(b, []byte(`"from_cache":true`)) {
		t.Fatalf("the second request did not take the arguments from the cache:\n%s", b)
	}
}

// The cache stays bounded: a generation holds at most argsCacheBytes of keys (plus one entry).
func TestArgsCacheIsBounded(t *testing.T) {
	var c argsCache
	big := strings.Repeat("y", 64<<10)
	for i := range 3 * argsCacheBytes / len(big) {
		c.mu.Lock()
		c.putLocked(fmt.Sprintf(`{"i":%d,"s":%q}`, i, big), api.NewToolCallFunctionArguments())
		c.mu.Unlock()
	}
	size := func(m map[string]api.ToolCallFunctionArguments) (n int) {
		for k := range m {
			n += len(k)
		}
		return n
	}
	if cur, prev := size(c.cur), size(c.prev); cur > argsCacheBytes || prev > argsCacheBytes {
		t.Fatalf("cache holds %d + %d bytes of keys, bound %d per generation", cur, prev, argsCacheBytes)
	}
	if len(c.prev) == 0 {
		t.Fatal("the cache never started a new generation")
	}
	if c.curBytes != size(c.cur) {
		t.Fatalf("curBytes %d, keys hold %d", c.curBytes, size(c.cur))
	}
}

// BenchmarkToAPIMessages converts a history of 20 or 200 past tool calls, as every request of a
// session does: uncached (every call's arguments decoded again) and cached. "+marshal" adds the
// encoding the api package does when it sends the request.
func BenchmarkToAPIMessages(b *testing.B) {
	for _, n := range []int{20, 200} { // 20: the mean history of BenchmarkToolRoundTripSocket's turn
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) { benchToAPIMessages(b, longHistory(n)) })
	}
}

func benchToAPIMessages(b *testing.B, msgs []agent.Message) {
	for _, bc := range []struct {
		name    string
		cache   *argsCache
		marshal bool
	}{{"uncached", nil, false}, {"cached", &argsCache{}, false}, {"uncached+marshal", nil, true}, {"cached+marshal", &argsCache{}, true}} {
		b.Run(bc.name, func(b *testing.B) {
			toAPIMessages(msgs, bc.cache) // warm the cache: a long session has converted its history before
			b.ReportAllocs()
			for b.Loop() {
				out := toAPIMessages(msgs, bc.cache)
				if bc.marshal {
					wireBytes(b, out)
				}
			}
		})
	}
}

// Sessions sharing a client share the cached arguments: encoding them at once is only reading
// (the race detector checks), and each request still carries its own history's bytes.
func TestArgsCacheSharedByConcurrentRequests(t *testing.T) {
	c, err := New(Config{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	h := longHistory(30)
	want := wireBytes(t, toAPIMessages(h, nil))
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for range 5 {
				areq, err := c.buildRequest(&agent.ModelRequest{Messages: h, NumCtx: 4096})
				if err != nil {
					errs <- err
					return
				}
				b, err := json.Marshal(&api.ChatRequest{Model: "m", Messages: areq.Messages})
				if err == nil && !bytes.Equal(b, want) {
					err = fmt.Errorf("a concurrent request differs from the uncached one:\n%s", b)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
