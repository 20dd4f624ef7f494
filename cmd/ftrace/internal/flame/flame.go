// Package flame produces flame graphs of a trace: "folded stacks" text (one line per
// distinct stack, frames separated by ';', then a space and the stack's self time in
// nanoseconds, or its call count for function traces) and a self-contained SVG drawn
// from them (no scripts, no external resources; hover a frame for its figures).
package flame

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/report"
)

// Options select the stacks.
type Options struct {
	TIDs []int
	// ByThread adds the thread as the outermost frame.
	ByThread bool
}

// Stacks are the folded stacks of a trace: a trie of frame names whose nodes hold the
// value of the stack ending there. The writers walk it; nothing holds a stack's frames
// (with arguments a trace has millions of distinct stacks, each tens of frames deep).
type Stacks struct {
	root trie
}

// trie accumulates values per distinct stack.
type trie struct {
	name     string
	value    uint64 // the stack ending here
	total    uint64 // value and the children's totals (WriteSVG)
	kids     []*trie
	children map[string]*trie // calltree.IndexChildren
}

func trieName(t *trie) string { return t.name }

func (t *trie) child(name string) *trie {
	if c, ok := calltree.FindChild(t.kids, t.children, name, trieName); ok {
		return c
	}
	c := &trie{name: name}
	t.kids = append(t.kids, c)
	t.children = calltree.IndexChildren(t.kids, t.children, trieName)
	return c
}

// sorted returns t's children by name (the folded format's order, and the SVG's).
func (t *trie) sorted() []*trie {
	sort.Slice(t.kids, func(i, j int) bool { return t.kids[i].name < t.kids[j].name })
	return t.kids
}

// Fold returns the folded stacks of the forest.
func Fold(f *calltree.Forest, o Options) *Stacks {
	return FoldPaths(f, calltree.PathsOf(f), o)
}

// FoldPaths returns the folded stacks of the threads' call paths (of forest f, whose
// trees may not have been built).
func FoldPaths(f *calltree.Forest, paths []calltree.ThreadPaths, o Options) *Stacks {
	fo := NewFolder(o)
	fo.Add(paths)
	return fo.Stacks(f)
}

// A Folder folds the call paths of one trace's threads or of several traces' (the
// processes of one run), given a trace at a time: what it keeps is the trie of distinct
// stacks, not each thread's paths until the last trace is read.
type Folder struct {
	o     Options
	s     Stacks
	pairs trie // the function-tracer calls (function, caller), kept apart until Stacks
}

// NewFolder returns an empty Folder of the stacks o selects.
func NewFolder(o Options) *Folder { return &Folder{o: o} }

// Add folds the call paths of the threads of one trace.
func (fo *Folder) Add(paths []calltree.ThreadPaths) {
	for _, tp := range paths {
		t := tp.T
		if len(fo.o.TIDs) > 0 && !slices.Contains(fo.o.TIDs, t.TID) {
			continue
		}
		top, ptop := &fo.s.root, &fo.pairs
		if fo.o.ByThread {
			name := fmt.Sprintf("thread %d", t.TID)
			if t.Name != "" {
				name += " " + t.Name
			}
			top, ptop = top.child(clean(name)), ptop.child(clean(name))
		}
		for _, c := range tp.Pairs {
			n := ptop
			if c.Caller != nil {
				n = n.child(clean(c.Caller.Name))
			}
			n.child(clean(c.Func.Name)).value += c.Count
		}
		var walk func(ps []*calltree.PathNode, at *trie)
		walk = func(ps []*calltree.PathNode, at *trie) {
			for _, p := range ps {
				c := at.child(clean(p.Func.Name))
				c.value += p.Self
				walk(p.Children, c)
			}
		}
		walk(tp.Root.Children, top)
	}
}

// Stacks returns the folded stacks of what was added; f is the forest of all the traces
// added. The function-tracer calls count only when no thread has graph data: times and
// counts do not add up, and graph data wins.
func (fo *Folder) Stacks(f *calltree.Forest) *Stacks {
	if !f.HasGraph() {
		fo.s.root.merge(&fo.pairs)
	}
	fo.pairs = trie{}
	return &fo.s
}

// merge adds the values of the stacks of u to t's.
func (t *trie) merge(u *trie) {
	t.value += u.value
	for _, k := range u.kids {
		t.child(k.name).merge(k)
	}
}

// clean keeps the folded format parseable: ';' separates frames and the last space
// separates the value.
func clean(name string) string {
	return cleaner.Replace(name)
}

var cleaner = strings.NewReplacer(";", ":", "\n", " ")

// WriteFolded prints the stacks in the folded format, sorted by frames.
func WriteFolded(w io.Writer, s *Stacks) error {
	bw := bufio.NewWriter(w)
	if s == nil {
		return bw.Flush()
	}
	var line []byte
	var emit func(t *trie)
	emit = func(t *trie) {
		for _, c := range t.sorted() {
			n := len(line)
			if n > 0 {
				line = append(line, ';')
			}
			line = append(line, c.name...)
			if c.value > 0 {
				bw.Write(line)
				bw.WriteByte(' ')
				bw.WriteString(strconv.FormatUint(c.value, 10))
				bw.WriteByte('\n')
			}
			emit(c)
			line = line[:n]
		}
	}
	emit(&s.root)
	return bw.Flush()
}

// SVGOptions shape the picture.
type SVGOptions struct {
	Title string
	Width int    // pixels (default 1200)
	Unit  string // "ns" or "calls"
}

const (
	frameH   = 17
	padTop   = 40
	padSide  = 10
	fontSize = 12
	charW    = 7 // approximate width of a character at fontSize
	minWidth = 0.1
)

// WriteSVG draws the stacks as a flame graph (root at the bottom).
func WriteSVG(w io.Writer, s *Stacks, o SVGOptions) error {
	if o.Width <= 0 {
		o.Width = 1200
	}
	if o.Unit == "" {
		o.Unit = "ns"
	}
	root := &trie{name: "all"}
	if s != nil {
		root.kids, root.children = s.root.kids, s.root.children
	}
	var sum func(t *trie) uint64
	sum = func(t *trie) uint64 {
		t.total = t.value
		for _, c := range t.kids {
			t.total += sum(c)
		}
		return t.total
	}
	sum(root)
	// Only frames at least minWidth wide are drawn: size the picture to them.
	depth := 0
	if root.total > 0 {
		scale := float64(o.Width-2*padSide) / float64(root.total)
		var deepest func(n *trie, level int) int
		deepest = func(n *trie, level int) int {
			d := level
			for _, c := range n.kids {
				if float64(c.total)*scale >= minWidth {
					d = max(d, deepest(c, level+1))
				}
			}
			return d
		}
		depth = deepest(root, 0)
	}
	height := padTop + (depth+1)*frameH + 2*padSide
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d">
<style>text{font-family:monospace;font-size:%dpx;fill:#000}rect{stroke:#fff;stroke-width:0.5}</style>
<rect x="0" y="0" width="%d" height="%d" fill="#f8f8f8"/>
<text x="%d" y="24" font-size="16">%s</text>
`, o.Width, height, o.Width, height, fontSize, o.Width, height, o.Width/2-len(o.Title)*4, html.EscapeString(o.Title))
	if root.total == 0 {
		fmt.Fprintf(bw, "<text x=\"%d\" y=\"%d\">no samples</text>\n", padSide, padTop+frameH)
	} else {
		scale := float64(o.Width-2*padSide) / float64(root.total)
		var draw func(n *trie, x float64, level int)
		draw = func(n *trie, x float64, level int) {
			wpx := float64(n.total) * scale
			if wpx < minWidth {
				return
			}
			y := height - padSide - (level+1)*frameH
			pct := 100 * float64(n.total) / float64(root.total)
			fmt.Fprintf(bw, "<g><title>%s (%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>",
				html.EscapeString(n.name), value(n.total, o.Unit), pct, x, y, wpx, frameH-1, color(n.name, level == 0))
			if chars := int((wpx - 6) / charW); chars >= 3 {
				label := n.name
				if len(label) > chars {
					label = label[:chars-2] + ".."
				}
				fmt.Fprintf(bw, "<text x=\"%.2f\" y=\"%d\">%s</text>", x+3, y+frameH-5, html.EscapeString(label))
			}
			bw.WriteString("</g>\n")
			cx := x
			for _, c := range n.sorted() {
				draw(c, cx, level+1)
				cx += float64(c.total) * scale
			}
		}
		draw(root, padSide, 0)
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

func value(v uint64, unit string) string {
	if unit == "ns" {
		return report.Dur(v)
	}
	return fmt.Sprintf("%d %s", v, unit)
}

// color picks a warm colour from the name, so a function keeps its colour across graphs.
func color(name string, root bool) string {
	if root {
		return "rgb(200,200,200)"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	r := 205 + v%50
	g := 80 + (v>>8)%130
	b := 40 + (v>>16)%50
	return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b)
}
