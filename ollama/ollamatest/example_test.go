package ollamatest_test

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/ollama"
	"github.com/agentd/agentd/ollama/ollamatest"
)

// A loop test scripts two model turns, runs them through the real adapter, and checks what was sent.
func Example() {
	srv := ollamatest.NewServer(&ollamatest.Script{
		Models: []ollamatest.Model{{Name: "qwen3:8b", Capabilities: []string{"completion", "tools"}, ContextLength: 40960}},
	})
	defer srv.Close()
	srv.Enqueue(
		ollamatest.Calls(ollamatest.Call("read_file", `{"path":"main.go"}`)),
		ollamatest.Text("main.go starts the daemon."),
	)

	m, err := ollama.New(ollama.Config{Host: srv.URL, Model: "qwen3:8b"})
	if err != nil {
		panic(err)
	}
	req := &agent.ModelRequest{
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "explain main.go"}},
		NumCtx:   8192,
	}
	resp, err := m.Chat(context.Background(), req, nil)
	if err != nil {
		panic(err)
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(call.ID, call.Name, string(call.Arguments))

	req.Messages = append(req.Messages, resp.Message,
		agent.Message{Role: agent.RoleTool, ToolCallID: call.ID, ToolName: call.Name, Content: "package main"})
	var deltas []string
	resp, err = m.Chat(context.Background(), req, func(d agent.Delta) { deltas = append(deltas, d.Text) })
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", deltas)
	fmt.Println(resp.Message.Content, resp.DoneReason)

	last, _ := srv.LastChat()
	fmt.Println(len(last.Request.Messages), last.NumCtx(), srv.Pending())
	// Output:
	// call_00000001 read_file {"path":"main.go"}
	// ["main.go" " starts" " the" " daemon."]
	// main.go starts the daemon. stop
	// 3 8192 0
}
