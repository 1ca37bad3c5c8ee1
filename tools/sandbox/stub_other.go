//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
)

// Options configure New.
type Options struct {
	Mode       Mode
	Features   *Features
	HelperPath string
	Limits     Limits
}

// Sandbox is unavailable on this OS.
type Sandbox struct{}

// Cmd is a wrapped command.
type Cmd struct {
	*exec.Cmd
	Mode    Mode
	Summary string
	Gaps    []string
}

// Release is a no-op here.
func (c *Cmd) Release() {}

// Kill does nothing here.
func (c *Cmd) Kill() {}

// Events are empty here.
func (c *Cmd) Events() ResourceEvents { return ResourceEvents{} }

// SweepLayers does nothing here: no layers are made.
func SweepLayers(string) []string { return nil }

// Changes is empty: commands have no layer here.
func (c *Cmd) Changes() ([]Change, error) { return nil, nil }

// Layered reports false: commands have no layer here.
func (c *Cmd) Layered() bool { return false }

// Detect reports that nothing is available on this OS.
func Detect() Features {
	return Features{Arch: runtime.GOARCH, BwrapErr: "not Linux", LandlockErr: "not Linux", SeccompErr: "not Linux"}
}

// New always fails: the sandbox needs Linux.
func New(Options) (*Sandbox, error) {
	return nil, fmt.Errorf("%w: the sandbox needs Linux", ErrUnavailable)
}

// Mode is ModeNone.
func (s *Sandbox) Mode() Mode { return ModeNone }

// HelperPath is empty here.
func (s *Sandbox) HelperPath() string { return "" }

// Features are empty.
func (s *Sandbox) Features() Features { return Detect() }

// Describe describes no sandbox.
func (s *Sandbox) Describe(Policy) string { return Detect().Summary(ModeNone, false) }

// Command fails.
func (s *Sandbox) Command(context.Context, Policy, []string, string) (*Cmd, error) {
	return nil, fmt.Errorf("%w: the sandbox needs Linux", ErrUnavailable)
}

// LockApply does nothing here: commands have no layer.
func (c *Cmd) LockApply(context.Context) (func(), error) { return func() {}, nil }

// ApplyLockDir is "": commands have no layer here.
func (c *Cmd) ApplyLockDir() string { return "" }

// LockApplyRoots does nothing here: nothing is applied from a layer.
func LockApplyRoots(context.Context, string, []string) (func(), error) { return func() {}, nil }

// Layers is "": no layers here.
func (p Policy) Layers() string { return "" }

// MarkApplied does nothing here.
func (c *Cmd) MarkApplied() {}
