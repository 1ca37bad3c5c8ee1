package harness

import (
	"fmt"
	"strings"
	"testing"
)

func TestNewDiagnosticsAreTheErrorsAndWarningsNotThereBefore(t *testing.T) {
	before := []Diagnostic{
		{Line: 3, Severity: SeverityError, Message: "declared and not used: x", Source: "compiler"},
		{Line: 9, Severity: SeverityWarning, Message: "unused result", Source: "vet"},
	}
	after := []Diagnostic{
		// the same error, moved by the edit: not new
		{Line: 4, Severity: SeverityError, Message: "declared and not used: x", Source: "compiler"},
		// a second one alike: one before cancels only one after
		{Line: 7, Severity: SeverityError, Message: "declared and not used: x", Source: "compiler"},
		{Line: 2, Severity: SeverityWarning, Message: "unused result", Source: "other"},
		{Line: 5, Severity: SeverityError, Message: "undefined: Bonus", Source: "compiler"},
		{Line: 1, Severity: "hint", Message: "a hint"},
		{Line: 1, Severity: "info", Message: "an info"},
	}
	got := diagnosticLines("shop/cart.go", newDiagnostics(before, after))
	want := []string{
		"shop/cart.go:6: undefined: Bonus (compiler)",
		"shop/cart.go:8: declared and not used: x (compiler)",
		"shop/cart.go:3: warning: unused result (other)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDiagnosticLinesAreOneBoundedLineEach(t *testing.T) {
	long := strings.Repeat("é", 500)
	got := diagnosticLines("a.go", []Diagnostic{
		{Line: 0, Severity: SeverityError, Message: "first\nsecond\r\n\tthird\x1b[31m", Source: "ls\nx"},
		{Line: 1, Severity: SeverityError, Message: long},
	})
	if got[0] != "a.go:1: first second  third [31m (ls x)" {
		t.Errorf("line = %q", got[0])
	}
	if n := len([]rune(got[1])); n > maxDiagnosticMessage+20 || !strings.HasSuffix(got[1], "…") {
		t.Errorf("a long message is not cut (%d runes): %q", n, got[1])
	}
	for _, l := range got {
		if strings.ContainsAny(l, "\n\r\x1b") {
			t.Errorf("control characters left in %q", l)
		}
	}
}

func TestDiagnosticsAreCappedWithACount(t *testing.T) {
	var after []Diagnostic
	for i := range 25 {
		after = append(after, Diagnostic{Line: i, Severity: SeverityError, Message: fmt.Sprintf("e%d", i)})
	}
	lines := capLines(diagnosticLines("a.go", newDiagnostics(nil, after)))
	if len(lines) != maxDiagnosticLines+1 || lines[maxDiagnosticLines] != "… and 15 more" {
		t.Errorf("lines = %q", lines)
	}
}
