package gocache

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// SandboxEnv returns the variables that give sandboxed go commands their build cache: GOCACHE is
// always own (agentd's cache, writable in the sandbox); GOCACHEPROG runs prog (a binary that
// answers to Arg: the sandbox helper, visible read-only in every sandbox) as a layered cache over
// user (the user's GOCACHE, read-only), when that layer is usable. writable are the directories
// the command may write (workspace roots, its tmp dir): a user cache inside one of them is not
// layered. note says why there is no layer ("" when there is one).
func SandboxEnv(prog, own, user string, writable []string) (env []string, note string) {
	env = []string{"GOCACHE=" + own}
	switch {
	case prog == "" || !filepath.IsAbs(prog):
		return env, "no cache program binary"
	case user == "" || user == "off" || !filepath.IsAbs(user):
		return env, fmt.Sprintf("no usable user GOCACHE (%q)", user)
	}
	user, own = filepath.Clean(user), filepath.Clean(own)
	if st, err := os.Stat(user); err != nil || !st.IsDir() {
		return env, fmt.Sprintf("user GOCACHE %s is not a directory", user)
	}
	if within(user, own) || within(own, user) {
		return env, fmt.Sprintf("user GOCACHE %s and agentd's cache %s overlap", user, own)
	}
	for _, w := range writable {
		if w != "" && within(user, filepath.Clean(w)) {
			return env, fmt.Sprintf("user GOCACHE %s is inside %s, which commands may write", user, w)
		}
	}
	words := []string{prog, Arg, "-w", own, "-r", user}
	for i, w := range words {
		q, ok := quote(w)
		if !ok {
			return env, fmt.Sprintf("cannot quote %q for GOCACHEPROG", w)
		}
		words[i] = q
	}
	return append(env, "GOCACHEPROG="+strings.Join(words, " ")), ""
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// quote writes s as one word of the go command's GOCACHEPROG splitting: bare when it has no
// white space and does not start with a quote, else in the quote it does not contain (there is
// no escaping).
func quote(s string) (string, bool) {
	if s != "" && !strings.ContainsAny(s, " \t\r\n") && s[0] != '\'' && s[0] != '"' {
		return s, true
	}
	if !strings.Contains(s, "'") {
		return "'" + s + "'", true
	}
	if !strings.Contains(s, `"`) {
		return `"` + s + `"`, true
	}
	return "", false
}

var (
	userOnce sync.Once
	userDir  string
	userErr  error
)

// UserDir is the user's GOCACHE as the user's own go command sees it (`go env GOCACHE` with
// this process's environment), asked once per process; "" when there is no go command or no
// cache.
func UserDir() (string, error) {
	userOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			userErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, goBin, "env", "GOCACHE").Output()
		if err != nil {
			userErr = fmt.Errorf("go env GOCACHE: %w", err)
			return
		}
		if d := strings.TrimSpace(string(out)); d != "off" {
			userDir = d
		}
	})
	return userDir, userErr
}
