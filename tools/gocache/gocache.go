// Package gocache is a layered Go build cache for sandboxed commands: a GOCACHEPROG program
// (see `go help environment` and the protocol of cmd/go/internal/cacheprog) that the go command
// starts inside the sandbox.
//
// Reads look in the user's GOCACHE first, which the program only ever reads, then in agentd's
// own cache; writes go only to agentd's cache. The sandbox makes the user's cache read-only for the
// command and for this program (it is the command's child), so a sandboxed command starts with
// the user's compiled standard library and dependencies but cannot plant an object that the
// user's own builds would later use. The user's builds never use GOCACHEPROG or agentd's cache.
//
// Both layers use the go command's on-disk layout (DIR/xx/<hex action ID>-a entries naming an
// output, DIR/xx/<hex output ID>-d outputs), so agentd's cache also works as a plain GOCACHE, and
// what this program writes is what the go command itself would write.
package gocache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Arg is the reserved argv[1] that switches a binary into cache-program mode (Main). The
// sandbox helper binaries (agentd-sandbox, agentd) answer to it.
const Arg = "__gocache"

const (
	hashSize = sha256.Size
	hexSize  = 2 * hashSize
	// An action entry is "v1 <hex action> <hex output> <size, 20 wide> <unix nanos, 20 wide>\n".
	entrySize = 3 + hexSize + 1 + hexSize + 1 + 20 + 1 + 20 + 1

	// Like the go command's own cache: an entry's mtime is refreshed at most once per
	// mtimeInterval when used, and entries unused for trimLimit are removed, at most once per
	// trimInterval (the go command never trims a cache behind GOCACHEPROG).
	mtimeInterval = time.Hour
	trimInterval  = 24 * time.Hour
	trimLimit     = 5 * 24 * time.Hour
)

// Stats count what one run of the program answered.
type Stats struct {
	Gets     int `json:"gets"`
	HitsOwn  int `json:"hitsOwn"`  // found in agentd's cache
	HitsUser int `json:"hitsUser"` // found in the user's cache
	Misses   int `json:"misses"`
	Puts     int `json:"puts"`
	Errors   int `json:"errors"`
}

func (s Stats) String() string {
	return fmt.Sprintf("gets %d (hits: agentd %d, user %d; misses %d), puts %d, errors %d",
		s.Gets, s.HitsOwn, s.HitsUser, s.Misses, s.Puts, s.Errors)
}

// Cache is the layered cache: the read layers, in order, then agentd's own, the only one written.
type Cache struct {
	own    *os.Root
	ownDir string
	read   []string
	now    func() time.Time
	Stats  Stats
}

// Open opens the layered cache. own must be an existing absolute directory; read directories
// that do not exist are skipped when looked up (a layer the sandbox hides is a miss).
func Open(own string, read []string) (*Cache, error) {
	if !filepath.IsAbs(own) {
		return nil, fmt.Errorf("gocache: cache directory %q is not absolute", own)
	}
	root, err := os.OpenRoot(own)
	if err != nil {
		return nil, fmt.Errorf("gocache: %w", err)
	}
	c := &Cache{own: root, ownDir: filepath.Clean(own), now: time.Now}
	for _, r := range read {
		if !filepath.IsAbs(r) {
			root.Close()
			return nil, fmt.Errorf("gocache: read-only layer %q is not absolute", r)
		}
		c.read = append(c.read, filepath.Clean(r))
	}
	return c, nil
}

// Close releases the cache.
func (c *Cache) Close() error { return c.own.Close() }

// name is the path of an id's file relative to a cache directory.
func name(id []byte, suffix string) string {
	h := hex.EncodeToString(id)
	return h[:2] + "/" + h + "-" + suffix
}

// parseEntry checks an action entry for action and returns its output ID, size and time.
func parseEntry(b []byte, action []byte) (out []byte, size int64, t time.Time, ok bool) {
	if len(b) != entrySize || string(b[:3]) != "v1 " || b[3+hexSize] != ' ' ||
		b[4+2*hexSize] != ' ' || b[5+2*hexSize+20] != ' ' || b[entrySize-1] != '\n' {
		return nil, 0, t, false
	}
	id, err := hex.DecodeString(string(b[3 : 3+hexSize]))
	if err != nil || !bytes.Equal(id, action) {
		return nil, 0, t, false
	}
	if out, err = hex.DecodeString(string(b[4+hexSize : 4+2*hexSize])); err != nil {
		return nil, 0, t, false
	}
	size, err = strconv.ParseInt(strings.TrimLeft(string(b[5+2*hexSize:5+2*hexSize+20]), " "), 10, 64)
	if err != nil || size < 0 {
		return nil, 0, t, false
	}
	nanos, err := strconv.ParseInt(strings.TrimLeft(string(b[6+2*hexSize+20:entrySize-1]), " "), 10, 64)
	if err != nil || nanos < 0 {
		return nil, 0, t, false
	}
	return out, size, time.Unix(0, nanos), true
}

// Hit is a cache hit.
type Hit struct {
	OutputID []byte
	Size     int64
	Time     time.Time
	DiskPath string
	User     bool // from the user's cache
}

// Get looks action up in the read-only layers (the user's cache), then in agentd's cache. The
// user's layer comes first: every command can write agentd's cache, so an object planted there
// by an earlier command is used only for actions the user has never built. Anything unreadable,
// malformed, not a regular file or of the wrong size is a miss in that layer.
func (c *Cache) Get(action []byte) (Hit, bool) {
	c.Stats.Gets++
	if len(action) != hashSize {
		c.Stats.Misses++
		return Hit{}, false
	}
	for _, dir := range c.read {
		if h, ok := getDir(dir, action); ok {
			c.Stats.HitsUser++
			h.User = true
			return h, true
		}
	}
	if h, ok := c.getOwn(action); ok {
		c.Stats.HitsOwn++
		return h, true
	}
	c.Stats.Misses++
	return Hit{}, false
}

func (c *Cache) getOwn(action []byte) (Hit, bool) {
	ename := name(action, "a")
	b, err := readSmall(c.own.OpenFile(ename, os.O_RDONLY, 0))
	if err != nil {
		return Hit{}, false
	}
	out, size, t, ok := parseEntry(b, action)
	if !ok {
		return Hit{}, false
	}
	dname := name(out, "d")
	st, err := c.own.Lstat(dname)
	if err != nil || !st.Mode().IsRegular() || st.Size() != size {
		return Hit{}, false
	}
	now := c.now()
	for _, n := range []string{ename, dname} {
		if st, err := c.own.Lstat(n); err == nil && now.Sub(st.ModTime()) >= mtimeInterval {
			c.own.Chtimes(n, now, now) // best effort: keeps trimming from removing what is used
		}
	}
	return Hit{OutputID: out, Size: size, Time: t, DiskPath: filepath.Join(c.ownDir, filepath.FromSlash(dname))}, true
}

// getDir reads a layer it never writes (not even mtimes).
func getDir(dir string, action []byte) (Hit, bool) {
	b, err := readSmall(os.OpenFile(filepath.Join(dir, filepath.FromSlash(name(action, "a"))), os.O_RDONLY, 0))
	if err != nil {
		return Hit{}, false
	}
	out, size, t, ok := parseEntry(b, action)
	if !ok {
		return Hit{}, false
	}
	p := filepath.Join(dir, filepath.FromSlash(name(out, "d")))
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() != size {
		return Hit{}, false
	}
	return Hit{OutputID: out, Size: size, Time: t, DiskPath: p}, true
}

// readSmall reads an action entry (one byte more than an entry, to see a longer file).
func readSmall(f *os.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, entrySize+1)
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	return b[:n], nil
}

// Put stores body (size bytes, whose SHA-256 must be output) under action in agentd's cache and
// returns the path of the stored output.
func (c *Cache) Put(action, output []byte, size int64, body io.Reader) (string, error) {
	c.Stats.Puts++
	if len(action) != hashSize || len(output) != hashSize || size < 0 {
		return "", errors.New("gocache: put: malformed action or output ID")
	}
	dname := name(output, "d")
	if err := c.own.MkdirAll(dname[:2], 0o777); err != nil {
		return "", err
	}
	if st, err := c.own.Lstat(dname); err == nil && st.Mode().IsRegular() && st.Size() == size {
		// Same content (same hash) already there: keep it, drain the body.
		if _, err := io.Copy(io.Discard, body); err != nil {
			return "", err
		}
	} else {
		h := sha256.New()
		err := c.writeAtomic(dname, func(w io.Writer) error {
			n, err := io.Copy(io.MultiWriter(w, h), body)
			if err == nil && n != size {
				err = fmt.Errorf("gocache: put: body has %d bytes, announced %d", n, size)
			}
			return err
		})
		if err != nil {
			return "", err
		}
		if !bytes.Equal(h.Sum(nil), output) {
			c.own.Remove(dname)
			return "", errors.New("gocache: put: body does not hash to its output ID")
		}
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, output, size, c.now().UnixNano())
	ename := name(action, "a")
	if err := c.own.MkdirAll(ename[:2], 0o777); err != nil {
		return "", err
	}
	if err := c.writeAtomic(ename, func(w io.Writer) error { _, err := io.WriteString(w, entry); return err }); err != nil {
		return "", err
	}
	return filepath.Join(c.ownDir, filepath.FromSlash(dname)), nil
}

// writeAtomic writes name through a new temporary file in the same directory and a rename, so
// readers (other go commands) never see a partial file.
func (c *Cache) writeAtomic(name string, write func(io.Writer) error) error {
	var f *os.File
	var tmp string
	var err error
	for i := 0; i < 100; i++ {
		tmp = fmt.Sprintf("%s.tmp%d-%d", name, os.Getpid(), c.now().UnixNano()+int64(i))
		f, err = c.own.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.own.Rename(tmp, name)
	}
	if err != nil {
		c.own.Remove(tmp)
	}
	return err
}

// Trim removes entries and outputs of agentd's cache unused for five days, at most once a day
// (the go command does this for a plain GOCACHE, never for one behind GOCACHEPROG). It records
// the time in trim.txt, as the go command does, so either may do it.
func (c *Cache) Trim() error {
	now := c.now()
	if b, err := c.own.ReadFile("trim.txt"); err == nil {
		if t, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			if d := now.Sub(time.Unix(t, 0)); d < trimInterval && d > -mtimeInterval {
				return nil
			}
		}
	}
	cutoff := now.Add(-trimLimit - mtimeInterval)
	for i := 0; i < 256; i++ {
		sub := fmt.Sprintf("%02x", i)
		d, err := c.own.Open(sub)
		if err != nil {
			continue
		}
		ents, _ := d.ReadDir(-1)
		d.Close()
		for _, e := range ents {
			n := e.Name()
			if !strings.HasSuffix(n, "-a") && !strings.HasSuffix(n, "-d") && !strings.Contains(n, ".tmp") {
				continue
			}
			if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
				c.own.RemoveAll(sub + "/" + n)
			}
		}
	}
	return c.writeAtomic("trim.txt", func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d", now.Unix())
		return err
	})
}

// request and response are the messages of the GOCACHEPROG protocol (field names as the go
// command encodes them).
type request struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type response struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// Serve speaks the protocol on r and w until a close request or the end of r. Requests are
// answered in order.
func (c *Cache) Serve(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	send := func(res response) error {
		if err := enc.Encode(res); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := send(response{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) == 0 {
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			continue
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			return fmt.Errorf("gocache: bad request: %w", err)
		}
		res := response{ID: req.ID}
		switch req.Command {
		case "get":
			if h, ok := c.Get(req.ActionID); ok {
				t := h.Time
				res.OutputID, res.Size, res.Time, res.DiskPath = h.OutputID, h.Size, &t, h.DiskPath
			} else {
				res.Miss = true
			}
		case "put":
			body := io.Reader(bytes.NewReader(nil))
			var qr *quotedReader
			if req.BodySize > 0 {
				if err := skipToQuote(br); err != nil {
					return fmt.Errorf("gocache: put body: %w", err)
				}
				qr = &quotedReader{r: br}
				body = base64.NewDecoder(base64.StdEncoding, qr)
			}
			p, err := c.Put(req.ActionID, req.OutputID, req.BodySize, body)
			if qr != nil && !qr.done {
				// Keep the stream in step whatever happened to the body.
				if _, derr := io.Copy(io.Discard, qr); derr != nil {
					return fmt.Errorf("gocache: put body: %w", derr)
				}
			}
			if err != nil {
				c.Stats.Errors++
				res.Err = err.Error()
			} else {
				res.DiskPath = p
			}
		case "close":
			c.Trim()
			return send(res)
		default:
			res.Err = fmt.Sprintf("gocache: unknown command %q", req.Command)
		}
		if err := send(res); err != nil {
			return err
		}
	}
}

// skipToQuote consumes whitespace up to and including the opening quote of a body.
func skipToQuote(br *bufio.Reader) error {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return err
		}
		switch b {
		case '"':
			return nil
		case ' ', '\n', '\r', '\t':
		default:
			return fmt.Errorf("unexpected byte %q before a body", b)
		}
	}
}

// quotedReader reads up to the closing quote of a body (base64 needs no escapes).
type quotedReader struct {
	r    *bufio.Reader
	done bool
}

func (q *quotedReader) Read(p []byte) (int, error) {
	if q.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	// Only what is buffered (at least a byte): Peek(n) would wait for n bytes, and the go
	// command sends nothing more before it has the answer.
	if _, err := q.r.Peek(1); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	chunk, _ := q.r.Peek(min(len(p), q.r.Buffered()))
	if i := bytes.IndexByte(chunk, '"'); i >= 0 {
		n := copy(p, chunk[:i])
		q.r.Discard(i + 1)
		q.done = true
		return n, nil
	}
	n := copy(p, chunk)
	q.r.Discard(n)
	return n, nil
}

// Main runs the cache program: args are the words after Arg. It returns the exit status.
//
//	__gocache -w DIR [-r DIR]... [-v]
func Main(args []string) int {
	fl := flag.NewFlagSet(Arg, flag.ContinueOnError)
	own := fl.String("w", "", "agentd's cache `dir` (read and written)")
	var read multi
	fl.Var(&read, "r", "a read-only cache `dir` (the user's GOCACHE); repeatable")
	verbose := fl.Bool("v", false, "print statistics to stderr when closed")
	if err := fl.Parse(args); err != nil || fl.NArg() != 0 || *own == "" {
		fmt.Fprintf(os.Stderr, "usage: %s -w DIR [-r DIR]... [-v] (a GOCACHEPROG program started by the go command)\n", Arg)
		return 2
	}
	c, err := Open(*own, read)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	err = c.Serve(os.Stdin, os.Stdout)
	if *verbose {
		fmt.Fprintf(os.Stderr, "agentd gocache: %s\n", c.Stats)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }
