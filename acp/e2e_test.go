package acp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
	"github.com/google/jsonschema-go/jsonschema"
)

// TestOfficialClient drives `agentd acp` with the official ACP TypeScript library
// (acp/testdata/e2e/client.mjs: initialize, new, a prompt that reads and edits with allow, reject
// and cancel, the edit through fs/write_text_file, then session/load in a second process), and
// validates every message of both directions against the JSON schema the library ships.
func TestOfficialClient(t *testing.T) {
	dir, _ := filepath.Abs("testdata/e2e")
	sdk := filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(sdk); serr != nil || err != nil {
		msg := "the ACP client library is not installed: run `npm ci --prefix acp/testdata/e2e` (.ci/run does)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	for pkg, name := range map[string]string{"../cmd/agentd": "agentd", "../ollama/ollamatest/cmd/fakeollama": "fakeollama"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	ws := filepath.Join(tmp, "ws")
	home := filepath.Join(tmp, "home")
	trans := filepath.Join(tmp, "transcript")
	for _, d := range []string{ws, home, trans} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	testutil.GoTelemetryOff(t, filepath.Join(home, "config"))
	if err := os.WriteFile(filepath.Join(ws, "answer.go"), []byte("package answer\n\nfunc Answer() int {\n\treturn 1\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "client.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"AGENTD="+filepath.Join(bin, "agentd"), "FAKEOLLAMA="+filepath.Join(bin, "fakeollama"),
		"SCRIPT="+filepath.Join(dir, "script.json"), "WORKSPACE="+ws, "TRANSCRIPT_DIR="+trans,
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"),
		"XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_RUNTIME_DIR="+filepath.Join(home, "run"),
		"AGENTD_MODEL=qwen3:8b", "AGENTD_APPROVAL=", "AGENTD_LOG=")
	// The everything MCP server, when installed (.ci/run does), is passed as an mcpServers entry.
	mcpDir := os.Getenv("AGENTD_MCP_SERVERS")
	if mcpDir == "" {
		mcpDir = "/opt/agentd-e2e/mcp"
	}
	if entry := filepath.Join(mcpDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"); fileExists(entry) {
		cmd.Env = append(cmd.Env, "MCP_EVERYTHING="+entry, "NODE_BIN="+node)
	} else {
		t.Logf("the everything MCP server is not installed (%s): only a server that cannot start is passed", entry)
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("[acp-e2e] ok")) {
		t.Fatalf("the ACP client test failed (%v):\n%s", err, out)
	}
	n := validateTranscript(t, filepath.Join(sdk, "schema", "v1", "schema.json"), filepath.Join(sdk, "schema", "v1", "schema.unstable.json"), trans)
	if n < 40 {
		t.Fatalf("only %d messages were validated; the transcript is incomplete", n)
	}
	t.Logf("%d messages validated against the schema", n)
}

// validateTranscript checks each line of client.jsonl and agent.jsonl against the schema's
// definition for its method (requests, notifications, and responses matched to their request by
// id), and returns how many messages it checked. A method the stable schema does not have
// (session/fork) is checked against the unstable one.
func validateTranscript(t *testing.T, schemaPath, unstablePath, dir string) int {
	stable, unstable := schemaResolver(t, schemaPath), schemaResolver(t, unstablePath)
	schemaFor := func(key string) *jsonschema.Resolved {
		if s := stable(key); s != nil {
			return s
		}
		if s := unstable(key); s != nil {
			return s
		}
		t.Errorf("the schema has no definition for %s", key)
		return nil
	}
	return validateLines(t, schemaFor, dir)
}

// schemaResolver compiles a schema's definitions by method and kind ("initialize request"); nil
// for a key it does not define.
func schemaResolver(t *testing.T, schemaPath string) func(key string) *jsonschema.Resolved {
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			Method string `json:"x-method"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatal(err)
	}
	// def names by method and kind: "initialize request" → InitializeRequest.
	byMethod := map[string]string{}
	for name, d := range doc.Defs {
		if d.Method == "" {
			continue
		}
		for _, kind := range []string{"Request", "Response", "Notification"} {
			if strings.HasSuffix(name, kind) {
				byMethod[d.Method+" "+strings.ToLower(kind)] = name
			}
		}
	}
	compiled := map[string]*jsonschema.Resolved{}
	return func(key string) *jsonschema.Resolved {
		name, ok := byMethod[key]
		if !ok {
			return nil
		}
		if s := compiled[name]; s != nil {
			return s
		}
		s, err := (&jsonschema.Schema{Schema: root.Schema, Defs: root.Defs, Ref: "#/$defs/" + name}).Resolve(nil)
		if err != nil {
			t.Fatalf("compiling %s: %v", name, err)
		}
		compiled[name] = s
		return s
	}
}

// validateLines checks the transcript's lines against the definitions schemaFor finds.
func validateLines(t *testing.T, schemaFor func(string) *jsonschema.Resolved, dir string) int {
	type line struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	n := 0
	var lines [2][]string
	for i, side := range []string{"client", "agent"} {
		f, err := os.ReadFile(filepath.Join(dir, side+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(f))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) != "" {
				lines[i] = append(lines[i], sc.Text())
			}
		}
	}
	// Requests first (each side), then responses: a response always follows its request, and
	// ids of the two agentd processes are reused, so requests are consumed in order.
	queue := map[string][]string{}
	for i, side := range []string{"client", "agent"} {
		for _, l := range lines[i] {
			var m line
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Errorf("%s sent a line that is not JSON: %s", side, l)
				continue
			}
			if m.JSONRPC != "2.0" {
				t.Errorf("%s sent a message without jsonrpc 2.0: %s", side, l)
			}
			if m.Method != "" && len(m.ID) > 0 {
				k := side + " " + string(m.ID)
				queue[k] = append(queue[k], m.Method)
			}
		}
	}
	for i, side := range []string{"client", "agent"} {
		other := map[string]string{"client": "agent", "agent": "client"}[side]
		for _, l := range lines[i] {
			var m line
			if json.Unmarshal([]byte(l), &m) != nil {
				continue
			}
			var key string
			var v json.RawMessage
			switch {
			case m.Method != "" && len(m.ID) > 0:
				key, v = m.Method+" request", m.Params
			case m.Method != "":
				key, v = m.Method+" notification", m.Params
			default:
				k := other + " " + string(m.ID)
				if len(queue[k]) == 0 {
					t.Errorf("%s answered a request never sent: %s", side, l)
					continue
				}
				method := queue[k][0]
				queue[k] = queue[k][1:]
				if len(m.Error) > 0 {
					t.Errorf("%s answered %s with an error: %s", side, method, l)
					continue
				}
				key, v = method+" response", m.Result
			}
			s := schemaFor(key)
			if s == nil {
				continue
			}
			var inst any
			if err := json.Unmarshal(v, &inst); err != nil {
				t.Errorf("%s: %v", l, err)
				continue
			}
			if err := s.Validate(inst); err != nil {
				t.Errorf("%s's %s does not match the schema: %v\n%s", side, key, err, l)
			}
			n++
		}
	}
	return n
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
