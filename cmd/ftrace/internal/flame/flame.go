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
	"strings"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/report"
)

// Stack is one folded stack: frames from the outermost caller to the leaf.
type Stack struct {
	Frames []string
	Value  uint64
}

// Options select the stacks.
type Options struct {
	TIDs []int
	// ByThread adds the thread as the outermost frame.
	ByThread bool
}

// trie accumulates values per distinct stack.
type trie struct {
	value    uint64
	children map[string]*trie
}

func (t *trie) child(name string) *trie {
	c := t.children[name]
	if c == nil {
		if t.children == nil {
			t.children = map[string]*trie{}
		}
		c = &trie{}
		t.children[name] = c
	}
	return c
}

// Fold returns the folded stacks of the forest, sorted by frames.
func Fold(f *calltree.Forest, o Options) []Stack {
	return FoldPaths(f, calltree.PathsOf(f), o)
}

// FoldPaths returns the folded stacks of the threads' call paths (of forest f, whose
// trees may not have been built), sorted by frames.
func FoldPaths(f *calltree.Forest, paths []calltree.ThreadPaths, o Options) []Stack {
	root := &trie{}
	graph := f.HasGraph()
	for _, tp := range paths {
		t := tp.T
		if len(o.TIDs) > 0 && !slices.Contains(o.TIDs, t.TID) {
			continue
		}
		top := root
		if o.ByThread {
			name := fmt.Sprintf("thread %d", t.TID)
			if t.Name != "" {
				name += " " + t.Name
			}
			top = root.child(clean(name))
		}
		for _, c := range tp.Pairs {
			if graph { // times and counts do not add up: graph data wins
				break
			}
			n := top
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
	var out []Stack
	var frames []string
	var emit func(t *trie)
	emit = func(t *trie) {
		names := make([]string, 0, len(t.children))
		for name := range t.children {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			c := t.children[name]
			frames = append(frames, name)
			if c.value > 0 {
				out = append(out, Stack{Frames: append([]string(nil), frames...), Value: c.value})
			}
			emit(c)
			frames = frames[:len(frames)-1]
		}
	}
	emit(root)
	return out
}

// clean keeps the folded format parseable: ';' separates frames and the last space
// separates the value.
func clean(name string) string {
	return cleaner.Replace(name)
}

var cleaner = strings.NewReplacer(";", ":", "\n", " ")

// WriteFolded prints stacks in the folded format.
func WriteFolded(w io.Writer, stacks []Stack) error {
	bw := bufio.NewWriter(w)
	for _, s := range stacks {
		fmt.Fprintf(bw, "%s %d\n", strings.Join(s.Frames, ";"), s.Value)
	}
	return bw.Flush()
}

// node is a frame of the merged tree.
type node struct {
	name     string
	total    uint64
	children []*node
	index    map[string]*node
}

func (n *node) child(name string) *node {
	if c := n.index[name]; c != nil {
		return c
	}
	if n.index == nil {
		n.index = map[string]*node{}
	}
	c := &node{name: name}
	n.index[name] = c
	n.children = append(n.children, c)
	return c
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
func WriteSVG(w io.Writer, stacks []Stack, o SVGOptions) error {
	if o.Width <= 0 {
		o.Width = 1200
	}
	if o.Unit == "" {
		o.Unit = "ns"
	}
	root := &node{name: "all"}
	depth := 0
	for _, s := range stacks {
		n := root
		n.total += s.Value
		for _, fr := range s.Frames {
			n = n.child(fr)
			n.total += s.Value
		}
		if len(s.Frames) > depth {
			depth = len(s.Frames)
		}
	}
	// Only frames at least minWidth wide are drawn: size the picture to them.
	if root.total > 0 {
		scale := float64(o.Width-2*padSide) / float64(root.total)
		var deepest func(n *node, level int) int
		deepest = func(n *node, level int) int {
			d := level
			for _, c := range n.children {
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
		var draw func(n *node, x float64, level int)
		draw = func(n *node, x float64, level int) {
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
			sort.Slice(n.children, func(i, j int) bool { return n.children[i].name < n.children[j].name })
			cx := x
			for _, c := range n.children {
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
