package builtin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/tools"
)

// capture keeps what a command printed within bounded memory: the first headMax bytes, the
// last tailMax bytes and the total count. ANSI escape sequences are stripped as the bytes
// arrive. Once the output outgrows head and tail, everything (from the first byte) also goes
// to a spill file, up to spillMax bytes. Progress goes out through prog. It is used by one
// goroutine; prog has its own lock.
type capture struct {
	head    []byte
	headMax int
	tail    ring
	total   int64

	strip ansiStripper
	clean []byte // reused buffer for stripped output

	spillDir  string
	spillMax  int64
	spill     *os.File
	spillPath string
	spilled   int64
	spillErr  error
	spillDone bool // a spill was attempted

	prog *progress
}

func newCapture(headMax, tailMax int, spillDir string, spillMax int64, prog *progress) *capture {
	return &capture{head: make([]byte, 0, headMax), headMax: headMax, tail: ring{buf: make([]byte, tailMax)},
		spillDir: spillDir, spillMax: spillMax, prog: prog}
}

// readFrom copies r into the capture until EOF or an error (a deadline, a closed pipe).
func (c *capture) readFrom(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (c *capture) write(raw []byte) {
	c.clean = c.strip.strip(c.clean[:0], raw)
	b := c.clean
	if len(b) == 0 {
		return
	}
	c.total += int64(len(b))
	if c.prog != nil {
		c.prog.add(b)
	}
	if room := c.headMax - len(c.head); room > 0 {
		take := min(room, len(b))
		c.head = append(c.head, b[:take]...)
		b = b[take:]
	}
	if len(b) == 0 {
		return
	}
	if !c.spillDone && c.tail.n+len(b) > len(c.tail.buf) {
		// The tail is about to drop bytes: from now on the full output lives in a file.
		c.startSpill()
	}
	if c.spill != nil {
		c.toSpill(b)
	}
	c.tail.write(b)
}

func (c *capture) startSpill() {
	c.spillDone = true
	if c.spillDir == "" {
		return
	}
	f, name, err := createSpill(c.spillDir) // never through a link a command planted
	if err != nil {
		c.spillErr = err
		return
	}
	c.spill, c.spillPath = f, name
	c.toSpill(c.head)
	c.toSpill(c.tail.bytes())
}

func (c *capture) toSpill(b []byte) {
	if room := c.spillMax - c.spilled; int64(len(b)) > room {
		b = b[:max(room, 0)]
	}
	if len(b) == 0 || c.spillErr != nil {
		return
	}
	n, err := c.spill.Write(b)
	c.spilled += int64(n)
	if err != nil {
		c.spillErr = err
	}
}

// close finishes the spill file.
func (c *capture) close() {
	if c.spill != nil {
		if err := c.spill.Close(); err != nil && c.spillErr == nil {
			c.spillErr = err
		}
	}
}

// truncated reports whether the middle of the output was dropped.
func (c *capture) truncated() bool { return c.total > int64(len(c.head)+c.tail.n) }

// text is the output the model sees: head and tail with the omitted middle marked, cut on
// UTF-8 boundaries, invalid UTF-8 replaced.
func (c *capture) text() string {
	if !c.truncated() {
		return strings.ToValidUTF8(string(c.head)+string(c.tail.bytes()), "\uFFFD")
	}
	head := c.head[:completeLen(c.head)]
	tail := c.tail.bytes()
	skip := 0
	for skip < len(tail) && skip < utf8.UTFMax && !utf8.RuneStart(tail[skip]) {
		skip++
	}
	tail = tail[skip:]
	omitted := c.total - int64(len(head)) - int64(len(tail))
	return strings.ToValidUTF8(fmt.Sprintf("%s\n[… %d bytes omitted …]\n%s", head, omitted, tail), "\uFFFD")
}

// completeLen is the length of b without an incomplete UTF-8 sequence at its end.
func completeLen(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// ring keeps the last len(buf) bytes written to it.
type ring struct {
	buf   []byte
	start int // index of the oldest byte
	n     int // bytes held
}

func (r *ring) write(b []byte) {
	size := len(r.buf)
	if size == 0 {
		return
	}
	if len(b) >= size {
		copy(r.buf, b[len(b)-size:])
		r.start, r.n = 0, size
		return
	}
	end := (r.start + r.n) % size
	k := copy(r.buf[end:], b)
	copy(r.buf, b[k:])
	if over := r.n + len(b) - size; over > 0 {
		r.start = (r.start + over) % size
		r.n = size
	} else {
		r.n += len(b)
	}
}

func (r *ring) bytes() []byte {
	out := make([]byte, 0, r.n)
	if r.start+r.n <= len(r.buf) {
		return append(out, r.buf[r.start:r.start+r.n]...)
	}
	out = append(out, r.buf[r.start:]...)
	return append(out, r.buf[:r.start+r.n-len(r.buf)]...)
}

// ansiStripper removes terminal escape sequences from a byte stream: CSI (colours, cursor
// movement), OSC (titles, hyperlinks), DCS/SOS/PM/APC strings and two- or three-byte escapes.
// Its state carries over between chunks, so a sequence split across reads is still removed.
type ansiStripper struct {
	state  int
	strLen int // bytes swallowed by the current OSC/DCS string
}

const (
	ansiNormal = iota
	ansiEsc    // after ESC
	ansiCSI    // after ESC [
	ansiInter  // after ESC and an intermediate byte (ESC ( B)
	ansiString // OSC, DCS, SOS, PM, APC: until BEL or ESC \
	ansiStrEsc // ESC inside a string
)

// maxEscString bounds an unterminated OSC/DCS string: past it the stripper gives up and shows
// the bytes, so a stray ESC ] cannot swallow the rest of the output.
const maxEscString = 4096

func (s *ansiStripper) strip(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch s.state {
		case ansiNormal:
			// Copy up to the next ESC at once: most output has none.
			j := bytes.IndexByte(src[i:], 0x1b)
			if j < 0 {
				return append(dst, src[i:]...)
			}
			dst = append(dst, src[i:i+j]...)
			i += j
			s.state = ansiEsc
		case ansiEsc:
			switch {
			case c == '[':
				s.state = ansiCSI
			case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
				s.state, s.strLen = ansiString, 0
			case c >= 0x20 && c <= 0x2f:
				s.state = ansiInter
			case c == 0x1b:
				// ESC ESC: the first one is dropped, the second starts over.
			case c < 0x20:
				s.state = ansiNormal
				dst = append(dst, c)
			default:
				s.state = ansiNormal
			}
		case ansiCSI:
			switch {
			case c >= 0x40 && c <= 0x7e:
				s.state = ansiNormal
			case c < 0x20 || c > 0x7e:
				// Not a CSI byte: the sequence was broken; keep the byte.
				s.state = ansiNormal
				if c == 0x1b {
					s.state = ansiEsc
				} else {
					dst = append(dst, c)
				}
			}
		case ansiInter:
			if c >= 0x30 && c <= 0x7e {
				s.state = ansiNormal
			} else if c < 0x20 || c > 0x7e {
				s.state = ansiNormal
				dst = append(dst, c)
			}
		case ansiString:
			switch c {
			case 0x07:
				s.state = ansiNormal
			case 0x1b:
				s.state = ansiStrEsc
			default:
				if s.strLen++; s.strLen > maxEscString {
					s.state = ansiNormal
					dst = append(dst, c)
				}
			}
		case ansiStrEsc:
			if c == '\\' {
				s.state = ansiNormal
			} else {
				s.state = ansiString
			}
		}
	}
	return dst
}

// maxPending bounds the output held between two progress updates.
const maxPending = 16 << 10

// progress streams a command's output as throttled progress updates: at most one every
// interval, each carrying what arrived since the previous one (its last maxPending bytes).
type progress struct {
	ctx      context.Context
	interval time.Duration

	mu      sync.Mutex
	pending []byte
	dropped int64
	stop    chan struct{}
	done    chan struct{}
}

func startProgress(ctx context.Context, interval time.Duration) *progress {
	p := &progress{ctx: ctx, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.flush(false)
		case <-p.stop:
			p.flush(true)
			return
		}
	}
}

func (p *progress) add(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, b...)
	if over := len(p.pending) - maxPending; over > 0 {
		p.dropped += int64(over)
		p.pending = append(p.pending[:0], p.pending[over:]...)
	}
}

// flush sends what is pending; a rune cut at the end waits for its other bytes unless final.
func (p *progress) flush(final bool) {
	p.mu.Lock()
	n := len(p.pending)
	if !final {
		n = completeLen(p.pending)
	}
	text := string(p.pending[:n])
	if p.dropped > 0 {
		text = fmt.Sprintf("[… %d bytes …]\n%s", p.dropped, text)
	}
	p.pending = append(p.pending[:0], p.pending[n:]...)
	p.dropped = 0
	p.mu.Unlock()
	if text != "" {
		tools.ReportProgress(p.ctx, tools.Progress{Text: strings.ToValidUTF8(text, "\uFFFD")})
	}
}

// close sends what is pending and stops the updates.
func (p *progress) close() {
	close(p.stop)
	<-p.done
}
