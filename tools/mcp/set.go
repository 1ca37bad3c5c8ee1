package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/tools"
)

// Set is the MCP servers of one session: started when the session starts, their tool lists fixed
// then (the prompt prefix stays byte-stable; a server's tools/list_changed applies at the next
// session), shut down with the session. A server that fails to start is reported in Status and
// contributes no tools; it never stops the session.
type Set struct {
	servers []*server
	tools   []tools.Tool
	notes   []note
}

type note struct {
	srv *server
	msg string
}

// ServerStatus describes one server, for `agentd doctor` and logs.
type ServerStatus struct {
	Name      string
	Transport string // "stdio" or "http"
	Target    string // the command line or the URL
	State     State
	Error     string
	Version   string   // the server's name and version, as it reports them
	Tools     []string // model-facing tool names
	Skipped   []string // tools left out, with the reason
	// Filtered are the server's tools (its names for them) that the configuration's tools or
	// disabledTools leave out.
	Filtered []string
}

// Start starts every server of cfg in parallel and collects their tools, in a stable order
// (servers by name, tools by name). It returns when every server is ready or has failed (each
// within its start timeout) or ctx ends.
func Start(ctx context.Context, cfg *Config, opts Options) *Set {
	set := &Set{}
	if cfg == nil || len(cfg.Servers) == 0 {
		return set
	}
	o := opts
	var wg sync.WaitGroup
	for _, sc := range cfg.Servers {
		s := &server{cfg: sc, opts: &o}
		set.servers = append(set.servers, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.open(ctx)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, s := range set.servers {
		if s.state != StateReady {
			slog.Warn("an MCP server did not start; its tools are not available in this session", "server", s.cfg.Name, "err", s.err)
			continue
		}
		list := append(s.tools[:0:0], s.tools...)
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
		set.unknownFiltered(s, list)
		for _, rt := range list {
			if !s.cfg.Offers(rt.Name) {
				s.filtered = append(s.filtered, rt.Name)
				continue
			}
			name, ok := ToolName(s.cfg.Name, rt.Name)
			if !ok {
				set.skip(s, rt.Name, fmt.Sprintf("the name %s%s%s is longer than %d characters", s.cfg.Name, Separator, rt.Name, maxNameLen))
				continue
			}
			if seen[name] {
				set.skip(s, rt.Name, "another tool of the server has the same name once sanitised ("+name+")")
				continue
			}
			t, err := newTool(s, name, rt)
			if err != nil {
				set.skip(s, rt.Name, err.Error())
				continue
			}
			seen[name] = true
			set.tools = append(set.tools, t)
		}
	}
	return set
}

// unknownFiltered warns about the names in tools and disabledTools that the server does not have
// (a misspelt name would silently offer nothing, or leave a tool in).
func (set *Set) unknownFiltered(s *server, list []*sdk.Tool) {
	has := map[string]bool{}
	for _, t := range list {
		has[t.Name] = true
	}
	for _, key := range []struct {
		name  string
		names []string
	}{{"tools", s.cfg.Tools}, {"disabledTools", s.cfg.DisabledTools}} {
		for _, n := range key.names {
			if !has[n] {
				names := make([]string, 0, len(list))
				for _, t := range list {
					names = append(names, t.Name)
				}
				msg := fmt.Sprintf("MCP server %s: %s names %q, which the server does not have (its tools: %s)", s.cfg.Name, key.name, n, strings.Join(names, ", "))
				slog.Warn(msg)
				set.notes = append(set.notes, note{s, msg})
			}
		}
	}
}

func (set *Set) skip(s *server, tool, why string) {
	msg := fmt.Sprintf("MCP server %s: tool %s is not offered: %s", s.cfg.Name, tool, why)
	slog.Warn(msg)
	set.notes = append(set.notes, note{s, msg})
}

// Tools returns the tools of the ready servers, in a stable order.
func (set *Set) Tools() []tools.Tool { return set.tools }

// Status describes every configured server.
func (set *Set) Status() []ServerStatus {
	var out []ServerStatus
	for _, s := range set.servers {
		s.mu.Lock()
		st := ServerStatus{Name: s.cfg.Name, State: s.state, Version: s.version}
		if s.err != nil {
			st.Error = s.err.Error()
		}
		s.mu.Unlock()
		if s.cfg.Stdio() {
			st.Transport, st.Target = "stdio", s.cfg.Command
			for _, a := range s.cfg.Args {
				st.Target += " " + a
			}
		} else {
			st.Transport, st.Target = "http", s.cfg.URL
		}
		for _, t := range set.tools {
			if mt := t.(*Tool); mt.srv == s {
				st.Tools = append(st.Tools, mt.name)
			}
		}
		for _, n := range set.notes {
			if n.srv == s {
				st.Skipped = append(st.Skipped, n.msg)
			}
		}
		st.Filtered = s.filtered
		out = append(out, st)
	}
	return out
}

// Close shuts every server down (stdin closed, then the sandbox kills what is left).
func (set *Set) Close() {
	var wg sync.WaitGroup
	for _, s := range set.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.shutdown()
		}()
	}
	wg.Wait()
}
