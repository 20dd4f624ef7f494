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
	kids     map[*symbolize.Func]*PathNode // IndexChildren
}

// fewChildren: up to this many children are found by a scan of a node's list (most nodes
// have one or two; a map each would be most of a node's memory, with arguments' millions
// of paths), more by a map.
const fewChildren = 8

// FindChild returns the child of key among a node's children: list, and m once
// IndexChildren made it; keyOf tells a child's key.
func FindChild[K comparable, N any](list []N, m map[K]N, key K, keyOf func(N) K) (N, bool) {
	if m != nil {
		n, ok := m[key]
		return n, ok
	}
	for _, n := range list {
		if keyOf(n) == key {
			return n, true
		}
	}
	var none N
	return none, false
}

// IndexChildren returns a node's map of its children after one was appended to list:
// m with it added, or a map made when list grows past a scan's length, or nil.
func IndexChildren[K comparable, N any](list []N, m map[K]N, keyOf func(N) K) map[K]N {
	if m != nil {
		last := list[len(list)-1]
		m[keyOf(last)] = last
		return m
	}
	if len(list) <= fewChildren {
		return nil
	}
	m = make(map[K]N, len(list))
	for _, n := range list {
		m[keyOf(n)] = n
	}
	return m
}

func pathFunc(p *PathNode) *symbolize.Func { return p.Func }

// child returns the path extended by fn, made (numbered seq) if new.
func (p *PathNode) child(fn *symbolize.Func, seq *int) *PathNode {
	if c, ok := FindChild(p.Children, p.kids, fn, pathFunc); ok {
		return c
	}
	*seq++
	c := &PathNode{Func: fn, Seq: *seq}
	p.Children = append(p.Children, c)
	p.kids = IndexChildren(p.Children, p.kids, pathFunc)
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
