package flame

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

func TestFolded(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample)
	var b bytes.Buffer
	if err := WriteFolded(&b, Fold(f, Options{})); err != nil {
		t.Fatal(err)
	}
	want := `main 550
main;bar 50
main;foo 300
main;foo;bar 100
work 600
work;fib 80
work;fib;fib 20
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	WriteFolded(&b, Fold(f, Options{TIDs: []int{101}, ByThread: true}))
	if want := "thread 101 worker;work 600\nthread 101 worker;work;fib 80\nthread 101 worker;work;fib;fib 20\n"; b.String() != want {
		t.Errorf("by thread:\n%s", b.String())
	}
	ff := tracetest.Forest(t, "tracer function\nthread 1\nc 1 a;x main\nc 2 a;x main\n")
	b.Reset()
	WriteFolded(&b, Fold(ff, Options{}))
	if b.String() != "main;a:x 2\n" {
		t.Errorf("function trace folded: %q", b.String())
	}
}

// svgFrames parses the SVG and returns each frame's title and rectangle width.
func svgFrames(t *testing.T, data []byte) map[string]float64 {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	frames := map[string]float64{}
	var title string
	inTitle := false
	root := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "svg" {
				root = true
			}
			if e.Name.Local == "title" {
				inTitle, title = true, ""
			}
			if e.Name.Local == "rect" && title != "" {
				for _, a := range e.Attr {
					if a.Name.Local == "width" {
						var w float64
						if _, err := fmt.Sscan(a.Value, &w); err != nil {
							t.Fatal(err)
						}
						frames[title] = w
					}
				}
				title = ""
			}
		case xml.CharData:
			if inTitle {
				title += string(e)
			}
		case xml.EndElement:
			if e.Name.Local == "title" {
				inTitle = false
			}
		}
	}
	if !root {
		t.Fatal("no <svg> element")
	}
	return frames
}

func TestSVG(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample)
	var b bytes.Buffer
	if err := WriteSVG(&b, Fold(f, Options{}), SVGOptions{Title: "t <&> x", Width: 1020}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if strings.Contains(s, "<script") || strings.Contains(s, "href") {
		t.Error("SVG is not self-contained")
	}
	frames := svgFrames(t, b.Bytes())
	// 1700 ns in all over 1000 px: main (1000 ns) ≈ 588.2 px, work 411.8, foo;bar 58.8.
	want := map[string]float64{"all": 1000, "main": 588.24, "work": 411.76, "foo": 235.29, "fib (100 ns": 58.82, "fib (20 ns": 11.76}
	for name, w := range want {
		found := false
		for title, got := range frames {
			if (!strings.Contains(name, "(") && strings.HasPrefix(title, name+" (")) || (strings.Contains(name, "(") && strings.HasPrefix(title, name)) {
				found = true
				if got < w-0.02 || got > w+0.02 {
					t.Errorf("%s: width %.2f, want %.2f", title, got, w)
				}
			}
		}
		if !found {
			t.Errorf("no frame %s in %v", name, frames)
		}
	}
	if len(frames) != 8 { // all, main, foo, bar (under foo), bar (under main), work, fib, fib
		t.Errorf("%d frames: %v", len(frames), frames)
	}
	var e bytes.Buffer
	WriteSVG(&e, nil, SVGOptions{})
	svgFrames(t, e.Bytes())
	if !strings.Contains(e.String(), "no samples") {
		t.Error("empty graph says nothing")
	}
}

// A caller of many functions (more than a node finds by scanning its children), each
// called from two callers in turn: one folded line per distinct stack, sorted, with the
// calls' times summed, and the SVG's frames as wide as the stacks under them.
func TestFoldedManyChildren(t *testing.T) {
	var src, want strings.Builder
	src.WriteString("tracer function_graph\nthread 1 main\n> 0 main\n")
	ts := 10
	for round := 0; round < 2; round++ {
		for i := 0; i < 20; i++ {
			for _, caller := range []string{"a", "b"} {
				fmt.Fprintf(&src, "> %d %s\n> %d f%02d\n< %d f%02d\n< %d %s\n", ts, caller, ts+1, i, ts+4, i, ts+5, caller)
				ts += 10
			}
		}
	}
	fmt.Fprintf(&src, "< %d main\n", ts)
	fmt.Fprintf(&want, "main %d\n", ts-400)
	for _, caller := range []string{"a", "b"} {
		fmt.Fprintf(&want, "main;%s 80\n", caller)
		for i := 0; i < 20; i++ {
			fmt.Fprintf(&want, "main;%s;f%02d 6\n", caller, i)
		}
	}
	f := tracetest.Forest(t, src.String())
	var b bytes.Buffer
	WriteFolded(&b, Fold(f, Options{}))
	if b.String() != want.String() {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want.String())
	}
	b.Reset()
	WriteSVG(&b, Fold(f, Options{}), SVGOptions{Width: 20 + ts})
	frames := svgFrames(t, b.Bytes())
	if len(frames) != 1+1+2+20 { // all, main, a, b, and the f's (the same titles under a and b)
		t.Errorf("%d frames: %v", len(frames), frames)
	}
	for title, w := range frames {
		if strings.HasPrefix(title, "a (") && (w < 199.9 || w > 200.1) {
			t.Errorf("%s: width %.2f, want 200 (40 calls of 5 ns)", title, w)
		}
	}
}
