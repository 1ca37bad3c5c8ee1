package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/tools"
)

// Limits of what one result hands the model.
const (
	// DefaultMaxResultBytes caps the text of a result; the rest is cut and the original size stated.
	DefaultMaxResultBytes = 32 << 10
	// MaxImageBytes caps one image; a larger one is replaced by a note.
	MaxImageBytes = 4 << 20
	// MaxImages caps the images of one result.
	MaxImages = 4
	// maxDescription caps a tool's description (it goes into every request).
	maxDescription = 2048
	// maxNameLen is the longest tool name model APIs accept.
	maxNameLen = 64
)

// Separator joins the server name and the tool name: "everything__echo".
const Separator = "__"

var badNameChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// ToolName is the name the model sees for tool of server: server__tool, with characters outside
// [A-Za-z0-9_-] replaced by '_' (the charset model APIs and Ollama's parsers accept), at most 64
// characters. ok is false when no such name fits.
func ToolName(server, tool string) (string, bool) {
	n := server + Separator + badNameChars.ReplaceAllString(tool, "_")
	if tool == "" || len(n) > maxNameLen {
		return "", false
	}
	return n, true
}

// Tool is one tool of an MCP server, adapted to agentd's tool contract. It goes through the same
// pipeline as the built-in tools: its input schema validates (and safely coerces) the arguments,
// the gate decides with the server, the tool and the exact arguments in view, and results are
// typed.
type Tool struct {
	srv      *server
	name     string
	remote   string // the tool's name on the server
	desc     string
	spec     *tools.Spec
	readOnly bool // the server says readOnlyHint
}

var (
	_ tools.Tool                = (*Tool)(nil)
	_ tools.ContentTool         = (*Tool)(nil)
	_ tools.Labeler             = (*Tool)(nil)
	_ tools.Previewer           = (*Tool)(nil)
	_ tools.PermissionMetadata  = (*Tool)(nil)
	_ tools.Interruptible       = (*Tool)(nil)
	_ tools.ConcurrencySafeTool = (*Tool)(nil)
)

// newTool adapts t; an error says why the tool is left out (a schema that does not compile).
func newTool(srv *server, name string, t *sdk.Tool) (*Tool, error) {
	schema, err := inputSchema(t.InputSchema)
	if err != nil {
		return nil, err
	}
	// The schema is the server's (untrusted): a schema that does not compile leaves this one tool
	// out. Arguments then validate and coerce exactly as a built-in tool's.
	spec, err := tools.ParseSpec[map[string]any](schema)
	if err != nil {
		return nil, fmt.Errorf("its input schema does not compile: %v", err)
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = strings.TrimSpace(t.Title)
	}
	if len(desc) > maxDescription {
		cut := maxDescription
		for cut > 0 && !utf8.RuneStart(desc[cut]) {
			cut--
		}
		desc = desc[:cut] + "…"
	}
	desc = fmt.Sprintf("[MCP server %s, tool %s] %s", srv.cfg.Name, t.Name, desc)
	ro := t.Annotations != nil && t.Annotations.ReadOnlyHint
	return &Tool{srv: srv, name: name, remote: t.Name, desc: desc, spec: spec, readOnly: ro}, nil
}

// inputSchema re-encodes the server's schema compactly with sorted keys (byte-stable across
// sessions), and checks that it describes an object.
func inputSchema(s any) ([]byte, error) {
	if s == nil {
		return []byte(`{"type":"object"}`), nil
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("its input schema is not JSON: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("its input schema is not a JSON object")
	}
	if t, ok := m["type"]; ok && t != "object" {
		return nil, fmt.Errorf("its input schema has type %v, not object", t)
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	return json.Marshal(m)
}

func (t *Tool) Name() string        { return t.name }
func (t *Tool) Description() string { return t.desc }
func (t *Tool) Spec() *tools.Spec   { return t.spec }

// Server is the server's name; RemoteName the tool's name on it.
func (t *Tool) Server() string     { return t.srv.cfg.Name }
func (t *Tool) RemoteName() string { return t.remote }

// ReadOnlyHint is the server's annotation (untrusted).
func (t *Tool) ReadOnlyHint() bool { return t.readOnly }

// TrustedReadOnly is set when the server marks the tool read-only and the user trusts this
// server's read-only hints (trustReadOnly). Only then may a policy let it run without asking.
func (t *Tool) TrustedReadOnly() bool { return t.readOnly && t.srv.cfg.TrustReadOnly }

// Permission: a call of an MCP tool can do anything the server can, so it is exec-like, unless
// the user trusts the server's read-only hints and this tool has one.
func (t *Tool) Permission(*tools.Call) tools.Permission {
	if t.TrustedReadOnly() {
		return tools.Permission{Access: tools.AccessRead}
	}
	return tools.Permission{Access: tools.AccessExec}
}

// ConcurrencySafe: only tools trusted to be read-only run alongside other calls.
func (t *Tool) ConcurrencySafe(any) bool { return t.TrustedReadOnly() }

// InterruptBehavior: steering cancels a running MCP call (the server is told).
func (t *Tool) InterruptBehavior(any) tools.Interrupt { return tools.InterruptCancel }

func argsJSON(args any) string {
	if p, ok := args.(*map[string]any); ok && p != nil {
		b, err := json.Marshal(*p) // sorted keys: the exact arguments, canonical
		if err == nil {
			return string(b)
		}
	}
	return "{}"
}

// Label shows the server, the tool and the exact arguments that will be sent.
func (t *Tool) Label(args any) string {
	return fmt.Sprintf("MCP server %s, tool %s, arguments %s", t.srv.cfg.Name, t.remote, argsJSON(args))
}

// Preview binds an approval to the server, the tool and the exact arguments.
func (t *Tool) Preview(_ context.Context, call *tools.Call) (*tools.Preview, error) {
	a := argsJSON(call.Args)
	return &tools.Preview{Summary: t.Label(call.Args),
		Binding: "mcp\x00" + t.srv.cfg.Name + "\x00" + t.remote + "\x00" + a}, nil
}

func (t *Tool) Execute(ctx context.Context, call *tools.Call) (tools.Output, error) {
	return t.ExecuteContent(ctx, call)
}

func (t *Tool) ExecuteContent(ctx context.Context, call *tools.Call) (tools.Output, error) {
	var args map[string]any
	if p, ok := call.Args.(*map[string]any); ok && p != nil {
		args = *p
	}
	var fus []tools.FollowUp
	res, note, err := t.srv.call(ctx, t.remote, args, &fus)
	if err != nil {
		if te, ok := err.(*tools.Error); ok {
			if note != "" {
				te.Message += "\n" + note
			}
			te.FollowUps = fus
		}
		return tools.Output{}, err
	}
	out := mapResult(res, t.srv.opts.maxResult())
	if res.IsError {
		msg := strings.TrimSpace(textOf(out))
		if msg == "" {
			msg = "(no message)"
		}
		return tools.Output{}, &tools.Error{Type: tools.ExecFailed,
			Message: fmt.Sprintf("MCP tool %s of server %s reported an error: %s", t.remote, t.srv.cfg.Name, msg) + "\n" + note, FollowUps: fus}
	}
	if note != "" {
		out.Content = append(out.Content, tools.Block{Type: "text", Text: note})
	}
	out.FollowUps = fus
	return out, nil
}

func (o *Options) maxResult() int {
	if o.MaxResultBytes > 0 {
		return o.MaxResultBytes
	}
	return DefaultMaxResultBytes
}

func textOf(o tools.Output) string {
	var b strings.Builder
	for _, bl := range o.Content {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// mapResult turns an MCP result into agentd's: text blocks, images (bounded), resources and
// links described in text, structured content as JSON when no text carries it. Text beyond
// limit bytes is cut, and the result says so with the original size.
func mapResult(res *sdk.CallToolResult, limit int) tools.Output {
	var blocks []tools.Block
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			blocks = append(blocks, tools.Block{Type: "text", Text: text.String()})
			text.Reset()
		}
	}
	addText := func(s string) {
		if text.Len() > 0 && !strings.HasSuffix(text.String(), "\n") {
			text.WriteByte('\n')
		}
		text.WriteString(s)
	}
	images := 0
	hasText := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			addText(c.Text)
			hasText = true
		case *sdk.ImageContent:
			switch {
			case images >= MaxImages:
				addText(fmt.Sprintf("[image %s, %d bytes: not shown, only %d images per result]", c.MIMEType, len(c.Data), MaxImages))
			case len(c.Data) > MaxImageBytes:
				addText(fmt.Sprintf("[image %s, %d bytes: not shown, larger than %d bytes]", c.MIMEType, len(c.Data), MaxImageBytes))
			default:
				flush()
				blocks = append(blocks, tools.Block{Type: "image", MIME: c.MIMEType, Data: c.Data})
				images++
			}
		case *sdk.AudioContent:
			addText(fmt.Sprintf("[audio %s, %d bytes: not shown]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			s := "[resource link: " + c.URI
			if c.Name != "" {
				s += " (" + c.Name + ")"
			}
			if c.MIMEType != "" {
				s += ", " + c.MIMEType
			}
			if c.Description != "" {
				s += ": " + c.Description
			}
			addText(s + "]")
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
			case r.Text != "":
				addText(fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
				hasText = true
			default:
				addText(fmt.Sprintf("[resource %s, %s, %d bytes of binary data: not shown]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			addText(fmt.Sprintf("[content of type %T: not shown]", c))
		}
	}
	if res.StructuredContent != nil && !hasText {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			addText(string(b))
		}
	}
	flush()
	if len(blocks) == 0 {
		blocks = []tools.Block{{Type: "text", Text: "(the tool returned no content)"}}
	}
	var meta tools.Meta
	total := 0
	for _, b := range blocks {
		total += len(b.Text)
	}
	if total > limit {
		meta = tools.Meta{OriginalSize: int64(total), Truncated: true}
		left := limit
		for i := range blocks {
			if blocks[i].Type != "text" {
				continue
			}
			if len(blocks[i].Text) <= left {
				left -= len(blocks[i].Text)
				continue
			}
			cut := left
			for cut > 0 && !utf8.RuneStart(blocks[i].Text[cut]) {
				cut--
			}
			blocks[i].Text = blocks[i].Text[:cut]
			left = 0
		}
		blocks = append(blocks, tools.Block{Type: "text", Text: fmt.Sprintf(
			"\n[output truncated: the tool returned %d bytes of text; the first %d are shown]", total, limit)})
	}
	return tools.Output{Content: blocks, Meta: meta, Text: textOfBlocks(blocks)}
}

func textOfBlocks(bs []tools.Block) string {
	var b strings.Builder
	for _, bl := range bs {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}
