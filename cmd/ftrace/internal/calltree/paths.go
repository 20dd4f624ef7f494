package calltree

import "github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"

// PathNode is one distinct call path of a thread (the functions from the outermost call
// down to Func): how many calls ended there and their self time.
type PathNode struct {
	Func        *symbolize.Func
	Calls, Self uint64
	// Seq orders the paths as a walk of the call trees would first meet them.
	Seq int
	// Children in the order they were first called (a tree's pre-order).
	Children []*PathNode
	kids     map[*symbolize.Func]*PathNode // with more than fewKids children
}

// fewKids: up to this many children are found by a scan of Children (most nodes have one
// or two; a map each would be most of a node's memory, with arguments' millions of paths).
const fewKids = 8

// child returns the path extended by fn, made (numbered seq) if new.
func (p *PathNode) child(fn *symbolize.Func, seq *int) *PathNode {
	if p.kids != nil {
		if c := p.kids[fn]; c != nil {
			return c
		}
	} else {
		for _, c := range p.Children {
			if c.Func == fn {
				return c
			}
		}
	}
	*seq++
	c := &PathNode{Func: fn, Seq: *seq}
	p.Children = append(p.Children, c)
	if p.kids != nil {
		p.kids[fn] = c
	} else if len(p.Children) > fewKids {
		p.kids = make(map[*symbolize.Func]*PathNode, len(p.Children))
		for _, k := range p.Children {
			p.kids[k.Func] = k
		}
	}
	return c
}

// CallPair counts a function tracer's calls of Func from Caller (nil: unknown).
type CallPair struct {
	Func, Caller *symbolize.Func
	Count        uint64
}

// Paths is a thread's calls folded by call path: what flame graphs and profiles need,
// in memory that grows with the distinct paths, not the calls. It is an Observer (and an
// Enterer) of a Walker or of Thread.Frames.
type Paths struct {
	Root  PathNode // Func nil; its children are the outermost calls
	Pairs []*CallPair
	pairs map[[2]*symbolize.Func]*CallPair
	stack []*PathNode
	seq   int // paths made so far
	outer int // callers adopted so far: their paths come before all others
}

// Enterer is an Observer that is also told when a graph call begins.
type Enterer interface {
	Enter(fn *symbolize.Func, id int, start uint64)
}

func (p *Paths) top() *PathNode {
	if len(p.stack) == 0 {
		return &p.Root
	}
	return p.stack[len(p.stack)-1]
}

// Enter begins a call of fn below the current one.
func (p *Paths) Enter(fn *symbolize.Func, id int, start uint64) {
	p.stack = append(p.stack, p.top().child(fn, &p.seq))
}

// Close ends the current call.
func (p *Paths) Close(f *Frame) {
	if f.Adopt {
		// the caller of every call so far: their paths move below it
		p.outer++
		n := &PathNode{Func: f.Func, Children: p.Root.Children, kids: p.Root.kids, Seq: -p.outer}
		p.Root.Children = []*PathNode{n}
		p.Root.kids = nil
		n.Calls++
		n.Self += f.Self()
		return
	}
	n := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	n.Calls++
	n.Self += f.Self()
}

// Call counts a function tracer's call.
func (p *Paths) Call(c *Call, id int) {
	k := [2]*symbolize.Func{c.Func, c.Caller}
	cp := p.pairs[k]
	if cp == nil {
		if p.pairs == nil {
			p.pairs = map[[2]*symbolize.Func]*CallPair{}
		}
		cp = &CallPair{Func: c.Func, Caller: c.Caller}
		p.pairs[k] = cp
		p.Pairs = append(p.Pairs, cp)
	}
	cp.Count++
}

// ThreadPaths is one thread's Paths with its counts.
type ThreadPaths struct {
	*Paths
	T *Thread // counts only (no trees)
}

// PathsOf folds a forest's threads (built trees) into paths.
func PathsOf(f *Forest) []ThreadPaths {
	var out []ThreadPaths
	for _, t := range f.Threads {
		p := &Paths{}
		t.Frames(p)
		out = append(out, ThreadPaths{Paths: p, T: t})
	}
	return out
}
