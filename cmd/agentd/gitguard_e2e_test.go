package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/ollama/ollamatest"
)

// TestRunUndoesGitMetadataACommandPlants: in yolo mode, without a terminal, the model's command
// plants a nested repository whose configuration names a program. agentd undoes it, keeps it
// in its quarantine and tells the model; the user's own `git status` afterwards runs nothing.
func TestRunUndoesGitMetadataACommandPlants(t *testing.T) {
	e := newRunEnv(t)
	marker := filepath.Join(t.TempDir(), "ran")
	script := "printf '#!/bin/sh\\ntouch " + marker + "\\necho\\n' > evil.sh && chmod +x evil.sh && " +
		`git init -q sub && git -C sub config core.fsmonitor "$PWD/evil.sh" && echo planted`
	args, _ := json.Marshal(map[string]string{"command": script})
	e.ollama.Enqueue(ollamatest.Calls(ollamatest.Call("bash", string(args))), ollamatest.Text("Done."))
	cmd := exec.Command(agentdBin, "run", "--approval", "yolo", "set things up")
	cmd.Dir, cmd.Env = e.ws, e.env()
	out, err := cmd.CombinedOutput()
	// Exit status 4: the turn finished, but a call was refused (the undone command is
	// permission_denied).
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitRefused {
		t.Fatalf("%v (want exit status %d)\n%s", err, exitRefused, out)
	}
	tr := e.lastToolResult()
	if !strings.Contains(tr, "planted") {
		t.Fatalf("the command did not run (was it sandboxed and allowed?):\n%s\n%s", tr, out)
	}
	quarantine := filepath.Join(e.home, "state", "agentd", "quarantine")
	if !strings.Contains(tr, "created sub/.git (a nested git repository): moved to "+quarantine) {
		t.Errorf("the model was not told what was undone:\n%s", tr)
	}
	for _, dir := range []string{e.ws, filepath.Join(e.ws, "sub")} {
		st := exec.Command("git", "status")
		st.Dir = dir
		st.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		_, _ = st.CombinedOutput() // the exit status does not matter, the marker does
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the user's git status ran the program the command planted:\n%s", tr)
	}
	kept, _ := filepath.Glob(filepath.Join(quarantine, "*", "*", "root0", "sub", ".git", "config"))
	if len(kept) != 1 {
		t.Errorf("the planted repository is not in the quarantine: %v", kept)
	}
}
