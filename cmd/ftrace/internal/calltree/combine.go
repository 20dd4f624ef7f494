package calltree

import (
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// A Combiner makes the forest of several traces' forests (the processes of one run) as
// the readers count them: their threads, lost events, whether all are complete, their
// pids. It takes them one at a time and keeps the threads of each but not the forest
// itself (a reader of many traces need not keep every header).
type Combiner struct {
	first, c *Forest
	pids     map[int]bool
	// marked: the threads with markers and their trace's start, on its clock and on the
	// wall clock (0: unknown); Forest counts their markers' times from the run's start
	marked []markedThread
	placed bool
}

type markedThread struct {
	t     *Thread
	start uint64
	wall  int64
}

// Add adds the forest f.
func (cb *Combiner) Add(f *Forest) {
	switch {
	case cb.first == nil:
		cb.first = f // one forest alone is itself
		return
	case cb.c == nil:
		cb.c = &Forest{Header: cb.first.Header, Main: cb.first.Main}
		cb.c.Header.Flags |= tracefile.FlagComplete
		cb.c.Header.LostNoBuf = 0
		cb.pids = map[int]bool{}
		cb.add(cb.first)
	}
	cb.add(f)
}

func (cb *Combiner) add(f *Forest) {
	c := cb.c
	if f.Header.Flags&tracefile.FlagComplete == 0 {
		c.Header.Flags &^= tracefile.FlagComplete
	}
	if f.Header.Tracer != c.Header.Tracer {
		c.Header.Tracer = "mixed"
	}
	c.Header.LostNoBuf += f.Header.LostNoBuf
	c.Threads = append(c.Threads, f.Threads...)
	for _, t := range f.Threads {
		if len(t.Markers) > 0 {
			cb.marked = append(cb.marked, markedThread{t, f.Start, f.Header.WallStart})
		}
	}
	if !cb.pids[f.Header.PID] {
		cb.pids[f.Header.PID] = true
		c.PIDs = append(c.PIDs, f.Header.PID)
	}
}

// Forest is the combination of the forests added (nil: none). Each trace's times are on
// its own clock: in a combination its markers' times count from the run's start (Start 0),
// each trace placed by the wall-clock time it started (one that does not say starts with
// the earliest), as dump --chrome places them.
func (cb *Combiner) Forest() *Forest {
	if cb.c == nil {
		return cb.first
	}
	if !cb.placed {
		cb.placed = true
		var base int64
		for _, m := range cb.marked {
			if m.wall > 0 && (base == 0 || m.wall < base) {
				base = m.wall
			}
		}
		for _, m := range cb.marked {
			var off uint64
			if m.wall > 0 && base > 0 {
				off = uint64(m.wall - base)
			}
			for i := range m.t.Markers {
				mk := &m.t.Markers[i]
				mk.First = max(mk.First, m.start) - m.start + off
			}
		}
		cb.c.Start = 0
	}
	return cb.c
}

// A Unifier makes the paths of several traces, given one at a time, name each function
// by one *symbolize.Func (the first met of those with its name, object and source
// position), so that what keys functions by pointer (profiles, tries) sees one function,
// not one per trace.
type Unifier struct {
	seen map[funcID]*symbolize.Func
}

type funcID struct {
	name, mod, file string
	line            int
}

// Unify makes the functions of paths those met before with their name, object and
// source position.
func (u *Unifier) Unify(paths []ThreadPaths) {
	if u.seen == nil {
		u.seen = map[funcID]*symbolize.Func{}
	}
	one := func(fn *symbolize.Func) *symbolize.Func {
		if fn == nil {
			return nil
		}
		k := funcID{fn.Name, fn.Module, fn.File, fn.Line}
		if f := u.seen[k]; f != nil {
			return f
		}
		u.seen[k] = fn
		return fn
	}
	var walk func(ps []*PathNode)
	walk = func(ps []*PathNode) {
		for _, p := range ps {
			p.Func = one(p.Func)
			p.kids = nil // keyed by the old pointers
			walk(p.Children)
		}
	}
	for _, tp := range paths {
		for _, c := range tp.Pairs {
			c.Func, c.Caller = one(c.Func), one(c.Caller)
		}
		walk(tp.Root.Children)
	}
}
