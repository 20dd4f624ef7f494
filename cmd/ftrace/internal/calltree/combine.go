package calltree

import (
	"slices"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// Combine is the forest of several traces' forests (the processes of one run) as the
// readers count them: their threads, lost events, whether all are complete, their pids.
func Combine(fs []*Forest) *Forest {
	if len(fs) == 1 {
		return fs[0]
	}
	c := &Forest{Header: fs[0].Header}
	c.Header.Flags |= tracefile.FlagComplete
	c.Header.LostNoBuf = 0
	for _, f := range fs {
		if f.Header.Flags&tracefile.FlagComplete == 0 {
			c.Header.Flags &^= tracefile.FlagComplete
		}
		if f.Header.Tracer != c.Header.Tracer {
			c.Header.Tracer = "mixed"
		}
		c.Header.LostNoBuf += f.Header.LostNoBuf
		c.Threads = append(c.Threads, f.Threads...)
		if !slices.Contains(c.PIDs, f.Header.PID) {
			c.PIDs = append(c.PIDs, f.Header.PID)
		}
	}
	return c
}

// Unify makes the paths of several traces name each function by one *symbolize.Func
// (the first met of those with its name, object and source position), so that what
// keys functions by pointer (profiles, tries) sees one function, not one per trace.
func Unify(paths []ThreadPaths) {
	type id struct {
		name, mod, file string
		line            int
	}
	seen := map[id]*symbolize.Func{}
	one := func(fn *symbolize.Func) *symbolize.Func {
		if fn == nil {
			return nil
		}
		k := id{fn.Name, fn.Module, fn.File, fn.Line}
		if u := seen[k]; u != nil {
			return u
		}
		seen[k] = fn
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
