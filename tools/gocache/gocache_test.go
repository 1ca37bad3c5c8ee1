package gocache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeObject puts body under action in dir the way the go command lays out its cache.
func writeObject(t *testing.T, dir string, action []byte, body []byte) string {
	t.Helper()
	out := sha256.Sum256(body)
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, out[:], len(body), time.Now().UnixNano())
	for name, content := range map[string][]byte{name(action, "a"): []byte(entry), name(out[:], "d"): body} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, name(out[:], "d"))
}

func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprint(info.Mode(), info.Size(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			v += string(b)
		}
		m[p] = v
		return nil
	})
	return m
}

// client speaks to Serve as the go command does: one JSON request per line, then a blank line,
// then for a put the body as a quoted base64 string on its own line.
type client struct {
	t   *testing.T
	w   *bufio.Writer
	dec *json.Decoder
	id  int64
}

func (c *client) send(req request, body []byte) response {
	c.t.Helper()
	c.id++
	req.ID = c.id
	b, _ := json.Marshal(req)
	c.w.Write(b)
	c.w.WriteString("\n\n")
	if body != nil {
		c.w.WriteString(`"` + base64.StdEncoding.EncodeToString(body) + "\"\n")
	}
	if err := c.w.Flush(); err != nil {
		c.t.Fatal(err)
	}
	var res response
	if err := c.dec.Decode(&res); err != nil {
		c.t.Fatalf("reading the answer to %s: %v", req.Command, err)
	}
	if res.ID != req.ID {
		c.t.Fatalf("answer ID %d for request %d", res.ID, req.ID)
	}
	return res
}

func TestServeLayersReadsAndWritesOnlyAgentdsCache(t *testing.T) {
	own, user := t.TempDir(), t.TempDir()
	userAction := bytes.Repeat([]byte{1}, 32)
	userBody := []byte("compiled by the user")
	userPath := writeObject(t, user, userAction, userBody)
	// Same action in both layers: the user's wins (an object planted in agentd's cache by an
	// earlier command is not used for what the user has built).
	writeObject(t, own, userAction, []byte("planted by a command"))
	before := tree(t, user)

	c, err := Open(own, []string{user, filepath.Join(user, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- c.Serve(inR, outW); outW.Close() }()
	cl := &client{t: t, w: bufio.NewWriter(inW), dec: json.NewDecoder(outR)}
	var hello response
	if err := cl.dec.Decode(&hello); err != nil || hello.ID != 0 || strings.Join(hello.KnownCommands, ",") != "get,put,close" {
		t.Fatalf("first message %+v, %v", hello, err)
	}

	res := cl.send(request{Command: "get", ActionID: userAction}, nil)
	if res.Miss || res.DiskPath != userPath || res.Size != int64(len(userBody)) || res.Time == nil {
		t.Errorf("get of the user's object: %+v (want %s)", res, userPath)
	}
	newAction := bytes.Repeat([]byte{2}, 32)
	if res := cl.send(request{Command: "get", ActionID: newAction}, nil); !res.Miss {
		t.Errorf("get of an unknown action: %+v, want a miss", res)
	}
	body := bytes.Repeat([]byte("object file "), 50000) // larger than the reader's buffer
	sum := sha256.Sum256(body)
	res = cl.send(request{Command: "put", ActionID: newAction, OutputID: sum[:], BodySize: int64(len(body))}, body)
	if res.Err != "" || !strings.HasPrefix(res.DiskPath, own+"/") {
		t.Fatalf("put: %+v", res)
	}
	if got, _ := os.ReadFile(res.DiskPath); !bytes.Equal(got, body) {
		t.Errorf("put stored %d bytes, want the %d sent", len(got), len(body))
	}
	res = cl.send(request{Command: "get", ActionID: newAction}, nil)
	if res.Miss || !bytes.Equal(res.OutputID, sum[:]) || res.Size != int64(len(body)) {
		t.Errorf("get after put: %+v", res)
	}
	// A body that does not hash to its output ID is refused, and the stream stays in step.
	bad := bytes.Repeat([]byte{3}, 32)
	res = cl.send(request{Command: "put", ActionID: bad, OutputID: sum[:], BodySize: 5}, []byte("wrong"))
	if res.Err == "" {
		t.Errorf("put of a body that does not match its output ID: %+v, want an error", res)
	}
	if res := cl.send(request{Command: "get", ActionID: bad}, nil); !res.Miss {
		t.Errorf("get after a refused put: %+v, want a miss", res)
	}
	// An empty body (BodySize 0: nothing follows the request).
	empty := sha256.Sum256(nil)
	if res := cl.send(request{Command: "put", ActionID: bad, OutputID: empty[:]}, nil); res.Err != "" {
		t.Errorf("put of an empty body: %+v", res)
	}
	if res := cl.send(request{Command: "close"}, nil); res.Err != "" {
		t.Errorf("close: %+v", res)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	want := Stats{Gets: 4, HitsOwn: 1, HitsUser: 1, Misses: 2, Puts: 3, Errors: 1}
	if c.Stats != want {
		t.Errorf("stats %+v, want %+v", c.Stats, want)
	}
	after := tree(t, user)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("the user's cache changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestGetRejectsMalformedEntries(t *testing.T) {
	user := t.TempDir()
	action := bytes.Repeat([]byte{4}, 32)
	path := writeObject(t, user, action, []byte("object"))
	c, err := Open(t.TempDir(), []string{user})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.Get(action); !ok {
		t.Fatal("a well-formed object is a miss")
	}
	entry := filepath.Join(user, name(action, "a"))
	good, _ := os.ReadFile(entry)
	for what, mutate := range map[string]func(){
		"output of the wrong size": func() { os.WriteFile(path, []byte("objec"), 0o644) },
		"output is a directory":    func() { os.Remove(path); os.Mkdir(path, 0o755) },
		"output is a symlink":      func() { os.Remove(path); os.Symlink("/etc/passwd", path) },
		"entry for another action": func() { os.WriteFile(entry, bytes.Replace(good, []byte("0404"), []byte("0505"), 1), 0o644) },
		"entry too long":           func() { os.WriteFile(entry, append(append([]byte{}, good...), 'x'), 0o644) },
		"entry truncated":          func() { os.WriteFile(entry, good[:len(good)-2], 0o644) },
		"entry of another version": func() { os.WriteFile(entry, append([]byte("v2"), good[2:]...), 0o644) },
	} {
		os.RemoveAll(path)
		writeObject(t, user, action, []byte("object"))
		mutate()
		if h, ok := c.Get(action); ok {
			t.Errorf("%s: a hit %+v", what, h)
		}
	}
	if _, ok := c.Get([]byte("short")); ok {
		t.Error("a short action ID is a hit")
	}
}

func TestTrimRemovesUnusedObjectsOncePerDay(t *testing.T) {
	own := t.TempDir()
	c, err := Open(own, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := time.Now()
	c.now = func() time.Time { return now }
	oldA, newA := bytes.Repeat([]byte{6}, 32), bytes.Repeat([]byte{7}, 32)
	oldPath := writeObject(t, own, oldA, []byte("old"))
	newPath := writeObject(t, own, newA, []byte("new"))
	long := now.Add(-trimLimit - 2*mtimeInterval)
	for _, p := range []string{oldPath, filepath.Join(own, name(oldA, "a"))} {
		os.Chtimes(p, long, long)
	}
	if err := c.Trim(); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(oldA); ok {
		t.Error("an object unused for six days survived Trim")
	}
	if _, ok := c.Get(newA); !ok {
		t.Error("a fresh object was trimmed")
	}
	// Within a day, Trim does nothing.
	os.Chtimes(newPath, long, long)
	os.Chtimes(filepath.Join(own, name(newA, "a")), long, long)
	c.now = func() time.Time { return now.Add(time.Hour) }
	c.Trim()
	if _, err := os.Stat(newPath); err != nil {
		t.Errorf("Trim ran again within a day: %v", err)
	}
}

func TestSandboxEnv(t *testing.T) {
	dir := t.TempDir()
	user, own, ws := filepath.Join(dir, "user cache"), filepath.Join(dir, "agentd"), filepath.Join(dir, "ws")
	for _, d := range []string{user, own, ws, filepath.Join(ws, "gocache")} {
		os.MkdirAll(d, 0o755)
	}
	env, note := SandboxEnv("/usr/lib/agentd-sandbox", own, user, []string{ws})
	want := []string{"GOCACHE=" + own, "GOCACHEPROG=/usr/lib/agentd-sandbox " + Arg + " -w " + own + " -r '" + user + "'"}
	if note != "" || strings.Join(env, "\n") != strings.Join(want, "\n") {
		t.Errorf("SandboxEnv = %q, %q; want %q", env, note, want)
	}
	for what, c := range map[string]struct{ prog, own, user string }{
		"no program":               {"", own, user},
		"no user cache":            {"/bin/p", own, ""},
		"user cache off":           {"/bin/p", own, "off"},
		"user cache missing":       {"/bin/p", own, filepath.Join(dir, "nope")},
		"user cache is agentd's":   {"/bin/p", own, own},
		"agentd's inside user's":   {"/bin/p", filepath.Join(user, "agentd"), user},
		"user cache in workspace":  {"/bin/p", own, filepath.Join(ws, "gocache")},
		"unquotable program path":  {`/bin/a b'c"`, own, user},
		"relative user cache path": {"/bin/p", own, "cache"},
	} {
		env, note := SandboxEnv(c.prog, c.own, c.user, []string{ws})
		if note == "" || len(env) != 1 || env[0] != "GOCACHE="+c.own {
			t.Errorf("%s: SandboxEnv = %q, %q; want only GOCACHE and a reason", what, env, note)
		}
	}
}

// Each workspace has its own layer; a session sweeps the layers unused for five days and what the
// shared layer of earlier versions left.
func TestOpenLayer(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	a, err := OpenLayer(dir, "/home/u/src/shop", now)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := OpenLayer(dir, "/home/u/work/shop", now)
	c, _ := OpenLayer(dir, "/home/u/old", now.Add(-trimLimit-2*mtimeInterval))
	if a == b || filepath.Dir(a) != filepath.Dir(b) || !strings.HasPrefix(filepath.Base(a), "shop-") {
		t.Fatalf("layers %s and %s", a, b)
	}
	if again, _ := OpenLayer(dir, "/home/u/src/shop/", now); again != a {
		t.Errorf("the same workspace got another layer: %s, %s", again, a)
	}
	if _, err := os.Stat(c); !os.IsNotExist(err) {
		t.Errorf("the layer unused for five days was kept: %v", err)
	}
	for _, l := range []string{a, b} {
		if st, err := os.Stat(l); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("layer %s: %v", l, err)
		}
	}
	// The shared layer of earlier versions: its object directories and stamp go, the rest stays.
	for _, n := range []string{"0a/x-d", "ff/y-a", "trim.txt", "keep/z"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755)
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644)
	}
	OpenLayer(dir, "/home/u/src/shop", now)
	for n, want := range map[string]bool{"0a": false, "ff": false, "trim.txt": false, "keep/z": true, "ws": true} {
		if _, err := os.Stat(filepath.Join(dir, n)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", n, err == nil, want)
		}
	}
}
