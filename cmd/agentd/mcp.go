package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/internal/termtext"
	"github.com/agentd/agentd/policy"
	"github.com/agentd/agentd/tools/mcp"
)

// mcpCmd: agentd mcp approve [-C DIR] [--yes] [NAME]. Without NAME it lists the servers the
// workspace proposes and their state; with NAME it shows that server's definition and approves it
// after a "y" on stdin, or at once with --yes. An approval holds for that exact definition in that
// workspace, and is recorded in agentd's state directory.
func mcpCmd(args []string) int {
	if len(args) == 0 || args[0] != "approve" {
		fmt.Fprintln(os.Stderr, "usage: agentd mcp approve [-C DIR] [--yes] [NAME]")
		return 2
	}
	fs := flag.NewFlagSet("mcp approve", flag.ContinueOnError)
	dir := fs.String("C", ".", "the workspace directory")
	yes := fs.Bool("yes", false, "approve NAME without asking")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	name := fs.Arg(0)
	if fs.NArg() > 1 || (*yes && name == "") {
		fmt.Fprintln(os.Stderr, "usage: agentd mcp approve [-C DIR] [--yes] [NAME]")
		return 2
	}
	loc, err := policy.DefaultLocations()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd:", err)
		return 1
	}
	return mcpApprove(loc, *dir, name, *yes, os.Stdin, os.Stdout)
}

func mcpApprove(loc policy.Locations, dir, name string, yes bool, in io.Reader, out io.Writer) int {
	// Server names and definitions come from workspace files: termtext shows their control
	// characters, so what the user approves is what is shown.
	o, e := termtext.New(out, false), termtext.New(os.Stderr, false)
	ws, err := filepath.Abs(dir)
	if err != nil {
		e.Println("agentd:", err)
		return 1
	}
	ps, warnings := mcp.LoadProposals(ws)
	for _, w := range warnings {
		e.Println("agentd:", w)
	}
	if len(ps) == 0 {
		o.Printf("%s proposes no MCP servers (%s)\n", ws, strings.Join(mcp.ProposalFiles, ", "))
		return 0
	}
	if !workspaceTrusted(loc, ws) {
		e.Printf("agentd: %s is not trusted: its MCP proposals are ignored and cannot be approved (trust list: %s)\n", ws, loc.TrustFile())
		return 1
	}
	approvals := mcp.OpenApprovals(loc.StateDir)
	if err := approvals.Mark(ws, ps); err != nil {
		e.Println("agentd:", err)
		return 1
	}
	if name == "" {
		for _, p := range ps {
			o.Printf("%s (%s): %s\n  %s\n", termtext.Line(p.Server.Name), p.File, proposalState(p), termtext.Line(p.Describe()))
		}
		return 0
	}
	for _, p := range ps {
		if p.Server.Name != name {
			continue
		}
		if p.Err != "" {
			e.Printf("agentd: MCP server %s cannot start as proposed: %s\n", name, p.Err)
			return 1
		}
		o.Printf("%s (%s) runs: %s\n", termtext.Line(name), p.File, termtext.Line(p.Describe()))
		if p.Approved {
			o.Println("already approved")
			return 0
		}
		if !yes {
			o.Print("Starting it runs this code in agentd's sandbox in every session here. Approve? [y/N] ")
			line, _ := bufio.NewReader(in).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
				o.Println("not approved")
				return 1
			}
		}
		if err := approvals.Approve(ws, p); err != nil {
			e.Println("agentd:", err)
			return 1
		}
		o.Printf("approved %s: it starts in new sessions in %s\n", name, ws)
		return 0
	}
	e.Printf("agentd: %s proposes no MCP server named %q\n", ws, name)
	return 1
}

func proposalState(p mcp.Proposal) string {
	switch {
	case p.Err != "":
		return "cannot start: " + p.Err
	case p.Approved:
		return "approved"
	}
	return "not approved: " + p.ApproveCommand()
}

// workspaceTrusted reports whether the user trusts the workspace; an unreadable list means no.
func workspaceTrusted(loc policy.Locations, ws string) bool {
	ts, err := policy.OpenTrust(loc.TrustFile())
	return err == nil && ts.Trusted(ws)
}
