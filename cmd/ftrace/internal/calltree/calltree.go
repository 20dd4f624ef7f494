// Package calltree turns a trace's per-thread event streams into call trees (function
// graph traces) or symbolised call lists (function traces): the common input of every
// output generator of the ftrace command.
package calltree

import (
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// Node is one call of a function-graph trace.
type Node struct {
	Func     *symbolize.Func
	IP       uint64
	Start    uint64 // entry timestamp (ns, trace clock)
	End      uint64 // return timestamp
	Depth    int    // 0 for a thread's outermost recorded calls
	Parent   *Node
	Children []*Node
	// Partial marks a call whose return was not recorded (the trace ended, or the frame
	// was unwound without an exit record): End is the last time the thread was seen.
	Partial bool
	// Unwound marks a frame left without returning (longjmp, C++ exception,
	// pthread_exit), as the runtime reported it.
	Unwound bool
}

// Duration is End - Start.
func (n *Node) Duration() uint64 {
	if n.End < n.Start {
		return 0
	}
	return n.End - n.Start
}

// Self is the duration minus the children's durations.
func (n *Node) Self() uint64 {
	d := n.Duration()
	for _, c := range n.Children {
		cd := c.Duration()
		if cd > d {
			return 0
		}
		d -= cd
	}
	return d
}

// Call is one function-tracer event, symbolised.
type Call struct {
	TS     uint64
	Func   *symbolize.Func
	Caller *symbolize.Func
	IP     uint64
}

// Thread is one thread's calls.
type Thread struct {
	TID   int
	Name  string
	Roots []*Node // function_graph
	Calls []Call  // function
	// Nodes counts every node of Roots' trees.
	Nodes int
	// Lost and LostDepth are copied from the trace; Events counts the thread's records.
	Lost, LostDepth, Events uint64
	// Unmatched counts exits without a recorded entry (the call began before tracing).
	Unmatched int
	// Unclosed counts calls still open when the stream ended.
	Unclosed    int
	First, Last uint64
	// FirstEvent is the earliest event's time (First may be earlier: the entry time of
	// a return without entry).
	FirstEvent uint64
	// RootTime is the outermost calls' durations summed (set by WalkStream).
	RootTime uint64
	// Tree: WalkStream had to build this thread's tree (its stream alone could not say
	// where some calls belong).
	Tree bool
	// Markers tallies the program's markers by text (in the order first seen).
	Markers []MarkerTally
}

// MarkerTally counts the markers of one text: how many, the first one's time. Past
// maxMarkerTexts distinct texts, the rest are counted under OtherMarkers.
type MarkerTally struct {
	Text  string
	Count uint64
	First uint64
}

// OtherMarkers is the text the markers past maxMarkerTexts distinct texts are counted under.
const OtherMarkers = "(other markers)"

const maxMarkerTexts = 256

func tallyMarker(m []MarkerTally, ts uint64, text string) []MarkerTally {
	if len(m) >= maxMarkerTexts {
		text = OtherMarkers
	}
	for i := range m {
		if m[i].Text == text {
			m[i].Count++
			m[i].First = min(m[i].First, ts)
			return m
		}
	}
	return append(m, MarkerTally{Text: text, Count: 1, First: ts})
}

// Forest is the whole trace, symbolised.
type Forest struct {
	Header  tracefile.Header
	Threads []*Thread
	// Start is the earliest timestamp of the trace (header start, or first event).
	Start uint64
	// Main is the path of the traced executable ("" when the trace does not say).
	Main string
	// PIDs are the processes of a forest of several traces (Combiner).
	PIDs []int
}

// Lookup resolves an address to its function.
type Lookup func(addr uint64) *symbolize.Func

// Progress is told how many events have been processed out of a total.
type Progress func(done, total int)

// Build builds the forest of a trace. progress may be nil.
func Build(tr *tracefile.Trace, lookup Lookup, progress Progress) *Forest {
	total := 0
	for _, th := range tr.Threads {
		total += len(th.Events)
	}
	done := 0
	var threads []*Thread
	text := func(i uint64) string {
		if i < uint64(len(tr.Markers)) {
			return tr.Markers[i]
		}
		return ""
	}
	for _, th := range tr.Threads {
		t := buildThread(th, lookup, text, func(n int) {
			if progress != nil {
				progress(done+n, total)
			}
		})
		done += len(th.Events)
		threads = append(threads, t)
	}
	if progress != nil {
		progress(total, total)
	}
	return ForestOf(tr, threads)
}

const progressStep = 1 << 16

// buildThread builds one thread's tree; text gives its markers' texts (nil: markers are
// not tallied).
func buildThread(th *tracefile.Thread, lookup Lookup, text func(uint64) string, progress func(int)) *Thread {
	t := &Thread{TID: th.TID, Name: th.Name, Lost: th.Lost, LostDepth: th.LostDepth, Events: uint64(len(th.Events))}
	calls := 0
	for i := range th.Events {
		switch th.Events[i].Kind {
		case tracefile.Call:
			calls++
		case tracefile.Marker:
			t.Events-- // a message, not a call: trees leave markers out
		}
	}
	if calls > 0 { // sized once: growing by appends would copy a big trace's calls ~twice
		t.Calls = make([]Call, 0, calls)
	}
	var stack []*Node
	var slab []Node // nodes are carved from blocks: one allocation per 1024 calls
	newNode := func() *Node {
		if len(slab) == cap(slab) {
			slab = make([]Node, 0, 1024)
		}
		slab = slab[:len(slab)+1]
		return &slab[len(slab)-1]
	}
	var depths []int32 // the depth the runtime recorded for each frame of stack (-1: unknown)
	var prevTS uint64
	for i := range th.Events {
		if i%progressStep == progressStep-1 {
			progress(i + 1)
		}
		ev := &th.Events[i]
		if ev.Kind == tracefile.Marker {
			if text != nil {
				t.Markers = tallyMarker(t.Markers, ev.TS, text(ev.IP))
			}
			continue
		}
		if i == 0 || ev.TS < t.First {
			t.First = ev.TS
		}
		if i == 0 || ev.TS < t.FirstEvent {
			t.FirstEvent = ev.TS
		}
		if ev.TS > t.Last {
			t.Last = ev.TS
		}
		switch ev.Kind {
		case tracefile.Call:
			c := Call{TS: ev.TS, IP: ev.IP, Func: lookup(ev.IP)}
			if ev.Parent != 0 {
				c.Caller = callerOf(lookup, ev.Parent)
			}
			t.Calls = append(t.Calls, c)
		case tracefile.Entry:
			// An entry at the runtime's depth d means that every frame it had at d or
			// deeper has returned: one still open here lost its exit (the tracer was
			// switched or disabled meanwhile). It ended after the previous event.
			for ev.Depth >= 0 && len(stack) > 0 && depths[len(depths)-1] >= ev.Depth {
				k := len(stack) - 1
				stack[k].End = max(prevTS, stack[k].Start)
				stack[k].Partial = true
				t.Unclosed++
				stack, depths = stack[:k], depths[:k]
			}
			n := newNode()
			*n = Node{Func: lookup(ev.IP), IP: ev.IP, Start: ev.TS, Depth: len(stack)}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				n.Parent = p
				p.Children = append(p.Children, n)
			} else {
				t.Roots = append(t.Roots, n)
			}
			t.Nodes++
			stack = append(stack, n)
			depths = append(depths, ev.Depth)
		case tracefile.Exit:
			j := match(stack, ev, lookup)
			if j < 0 {
				t.Unmatched++
				// The call began before this stream did (tracing enabled while it ran,
				// a fork child returning through frames entered in the parent). With
				// its entry time known, it becomes the caller of the calls since then.
				if ev.Parent != 0 && ev.Parent <= ev.TS {
					n := &Node{Func: lookup(ev.IP), IP: ev.IP, Start: ev.Parent, End: ev.TS, Unwound: ev.Flags&tracefile.FlagUnwound != 0}
					k := len(t.Roots)
					for k > 0 && t.Roots[k-1].Start >= n.Start {
						k--
					}
					n.Children = append(n.Children, t.Roots[k:]...)
					for _, c := range n.Children {
						c.Parent = n
						c.shift(1)
					}
					t.Roots = append(t.Roots[:k], n)
					t.Nodes++
					if n.Start < t.First {
						t.First = n.Start
					}
				}
				continue
			}
			// Frames above the match left without an exit record (longjmp, unwinding):
			// they end here too.
			for k := len(stack) - 1; k > j; k-- {
				stack[k].End = ev.TS
				stack[k].Partial = true
				t.Unclosed++
			}
			stack[j].End = ev.TS
			stack[j].Unwound = ev.Flags&tracefile.FlagUnwound != 0
			stack, depths = stack[:j], depths[:j]
		}
		prevTS = ev.TS
	}
	for _, n := range stack {
		n.End = t.Last
		n.Partial = true
		t.Unclosed++
	}
	return t
}

// match finds the innermost open frame an exit closes: the one with its ip and entry
// time, else the innermost with its ip, else with its function.
func match(stack []*Node, ev *tracefile.Event, lookup Lookup) int {
	ip := ev.IP
	if ev.Parent != 0 {
		for k := len(stack) - 1; k >= 0; k-- {
			if stack[k].IP == ip && stack[k].Start == ev.Parent {
				return k
			}
			if stack[k].Start < ev.Parent {
				break
			}
		}
	}
	for k := len(stack) - 1; k >= 0; k-- {
		if stack[k].IP == ip {
			return k
		}
	}
	fn := lookup(ip)
	for k := len(stack) - 1; k >= 0; k-- {
		if stack[k].Func == fn {
			return k
		}
	}
	return -1
}

// Walk calls fn for every node of the thread in pre-order (entry order); returning
// false from fn skips the node's children.
func (t *Thread) Walk(fn func(n *Node) bool) {
	var walk func(ns []*Node)
	walk = func(ns []*Node) {
		for _, n := range ns {
			if fn(n) {
				walk(n.Children)
			}
		}
	}
	walk(t.Roots)
}

// Stack returns the functions from the outermost caller down to n.
func (n *Node) Stack() []*symbolize.Func {
	var s []*symbolize.Func
	for p := n; p != nil; p = p.Parent {
		s = append(s, p.Func)
	}
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return s
}

// HasGraph reports whether any thread has function-graph calls.
func (f *Forest) HasGraph() bool {
	for _, t := range f.Threads {
		if t.Nodes > 0 {
			return true
		}
	}
	return false
}

// shift adds d to the depth of n and its descendants.
func (n *Node) shift(d int) {
	n.Depth += d
	for _, c := range n.Children {
		c.shift(d)
	}
}

// callerOf is the function a return address lies in: the one holding the byte before it
// (the call of a noreturn function can be its caller's last instruction). An address of
// no symbol is named by the return address itself, not the byte before (an odd address
// on arm64, whose code is whole words: the leveldb/xz trial's "worker_start <- 0x7edd7").
func callerOf(lookup func(uint64) *symbolize.Func, parent uint64) *symbolize.Func {
	f := lookup(parent - 1)
	if f != nil && f.Unknown {
		if g := lookup(parent); g != nil && g.Unknown {
			return g
		}
	}
	return f
}
