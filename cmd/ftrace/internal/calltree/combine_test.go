package calltree

import (
	"fmt"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

func TestCombine(t *testing.T) {
	f := func(pid int, tracer string, complete bool, lost uint64) *Forest {
		h := tracefile.Header{PID: pid, Tracer: tracer, LostNoBuf: lost}
		if complete {
			h.Flags = tracefile.FlagComplete
		}
		return &Forest{Header: h, Threads: []*Thread{{TID: pid}}}
	}
	c := Combine([]*Forest{f(1, "function_graph", true, 2), f(2, "function_graph", false, 3), f(1, "function", true, 0)})
	if c.Header.Flags&tracefile.FlagComplete != 0 || c.Header.LostNoBuf != 5 || c.Header.Tracer != "mixed" ||
		len(c.Threads) != 3 || fmt.Sprint(c.PIDs) != "[1 2]" {
		t.Errorf("combined: flags %#x, lost %d, tracer %q, %d threads, pids %v", c.Header.Flags, c.Header.LostNoBuf,
			c.Header.Tracer, len(c.Threads), c.PIDs)
	}
	if one := f(7, "function", true, 0); Combine([]*Forest{one}) != one {
		t.Error("one forest is not itself")
	}
}

// Two traces' paths name main and f by their own *Func; once unified, one pointer each
// (and a static f of another file stays apart).
func TestUnify(t *testing.T) {
	fn := func(name, file string) *symbolize.Func {
		return &symbolize.Func{Name: name, Module: "/bin/p", File: file}
	}
	paths := func(main, f, caller *symbolize.Func) ThreadPaths {
		p := &Paths{}
		p.Root.Children = []*PathNode{{Func: main, Children: []*PathNode{{Func: f}}}}
		p.Pairs = []*CallPair{{Func: f, Caller: caller, Count: 1}}
		return ThreadPaths{Paths: p}
	}
	m1, f1 := fn("main", "p.c"), fn("f", "p.c")
	m2, f2, g2 := fn("main", "p.c"), fn("f", "p.c"), fn("f", "q.c")
	ps := []ThreadPaths{paths(m1, f1, m1), paths(m2, f2, m2), paths(m2, g2, nil)}
	Unify(ps)
	for i, tp := range ps[:2] {
		n := tp.Root.Children[0]
		if n.Func != m1 || n.Children[0].Func != f1 || tp.Pairs[0].Func != f1 || tp.Pairs[0].Caller != m1 {
			t.Errorf("trace %d: not unified", i)
		}
	}
	if g := ps[2].Root.Children[0].Children[0].Func; g != g2 || ps[2].Pairs[0].Caller != nil {
		t.Errorf("the static f of q.c was taken for p.c's")
	}
}

// Combine is the forest of fs as a reader of several traces makes it (Combiner).
func Combine(fs []*Forest) *Forest {
	var c Combiner
	for _, f := range fs {
		c.Add(f)
	}
	return c.Forest()
}
