package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/agent/store"
	"github.com/agentd/agentd/harness"
	"github.com/agentd/agentd/internal/termtext"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/sandbox"
)

// doctorCmd checks what agentd needs and says how to fix what is missing.
func doctorCmd(args []string) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	var s settings
	s.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	measure := false // --model M given: measure M on this machine
	fs.Visit(func(f *flag.Flag) { measure = measure || f.Name == "model" })
	// Names and errors come from Ollama, MCP servers and workspace files: termtext shows their
	// control characters instead of sending them to the terminal.
	out := termtext.New(os.Stdout, false)
	failed := false
	report := func(ok bool, what, detail, fix string) {
		mark := "ok  "
		if !ok {
			mark, failed = "FAIL", true
		}
		out.Printf("[%s] %s: %s\n", mark, termtext.Line(what), detail)
		if !ok && fix != "" {
			out.Printf("       fix: %s\n", fix)
		}
	}
	warn := func(what, detail, fix string) {
		out.Printf("[warn] %s: %s\n", termtext.Line(what), detail)
		if fix != "" {
			out.Printf("       fix: %s\n", fix)
		}
	}
	opts, warnings, err := s.resolve()
	if err != nil {
		report(false, "config", err.Error(), "correct $XDG_CONFIG_HOME/agentd/config or the flags")
		return 1
	}
	for _, w := range warnings {
		warn("config", w, "")
	}
	openaiEngine := opts.Engine == harness.EngineOpenAI
	if opts.Model == "" && !openaiEngine {
		opts.Model = harness.DefaultModel
	}
	out.Printf("agentd %s\n", version)

	models := opts.Models
	if models == nil {
		models = opts.EngineModels()
	}
	mc, err := models(opts.OllamaHost, opts.Model)
	if err != nil {
		report(false, "ollama", err.Error(), "check OLLAMA_HOST / --ollama-host")
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var info *agent.ModelInfo // the model's, once read
	if openaiEngine {
		info = doctorEngine(ctx, mc, opts, report, warn)
		if info != nil {
			opts.Model = info.Name
		}
	} else if v, err := mc.Version(ctx); err != nil {
		report(false, "ollama", describeErr(err), "")
	} else {
		report(true, "ollama", "reachable, version "+v, "")
		list, err := mc.ListModels(ctx)
		names := []string{}
		for _, m := range list {
			names = append(names, m.Name)
		}
		pulled := err == nil && slices.ContainsFunc(names, func(n string) bool { return n == opts.Model || n == opts.Model+":latest" })
		if !pulled {
			report(false, "model", fmt.Sprintf("%s is not pulled (have: %s)", opts.Model, strings.Join(names, ", ")), "run `ollama pull "+opts.Model+"`")
		} else if mi, err := mc.Info(ctx); err != nil {
			report(false, "model", describeErr(err), "")
		} else {
			info = &mi
			caps := []string{}
			if info.Tools {
				caps = append(caps, "tools")
			}
			if info.Thinking {
				caps = append(caps, "thinking")
			}
			if info.Vision {
				caps = append(caps, "vision")
			}
			report(true, "model", fmt.Sprintf("%s, context %d tokens, capabilities: %s", opts.Model, info.ContextLength, strings.Join(caps, ", ")), "")
			if !info.Tools {
				warn("model", opts.Model+" has no native tool calling: agentd will use text tool calls, which small models get wrong more often",
					"use a model with tools, e.g. `ollama pull "+harness.DefaultModel+"`")
			}
		}
	}
	if p, err := exec.LookPath("rg"); err == nil {
		out, _ := exec.Command(p, "--version").Output()
		report(true, "ripgrep", strings.SplitN(string(out), "\n", 2)[0], "")
	} else {
		warn("ripgrep", "rg is not on PATH: grep uses the slower pure-Go engine", "install ripgrep (`apt install ripgrep`)")
	}
	f := sandbox.Detect()
	switch mode := f.BestMode(); mode {
	case sandbox.ModeNone:
		report(false, "sandbox", f.Describe(), "install bubblewrap (`apt install bubblewrap`) and enable unprivileged user namespaces, or use a kernel with Landlock")
	default:
		report(true, "sandbox", f.Describe(), "")
	}
	mcpDefs := doctorMCP(out, opts, f, report, warn)
	if info != nil {
		numCtx := doctorContext(opts.Model, *info, append(builtin.Definitions(), mcpDefs...), opts.ContextCap, report, warn)
		if measure {
			doctorMeasure(mc, opts.Model, *info, numCtx, report, warn)
		} else {
			out.Printf("       measure it on this machine (GPU fit, speed, largest window): agentd doctor --model %s\n", opts.Model)
		}
	}
	dir := opts.StateDir
	if dir == "" {
		dir, _ = store.DefaultDir()
	}
	if st, err := store.Open(dir); err != nil {
		report(false, "state", err.Error(), "make "+dir+" writable")
	} else {
		st.Close()
		report(true, "state", dir, "")
	}
	out.Print(acpHints)
	if failed {
		return 1
	}
	out.Println("everything agentd needs is in place")
	return 0
}

// doctorEngine checks an OpenAI-compatible server: that it answers at the URL, which model it
// serves and with what window, and whether its chat template takes tools. It returns the
// model's info, nil when a check failed.
func doctorEngine(ctx context.Context, mc harness.ModelClient, opts harness.Options,
	report func(ok bool, what, detail, fix string), warn func(what, detail, fix string)) *agent.ModelInfo {
	where := opts.EngineSummary()
	v, err := mc.Version(ctx)
	if err != nil {
		report(false, "engine", describeErr(err), "")
		return nil
	}
	report(true, "engine", fmt.Sprintf("%s reachable (%s)", where, v), "")
	info, err := mc.Info(ctx)
	if err != nil {
		report(false, "model", describeErr(err), "")
		return nil
	}
	window := "the server does not say its context window: set context-length to it"
	if info.ContextLength > 0 {
		window = fmt.Sprintf("context %d tokens", info.ContextLength)
	}
	report(true, "model", fmt.Sprintf("%s, %s", info.Name, window), "")
	if !info.Tools {
		warn("model", "the server's chat template takes no tools: agentd will use text tool calls, which small models get wrong more often",
			"start llama-server with --jinja and a model whose template has tools")
	}
	return &info
}
