package builtin

import (
	"slices"
	"sync"

	"github.com/agentd/agentd/tools"
)

// planMemo remembers, for the one call an edit or write tool is preparing, what the pipeline
// asks of it several times in a row, so that the change is planned (resolve, read, hash,
// derive) once before the gate instead of once per question:
//
//   - the plan Validate computed, taken by the Preview that the pipeline runs right after it
//     (the same file state a few microseconds later: both run before the gate, and the binding
//     of the approval is checked against a fresh plan after it anyway, in Execute);
//   - the permission of the previewed change — its canonical path as that plan resolved it —
//     which the policy, the checkpoint and diagnostics middleware and the after-hook ask for.
//     The previewed path is the one Execute may write: a change that resolves to another path
//     after the gate does not match the approved binding and writes nothing, so checkpoints
//     keep the pre-image of exactly the file that is written.
//
// A call is the same call when both its pointer and its decoded arguments are; anything else
// misses and is computed afresh. It holds one call at a time (calls that write are prepared one
// by one).
type planMemo struct {
	mu    sync.Mutex
	call  *tools.Call
	args  any
	plan  *planned // until Preview takes it
	perm  tools.Permission
	valid bool // perm is set
}

// putPlan remembers the plan Validate computed for call.
func (m *planMemo) putPlan(call *tools.Call, c *planned) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.call, m.args, m.plan, m.perm, m.valid = call, call.Args, c, tools.Permission{}, false
}

// takePlan returns the plan Validate computed for call, once, or nil.
func (m *planMemo) takePlan(call *tools.Call) *planned {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.call != call || m.args != call.Args || m.plan == nil {
		return nil
	}
	c := m.plan
	m.plan = nil
	return c
}

// putPermission remembers the permission of the change previewed for call.
func (m *planMemo) putPermission(call *tools.Call, perm tools.Permission) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.call, m.args, m.plan, m.perm, m.valid = call, call.Args, nil, perm, true
}

// permission returns the permission remembered for call.
func (m *planMemo) permission(call *tools.Call) (tools.Permission, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.valid || m.call != call || m.args != call.Args {
		return tools.Permission{}, false
	}
	perm := m.perm
	perm.Paths = slices.Clone(perm.Paths)
	return perm, true
}
