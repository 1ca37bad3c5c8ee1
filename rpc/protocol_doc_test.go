package rpc

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// docTypes maps the type names used in docs/protocol.md markers to the Go types.
var docTypes = map[string]any{}

func init() {
	for _, v := range []any{
		InitializationOptions{}, ServerInfo{},
		SessionNewParams{}, SessionNewResult{}, SessionListParams{}, SessionListResult{},
		SessionAttachParams{}, SessionAttachResult{}, SessionDetachParams{}, SessionDetachResult{},
		SessionPromptParams{}, SessionPromptResult{}, SessionSteerParams{}, SessionSteerResult{},
		SessionCancelParams{}, SessionCancelResult{}, SessionRevertParams{}, SessionRevertResult{}, SessionForkParams{}, SessionForkResult{}, SessionRewindParams{}, SessionRewindResult{},
		SessionSetModeParams{}, SessionSetModeResult{}, ModelListParams{}, ModelListResult{},
		DaemonStatusParams{}, DaemonStatusResult{}, SessionUpdateParams{},
		ReviewRequestedParams{}, ReviewDecideParams{}, ReviewDecideResult{}, ReviewListParams{},
		ReviewListResult{}, ReviewResolvedParams{}, ReviewHunkStateParams{}, ReviewHunkStateResult{}, ReviewHunkStatesParams{}, GrantListParams{}, GrantListResult{},
		GrantRevokeParams{}, GrantRevokeResult{}, DocumentSaveParams{}, DocumentSaveResult{},
		DocumentDiagnosticsParams{}, DocumentDiagnosticsResult{},
		TurnListParams{}, TurnListResult{}, TurnChangesParams{}, TurnChangesResult{}, TurnUndoParams{}, TurnUndoResult{},
		MCPProposalsParams{}, MCPProposalsResult{}, MCPApproveParams{}, MCPApproveResult{},
		InlineCompletionParams{}, InlineCompletionList{},
	} {
		docTypes[reflect.TypeOf(v).Name()] = v
	}
}

var exampleRE = regexp.MustCompile("(?s)<!-- rpc:(\\w+) -->\\s*```json\\n(.*?)```")

// TestProtocolDocExamplesDecode decodes every JSON example of docs/protocol.md into the type its
// marker names, rejecting unknown fields, and checks that nothing is lost in a round trip.
func TestProtocolDocExamplesDecode(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	matches := exampleRE.FindAllSubmatch(doc, -1)
	if len(matches) < 40 {
		t.Fatalf("found %d examples, expected the whole protocol", len(matches))
	}
	seen := map[string]bool{}
	for _, m := range matches {
		name, body := string(m[1]), m[2]
		proto, ok := docTypes[name]
		if !ok {
			t.Errorf("example marked %s: no such type in docTypes", name)
			continue
		}
		seen[name] = true
		ptr := reflect.New(reflect.TypeOf(proto))
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(ptr.Interface()); err != nil {
			t.Errorf("%s example does not decode: %v\n%s", name, err, body)
			continue
		}
		// Round trip: every field of the example survives.
		var want, got any
		json.Unmarshal(body, &want)
		out, _ := json.Marshal(ptr.Interface())
		json.Unmarshal(out, &got)
		if !subset(want, got) {
			t.Errorf("%s example loses data in a round trip:\nexample %s\nencoded %s", name, compact(body), out)
		}
	}
	for name := range docTypes {
		if !seen[name] {
			t.Errorf("type %s has no example in docs/protocol.md", name)
		}
	}
}

// TestEveryMethodIsDocumented checks that each method has a section in docs/protocol.md.
func TestEveryMethodIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Methods {
		if m.LSP {
			continue // LSP's methods are documented by LSP; docs/protocol.md says how agentd uses them
		}
		if !strings.Contains(string(doc), "### `"+m.Name+"`") {
			t.Errorf("method %s has no section", m.Name)
		}
	}
}

// subset reports whether every value in want is present and equal in got (got may add
// zero-valued fields that the example omitted only if they are empty collections).
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			if !subset(wv, g[k]) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(want, got)
	}
}

func compact(b []byte) string {
	var buf bytes.Buffer
	json.Compact(&buf, b)
	return buf.String()
}
