// Package bug reports broken invariants: impossible states that are not the user's or the model's
// fault. In the product a report is logged and the caller carries on with a safe answer; in tests
// (PanicOnBugs set, usually from TestMain) it panics so the defect cannot hide.
package bug

import (
	"fmt"
	"log/slog"
	"sync/atomic"
)

// PanicOnBugs makes Reportf panic. Tests set it.
var PanicOnBugs atomic.Bool

// Reportf records a broken invariant.
func Reportf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if PanicOnBugs.Load() {
		panic("bug: " + msg)
	}
	slog.Error("bug: " + msg)
}
