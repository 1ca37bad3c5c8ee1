package acp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
)

// clientFiles gives the tools the client's view of files when the client offers it
// (clientCapabilities.fs): with readTextFile, every text file of the workspace is read through
// fs/read_text_file, so the model sees unsaved buffers; with writeTextFile, changes to existing
// files are written through fs/write_text_file (the client's buffers, its undo). Without the
// capability the disk is used: agentd's atomic write. New files are always created by agentd
// (fsafe creates them atomically on disk). Grep and glob read the disk: ACP does not say which
// documents are open.
type clientFiles struct {
	c            *conn
	read, write  bool
	mu           sync.Mutex
	session      string
	requestLimit time.Duration
}

// clientMaxBytes: larger files, and binary files, are read from the disk.
const clientMaxBytes = 4 << 20

func (f *clientFiles) sessionID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.session
}

func (f *clientFiles) setSession(id string) {
	f.mu.Lock()
	f.session = id
	f.mu.Unlock()
}

// Document implements fsafe.Overlay: an existing text file is "open" in the client.
func (f *clientFiles) Document(abs string) (fsafe.Document, bool) {
	st, err := os.Stat(abs)
	if err != nil || !st.Mode().IsRegular() || st.Size() > clientMaxBytes {
		return fsafe.Document{}, false
	}
	if !f.read {
		// Only writes go through the client: the content is the disk's.
		data, err := os.ReadFile(abs)
		if err != nil || isBinary(data) {
			return fsafe.Document{}, false
		}
		return fsafe.Document{Content: data}, true
	}
	head, err := readHead(abs)
	if err != nil || isBinary(head) {
		return fsafe.Document{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.requestLimit)
	defer cancel()
	var res struct {
		Content string `json:"content"`
	}
	if err := f.c.call(ctx, "fs/read_text_file", map[string]any{"sessionId": f.sessionID(), "path": abs}, &res); err != nil {
		// Fail towards the disk, which the confinement and stamps already checked: a client
		// that cannot read a file does not stop the tool.
		return fsafe.Document{}, false
	}
	return fsafe.Document{Content: []byte(res.Content)}, true
}

// Open implements search.Overlay: ACP does not say which documents are open.
func (f *clientFiles) Open() []string { return nil }

// Content implements search.Overlay.
func (f *clientFiles) Content(string) ([]byte, bool) { return nil, false }

// Write implements fsafe.Writer: through fs/write_text_file when the client offers it, else
// agentd's atomic disk write. fsafe.Commit has checked, under the file's lock and just before,
// that the content is still what the change was computed from.
func (f *clientFiles) Write(ctx context.Context, p fsafe.Path, data []byte, base fsafe.Stamp) (fsafe.Stamp, error) {
	if !f.write {
		return fsafe.DiskWriter{}.Write(ctx, p, data, base)
	}
	ctx, cancel := context.WithTimeout(ctx, f.requestLimit)
	defer cancel()
	if err := f.c.call(ctx, "fs/write_text_file", map[string]any{"sessionId": f.sessionID(), "path": p.Abs(), "content": string(data)}, nil); err != nil {
		return fsafe.Stamp{}, tools.Errorf(tools.IOError, "the editor did not write %s: %v", p.Rel(), err)
	}
	return fsafe.StampOf(fsafe.SourceEditor, 0, data), nil
}

func readHead(abs string) ([]byte, error) {
	fh, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	buf := make([]byte, 8000)
	n, err := fh.Read(buf)
	if n == 0 && err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading %s: %w", abs, err)
	}
	return buf[:n], nil
}

func isBinary(b []byte) bool { return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 }
