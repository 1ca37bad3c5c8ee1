package builtin_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/builtin"
	"github.com/agentd/agentd/tools/fsafe"
)

func TestReadNumbersLinesLikeCatN(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "alpha\n\tbeta\r\ngamma")
	r := f.mustOK("read", map[string]any{"path": "a.txt"})
	want := "     1\talpha\n     2\t\tbeta\n     3\tgamma\n"
	if r.Text() != want {
		t.Errorf("read text\n%q\nwant\n%q", r.Text(), want)
	}
	d := r.Details.(builtin.ReadDetails)
	if d != (builtin.ReadDetails{Path: "a.txt", Kind: "text", FirstLine: 1, LastLine: 3, TotalLines: 3}) {
		t.Errorf("details %+v", d)
	}
	if r.Meta.Truncated {
		t.Error("a whole read is marked truncated")
	}
}

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadPagesWithANoteSayingWhereToContinue(t *testing.T) {
	f := newFixture(t)
	f.write("big.txt", numbered(5120))
	r := f.mustOK("read", map[string]any{"path": "big.txt"})
	if !strings.HasPrefix(r.Text(), "     1\tline 1\n") || !strings.Contains(r.Text(), "  2000\tline 2000\n") ||
		strings.Contains(r.Text(), "line 2001\n") {
		t.Errorf("default page is not lines 1–2000:\n%s", r.Text()[len(r.Text())-200:])
	}
	wantNote := "(Showing lines 1–2000 of 5120; call read with offset=2001 for more.)\n"
	if !strings.HasSuffix(r.Text(), wantNote) {
		t.Errorf("note missing; tail:\n%s", r.Text()[len(r.Text())-200:])
	}
	if !r.Meta.Truncated {
		t.Error("partial read not marked truncated")
	}

	r = f.mustOK("read", map[string]any{"path": "big.txt", "offset": 2001, "limit": 3})
	want := "  2001\tline 2001\n  2002\tline 2002\n  2003\tline 2003\n\n(Showing lines 2001–2003 of 5120; call read with offset=2004 for more.)\n"
	if r.Text() != want {
		t.Errorf("page\n%q\nwant\n%q", r.Text(), want)
	}
	r = f.mustOK("read", map[string]any{"path": "big.txt", "offset": 5119})
	if !strings.HasSuffix(r.Text(), "(Showing lines 5119–5120 of 5120 (the end of the file).)\n") {
		t.Errorf("last page note:\n%s", r.Text())
	}
	// Offset 0 is read as the first line (models count from 0 too).
	r = f.mustOK("read", map[string]any{"path": "big.txt", "offset": 0, "limit": 1})
	if !strings.HasPrefix(r.Text(), "     1\tline 1\n") {
		t.Errorf("offset 0: %s", r.Text())
	}
	wantType(t, f.call("read", map[string]any{"path": "big.txt", "offset": 9000}), tools.InvalidArgs, "past the end", "5120 lines")
	wantType(t, f.call("read", map[string]any{"path": "big.txt", "offset": -1}), tools.InvalidArgs)
}

func TestReadPageByteLimitSaysWhy(t *testing.T) {
	f := newFixture(t, withLimits(fsafe.Limits{PageBytes: 1000}))
	f.write("wide.txt", strings.Repeat(strings.Repeat("x", 99)+"\n", 50))
	r := f.mustOK("read", map[string]any{"path": "wide.txt"})
	if !strings.Contains(r.Text(), "Showing lines 1–10 of 50 (one call shows at most 1000 bytes of text); call read with offset=11 for more.") {
		t.Errorf("byte-limited page note:\n%s", r.Text())
	}
}

func TestReadCutsLongLinesWithANote(t *testing.T) {
	f := newFixture(t, withLimits(fsafe.Limits{LineBytes: 100}))
	f.write("long.txt", "short\n"+strings.Repeat("é", 300)+"\nend\n")
	r := f.mustOK("read", map[string]any{"path": "long.txt"})
	want := "     1\tshort\n     2\t" + strings.Repeat("é", 50) + "… [line cut]\n     3\tend\n\n(Line 2 is longer than 100 bytes and was cut; use grep to search inside.)\n"
	if r.Text() != want {
		t.Errorf("read text\n%q\nwant\n%q", r.Text(), want)
	}
}

func TestReadEmptyFile(t *testing.T) {
	f := newFixture(t)
	f.write("empty.txt", "")
	r := f.mustOK("read", map[string]any{"path": "empty.txt"})
	if r.Text() != "(empty.txt is empty.)\n" {
		t.Errorf("empty file: %q", r.Text())
	}
}

func TestReadDescribesBinaryFilesWithoutDumpingThem(t *testing.T) {
	f := newFixture(t)
	f.write("prog.bin", "\x7fELF\x02\x01\x01\x00\x00secret-bytes-here\n")
	r := f.mustOK("read", map[string]any{"path": "prog.bin"})
	if !strings.Contains(r.Text(), "prog.bin is a binary file") || strings.Contains(r.Text(), "secret-bytes-here") {
		t.Errorf("binary read: %s", r.Text())
	}
	if r.Details.(builtin.ReadDetails).Kind != "binary" {
		t.Errorf("details %+v", r.Details)
	}
}

func pngBytes(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadReturnsImagesAsContentBlocks(t *testing.T) {
	f := newFixture(t)
	data := pngBytes(t)
	f.write("pic.dat", string(data)) // detected by magic, not by name
	r := f.mustOK("read", map[string]any{"path": "pic.dat"})
	if len(r.Content) != 2 || r.Content[0].Type != "text" || r.Content[1].Type != "image" {
		t.Fatalf("content %+v", r.Content)
	}
	if r.Content[1].MIME != "image/png" || !bytes.Equal(r.Content[1].Data, data) {
		t.Errorf("image block %s, %d bytes", r.Content[1].MIME, len(r.Content[1].Data))
	}
	if !strings.Contains(r.Content[0].Text, "3×2 pixels") {
		t.Errorf("image text %q", r.Content[0].Text)
	}
	// Execute (no content blocks) describes it instead.
	args, _ := f.tool("read").Spec().Decode([]byte(`{"path":"pic.dat"}`), nil)
	out, err := f.tool("read").Execute(t.Context(), &tools.Call{Args: args})
	if err != nil || out.Content != nil || !strings.Contains(out.Text, "is an image (image/png") {
		t.Errorf("text-only read of an image: %+v %v", out, err)
	}
	// A text file with an image name is text.
	f.write("fake.png", "not an image\n")
	r = f.mustOK("read", map[string]any{"path": "fake.png"})
	if r.Text() != "     1\tnot an image\n" {
		t.Errorf("fake.png: %q", r.Text())
	}
}

func TestReadOfADirectoryListsIt(t *testing.T) {
	f := newFixture(t)
	f.write("d/a.txt", "")
	f.write("d/sub/b.txt", "")
	r := f.mustOK("read", map[string]any{"path": "d"})
	want := "d is a directory with 2 entries (use ls for a tree, read a file path to see a file):\na.txt\nsub/\n"
	if r.Text() != want {
		t.Errorf("dir read %q", r.Text())
	}
}

func TestReadErrors(t *testing.T) {
	f := newFixture(t)
	wantType(t, f.call("read", map[string]any{"path": "nope.txt"}), tools.NotFound, "nope.txt does not exist")
	wantType(t, f.call("read", map[string]any{}), tools.InvalidArgs, "/path: required property is missing")
	wantType(t, f.call("read", map[string]any{"path": "a", "limit": 0}), tools.InvalidArgs, "/limit")
}

func TestReadAcceptsCommonArgumentNames(t *testing.T) {
	f := newFixture(t)
	f.write("a.txt", "one\ntwo\nthree\n")
	r := f.mustOK("read", `{"file_path":"a.txt","start_line":"2","max_lines":1}`)
	if r.Text() != "     2\ttwo\n\n(Showing lines 2–2 of 3; call read with offset=3 for more.)\n" {
		t.Errorf("compat read %q", r.Text())
	}
}

func TestReadPermissionFlagsSensitiveFiles(t *testing.T) {
	f := newFixture(t)
	f.write(".env", "KEY=1\n")
	f.write("main.go", "package main\n")
	pm := f.tool("read").(tools.PermissionMetadata)
	for path, sensitive := range map[string]bool{".env": true, "main.go": false, "config/.env.local": true} {
		args, _ := f.tool("read").Spec().Decode([]byte(`{"path":"`+path+`"}`), nil)
		p := pm.Permission(&tools.Call{Args: args})
		if p.Access != tools.AccessRead || p.Sensitive != sensitive || len(p.Paths) != 1 {
			t.Errorf("%s: %+v", path, p)
		}
	}
}
