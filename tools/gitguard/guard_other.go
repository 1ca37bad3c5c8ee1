//go:build !linux

package gitguard

import "context"

// Guard does nothing off Linux, where there is no sandbox either: commands run only with the
// user's explicit approval, unconfined, and could plant anything anywhere.
type Guard struct{}

// New returns a guard that checks nothing.
func New(Options) *Guard { return &Guard{} }

// Watch is one guarded command.
type Watch struct{}

// Begin records nothing.
func (g *Guard) Begin(context.Context) (*Watch, error) { return &Watch{}, nil }

// End returns an empty report.
func (w *Watch) End() *Report { return &Report{} }
