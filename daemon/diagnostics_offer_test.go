package daemon

import (
	"path/filepath"
	"testing"
)

// OffersDiagnostics agrees with Diagnostics: true exactly when an editor would be asked (one that
// declared diagnostics, for a file in its folders), so the harness skips the questions otherwise.
func TestOffersDiagnosticsOnlyWhenAnEditorWouldBeAsked(t *testing.T) {
	env := autoEditEnv(t)
	d := editorDiagnostics{env.srv}
	in, out := filepath.Join(env.ws, "cart.go"), filepath.Join(t.TempDir(), "elsewhere.go")
	if d.OffersDiagnostics(in) {
		t.Fatal("offers diagnostics with no editor attached")
	}
	without := env.diagEditor(false, nil)
	without.open("cart.go", diagGo)
	if d.OffersDiagnostics(in) {
		t.Fatal("offers diagnostics when the only editor did not declare them")
	}
	env.diagEditor(true, nil)
	if !d.OffersDiagnostics(in) {
		t.Fatal("does not offer diagnostics for a file in the folder of an editor that declared them")
	}
	if d.OffersDiagnostics(out) {
		t.Fatal("offers diagnostics for a file outside every editor's folders")
	}
}
