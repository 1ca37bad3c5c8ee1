package ollamatest_test

import (
	"slices"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
	"github.com/ollama/ollama/api"
)

// TestToolResults: a request's tool messages in order, and the last one the model received over
// all requests (a later request without one does not hide it).
func TestToolResults(t *testing.T) {
	srv := ollamatest.NewServer(&ollamatest.Script{})
	defer srv.Close()
	srv.Enqueue(ollamatest.Text("a"), ollamatest.Text("b"), ollamatest.Text("c"))
	if _, ok := srv.LastToolResult(); ok {
		t.Fatal("a tool result before any request")
	}
	msgs := []api.Message{{Role: "user", Content: "hi"}, {Role: "tool", Content: "one"},
		{Role: "assistant", Content: "x"}, {Role: "tool", Content: "two"}}
	for _, req := range []api.ChatRequest{
		{Model: "m", Messages: msgs[:1]},
		{Model: "m", Messages: msgs},
		{Model: "m", Messages: msgs[:1]},
	} {
		post(t, srv, "/api/chat", chatBody(t, req))
	}
	chats := srv.Chats()
	if len(chats) != 3 {
		t.Fatalf("%d chats recorded, want 3", len(chats))
	}
	if got := chats[1].ToolResults(); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("ToolResults = %q", got)
	}
	if got := chats[0].ToolResults(); len(got) != 0 {
		t.Errorf("ToolResults of a request without tool messages = %q", got)
	}
	if got, ok := srv.LastToolResult(); !ok || got != "two" {
		t.Errorf("LastToolResult = %q, %v; want two", got, ok)
	}
}
