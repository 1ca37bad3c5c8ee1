package fsafe

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"

	"github.com/agentd/agentd/tools"
)

// ReadFile reads the whole regular file at p from disk, through its root, and stamps it. A file
// larger than maxBytes is an oversized error that tells the model to read in pages; nothing is
// returned then. It records nothing: FS.Read does.
func ReadFile(p Path, maxBytes int64) ([]byte, Stamp, error) {
	f, info, err := p.openRegular()
	if err != nil {
		return nil, Stamp{}, err
	}
	defer f.Close()
	if info.Size > maxBytes {
		return nil, Stamp{}, oversizedRead(p, info.Size, maxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, Stamp{}, mapErr(p, err)
	}
	if int64(len(data)) > maxBytes { // it grew while being read
		return nil, Stamp{}, oversizedRead(p, int64(len(data)), maxBytes)
	}
	st := Stamp{Source: SourceDisk, Size: int64(len(data)), Hash: sha256.Sum256(data),
		ModTime: info.ModTime, Dev: info.Dev, Inode: info.Inode, Links: info.Links, Taken: time.Now()}
	return data, st, nil
}

func oversizedRead(p Path, size, limit int64) error {
	return tools.Errorf(tools.Oversized, "%s is %s, more than the %s that can be read at once; read it in parts with offset and limit (lines)",
		p.rel, sizeText(size), sizeText(limit))
}

// sizeText formats a byte count for a message the model reads.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Line is one line of a Page.
type Line struct {
	// N is the 1-based line number.
	N int
	// Text is the line without its ending ("\n" or "\r\n"), cut to Limits.LineBytes (on a UTF-8
	// boundary) when Cut.
	Text string
	Cut  bool
}

// Page is a run of lines of a file, from FS.ReadLines.
type Page struct {
	Path Path
	// Offset is the 0-based index of the first line asked for; Lines[0].N == Offset+1.
	Offset int
	Lines  []Line
	// TotalLines is the file's line count; -1 when the file is too large to count (larger than
	// Limits.WriteBytes: such a file is only paged, never changed).
	TotalLines int
	// More is set when lines follow this page; NextOffset is then the offset to ask for next.
	More       bool
	NextOffset int
	// Binary is set when the start of the file holds a NUL byte.
	Binary bool
	// Stamp is the state the page was read from (Hash is zero when TotalLines is -1).
	Stamp Stamp
}

// pageSpec says what scanPage collects.
type pageSpec struct {
	offset, limit        int
	pageBytes, lineBytes int
	// scanAll reads to the end even after the page is full, to count lines and hash everything.
	scanAll bool
}

// scanPage reads lines from r and collects the page sp asks for. It returns the page (without
// Path and Stamp), the number of bytes read and their hash (meaningful when sp.scanAll).
func scanPage(r io.Reader, sp pageSpec) (Page, int64, [sha256.Size]byte, error) {
	if sp.offset < 0 {
		sp.offset = 0
	}
	if sp.limit <= 0 {
		sp.limit = math.MaxInt
	}
	h := sha256.New()
	cnt := &countWriter{}
	br := bufio.NewReaderSize(io.TeeReader(r, io.MultiWriter(h, cnt)), 64<<10)
	pg := Page{Offset: sp.offset, TotalLines: -1}
	if head, _ := br.Peek(8000); bytes.IndexByte(head, 0) >= 0 {
		pg.Binary = true
	}
	var (
		idx      int    // index of the line being read
		kept     []byte // the part of the current line kept (at most lineBytes+2 bytes)
		lineLen  int    // bytes of the current line so far
		used     int    // bytes of text in the page
		pageFull bool
	)
	end := sp.offset + min(sp.limit, math.MaxInt-sp.offset)
	for {
		chunk, err := br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return Page{}, 0, [32]byte{}, err
		}
		wanted := idx >= sp.offset && idx < end && !pageFull
		if wanted && len(kept) < sp.lineBytes+2 {
			kept = append(kept, chunk[:min(len(chunk), sp.lineBytes+2-len(kept))]...)
		}
		lineLen += len(chunk)
		if err == bufio.ErrBufferFull {
			continue
		}
		if lineLen > 0 { // a line ended (at "\n" or at EOF)
			if idx >= end || (pageFull && idx >= sp.offset) {
				if !pg.More {
					pg.More, pg.NextOffset = true, idx
				}
			} else if wanted {
				ln := makeLine(idx+1, kept, lineLen, sp.lineBytes)
				if len(pg.Lines) > 0 && used+len(ln.Text) > sp.pageBytes {
					pageFull = true
					pg.More, pg.NextOffset = true, idx
				} else {
					used += len(ln.Text)
					pg.Lines = append(pg.Lines, ln)
				}
			}
			idx++
			kept, lineLen = kept[:0], 0
		}
		if err == io.EOF {
			break
		}
		if pg.More && !sp.scanAll {
			return pg, cnt.n, [32]byte{}, nil
		}
	}
	pg.TotalLines = idx
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return pg, cnt.n, sum, nil
}

// makeLine builds line n from the kept bytes of a line that was lineLen bytes long.
func makeLine(n int, kept []byte, lineLen, lineBytes int) Line {
	whole := len(kept) == lineLen
	text := kept
	if whole {
		text = bytes.TrimSuffix(text, []byte("\n"))
		text = bytes.TrimSuffix(text, []byte("\r"))
	}
	if len(text) <= lineBytes && whole {
		return Line{N: n, Text: string(text)}
	}
	cut := min(len(text), lineBytes)
	for cut > 0 && cut < len(text) && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return Line{N: n, Text: string(text[:cut]), Cut: true}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(b []byte) (int, error) {
	c.n += int64(len(b))
	return len(b), nil
}

// LooksBinary reports whether data looks like a binary file: a NUL byte in its first 8000 bytes
// (as git decides).
func LooksBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// cutAtLine returns at most limit bytes of b, cut after the last complete line that fits (or on
// a UTF-8 boundary when not even one line fits), and whether anything was cut.
func cutAtLine(b []byte, limit int) ([]byte, bool) {
	if len(b) <= limit {
		return b, false
	}
	if i := bytes.LastIndexByte(b[:limit], '\n'); i >= 0 {
		return b[:i+1], true
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return b[:cut], true
}
