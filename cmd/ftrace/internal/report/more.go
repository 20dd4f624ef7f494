package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// ThreadStat is one thread's figures for `report --threads`. Times in nanoseconds.
type ThreadStat struct {
	TID   int
	Name  string
	Calls uint64 // every recorded call (graph and function tracer)
	Funcs int    // distinct functions called
	// Traced is the time inside recorded calls: the sum of the outermost calls'
	// durations.
	Traced uint64
	// Top is the function with the most self time in the thread, TopSelf that time.
	Top     string
	TopSelf uint64
	Lost    uint64
}

// Threads returns one row per selected thread, the most traced time first (then the
// most calls, then by tid).
func Threads(f *calltree.Forest, tids []int) []*ThreadStat {
	var out []*ThreadStat
	for _, t := range f.Threads {
		if !selected(t.TID, tids) {
			continue
		}
		s := &ThreadStat{TID: t.TID, Name: t.Name, Lost: t.Lost}
		funcs := map[*symbolize.Func]uint64{} // self time
		for _, c := range t.Calls {
			s.Calls++
			funcs[c.Func] += 0
		}
		for _, r := range t.Roots {
			s.Traced += r.Duration()
		}
		var walk func(ns []*calltree.Node)
		walk = func(ns []*calltree.Node) {
			for _, n := range ns {
				s.Calls++
				funcs[n.Func] += n.Self()
				walk(n.Children)
			}
		}
		walk(t.Roots)
		s.Funcs = len(funcs)
		for fn, self := range funcs {
			if s.Top == "" || self > s.TopSelf || self == s.TopSelf && fn.Name < s.Top {
				s.Top, s.TopSelf = fn.Name, self
			}
		}
		out = append(out, s)
	}
	sortThreads(out)
	return out
}

// ThreadsStream is Threads reading the trace as a stream (lookup safe for concurrent use).
// filter (nil: none) wraps each thread's observer: the figures are then those of the
// calls it tells on, the traced time that of the outermost ones it shows.
func ThreadsStream(st *tracefile.Stream, lookup calltree.Lookup, tids []int, filter func(calltree.Observer) calltree.Observer) ([]*ThreadStat, *calltree.Forest, error) {
	o := Options{Filter: filter}
	obs, threads, err := calltree.WalkStream(st, lookup, tids, func(th *tracefile.Thread) calltree.Observer { return o.wrap(newAgg(th.TID)) }, nil)
	if err != nil {
		return nil, nil, err
	}
	var out []*ThreadStat
	for k, t := range threads {
		a := calltree.Unwrap(obs[k]).(*agg)
		traced := t.RootTime
		if r, ok := obs[k].(interface{ RootTime() uint64 }); ok {
			traced = r.RootTime()
		}
		s := &ThreadStat{TID: t.TID, Name: t.Name, Lost: t.Lost, Traced: traced, Funcs: len(a.stats)}
		for fn, fs := range a.stats {
			s.Calls += fs.Calls
			if s.Top == "" || fs.Self > s.TopSelf || fs.Self == s.TopSelf && fn.Name < s.Top {
				s.Top, s.TopSelf = fn.Name, fs.Self
			}
		}
		out = append(out, s)
	}
	sortThreads(out)
	return out, calltree.ForestOf(st.Trace, threads), nil
}

func sortThreads(out []*ThreadStat) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Traced != b.Traced {
			return a.Traced > b.Traced
		}
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		return a.TID < b.TID
	})
}

// WriteThreadsText prints the thread rows as a table; function traces have no times.
func WriteThreadsText(w io.Writer, f *calltree.Forest, rows []*ThreadStat, limit int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	more := 0
	if limit > 0 && len(rows) > limit {
		rows, more = rows[:limit], len(rows)-limit
	}
	timed := f.HasGraph() || f.Header.Tracer == "function_graph"
	hdr := []string{"TID", "CALLS", "FUNCS"}
	if timed {
		hdr = append(hdr, "TRACED", "TOP SELF")
	}
	hdr = append(hdr, "LOST")
	fmt.Fprintf(tw, "%s\t  THREAD\n", strings.Join(hdr, "\t"))
	for _, s := range rows {
		row := []string{fmt.Sprint(s.TID), fmt.Sprint(s.Calls), fmt.Sprint(s.Funcs)}
		if timed {
			top := "-"
			if s.Top != "" {
				top = s.Top + " " + Dur(s.TopSelf)
			}
			row = append(row, Dur(s.Traced), top)
		}
		row = append(row, fmt.Sprint(s.Lost))
		name := s.Name
		if name == "" {
			name = "?"
		}
		fmt.Fprintf(tw, "%s\t  %s\n", strings.Join(row, "\t"), name)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeMore(w, more, "threads")
}

// writeMore says how many rows a limit left out.
func writeMore(w io.Writer, n int, what string) error {
	if n == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "# ... %d more %s (--limit)\n", n, what)
	return err
}

// Edge is one caller→function or function→callee pair of `report --callers`.
// Total is the time of the calls on the edge (the callee's inclusive time; a
// recursion counts once, as in Stat.Total).
type Edge struct {
	Name  string
	Calls uint64
	Total uint64
}

// CallersReport is a function's callers and callees.
type CallersReport struct {
	Func string
	// Names are the functions matched (one, or a glob's several: overloads), sorted.
	Names          []string
	Calls          uint64
	Total, Self    uint64
	Callers        []*Edge // "(root)": the outermost recorded call of a thread
	Callees        []*Edge
	Timed, Matched bool
}

// RootCaller names the caller of a thread's outermost recorded calls.
const RootCaller = "(root)"

// FuncMatch tells whether a function is one asked about.
type FuncMatch func(*symbolize.Func) bool

// callersObs gathers, from one thread's calls as a calltree.Observer (and Enterer) sees
// them, the callers and callees of the functions match accepts.
type callersObs struct {
	match            FuncMatch
	is               map[*symbolize.Func]bool // match's answers
	names            map[string]bool          // of the functions it accepted
	calls, tot, self uint64
	matched, adopted bool
	callers, callees map[string]*Edge
	stack            []callersFrame
	// open calls of name and on each name→callee edge, so that a recursion's time
	// counts once
	active       int
	activeCallee map[string]int
}

type callersFrame struct {
	name   string
	it     bool // a call of the function asked about
	callee bool // called by it
}

// newCallersObs: match nil is the function called name.
func newCallersObs(name string, match FuncMatch) *callersObs {
	if match == nil {
		match = func(fn *symbolize.Func) bool { return fn.Name == name }
	}
	return &callersObs{match: match, is: map[*symbolize.Func]bool{}, names: map[string]bool{},
		callers: map[string]*Edge{}, callees: map[string]*Edge{}, activeCallee: map[string]int{}}
}

// it reports whether fn is a function asked about.
func (o *callersObs) it(fn *symbolize.Func) bool {
	if fn == nil {
		return false
	}
	v, ok := o.is[fn]
	if !ok {
		v = o.match(fn)
		o.is[fn] = v
		if v {
			o.names[fn.Name] = true
		}
	}
	return v
}

func edgeOf(m map[string]*Edge, n string) *Edge {
	e := m[n]
	if e == nil {
		e = &Edge{Name: n}
		m[n] = e
	}
	return e
}

func (o *callersObs) Call(c *calltree.Call, _ int) {
	switch {
	case o.it(c.Func):
		o.matched = true
		o.calls++
		cn := RootCaller
		if c.Caller != nil {
			cn = c.Caller.Name
		}
		edgeOf(o.callers, cn).Calls++
	case o.it(c.Caller):
		edgeOf(o.callees, c.Func.Name).Calls++
	}
}

func (o *callersObs) Enter(fn *symbolize.Func, _ int, _ uint64) {
	callee := len(o.stack) > 0 && o.stack[len(o.stack)-1].it
	if callee {
		o.activeCallee[fn.Name]++
	}
	it := o.it(fn)
	if it {
		o.active++
	}
	o.stack = append(o.stack, callersFrame{name: fn.Name, it: it, callee: callee})
}

func (o *callersObs) Close(f *calltree.Frame) {
	if f.Adopt || len(o.stack) == 0 {
		// an exit that became the caller of the calls before it: they were counted
		// with another caller; the thread is counted again from its tree
		o.adopted = true
		return
	}
	e := o.stack[len(o.stack)-1]
	o.stack = o.stack[:len(o.stack)-1]
	d := f.Duration()
	if e.it {
		o.matched = true
		o.calls++
		o.self += f.Self()
		cn := RootCaller
		if len(o.stack) > 0 {
			cn = o.stack[len(o.stack)-1].name
		}
		ed := edgeOf(o.callers, cn)
		ed.Calls++
		if o.active == 1 { // no enclosing call of name: a recursion counts once
			o.tot += d
			ed.Total += d
		}
		o.active--
	}
	if e.callee {
		ed := edgeOf(o.callees, e.name)
		ed.Calls++
		if o.activeCallee[e.name] == 1 {
			ed.Total += d
		}
		o.activeCallee[e.name]--
	}
}

// add sums another thread's counts into r.
func (o *callersObs) add(r *CallersReport, callers, callees map[string]*Edge) {
	r.Matched = r.Matched || o.matched
	for n := range o.names {
		if !slices.Contains(r.Names, n) {
			r.Names = append(r.Names, n)
		}
	}
	r.Calls += o.calls
	r.Total += o.tot
	r.Self += o.self
	for _, m := range []struct{ from, to map[string]*Edge }{{o.callers, callers}, {o.callees, callees}} {
		for n, e := range m.from {
			t := edgeOf(m.to, n)
			t.Calls += e.Calls
			t.Total += e.Total
		}
	}
}

func (r *CallersReport) finish(callers, callees map[string]*Edge) (*CallersReport, error) {
	if !r.Matched {
		return nil, fmt.Errorf("no calls of %q recorded", r.Func)
	}
	r.Callers, r.Callees = sortEdges(callers), sortEdges(callees)
	sort.Strings(r.Names)
	if len(r.Names) == 1 {
		r.Func = r.Names[0] // the name a glob or a name without parameters stands for
	}
	return r, nil
}

// Callers gathers the callers and callees of the function called name (or, with match,
// of the functions it accepts: name says what was asked) over the selected threads; an
// error when no such function was recorded.
func Callers(f *calltree.Forest, name string, match FuncMatch, tids []int) (*CallersReport, error) {
	r := &CallersReport{Func: name, Timed: f.HasGraph() || f.Header.Tracer == "function_graph"}
	callers, callees := map[string]*Edge{}, map[string]*Edge{}
	for _, t := range f.Threads {
		if !selected(t.TID, tids) {
			continue
		}
		o := newCallersObs(name, match)
		t.Frames(o)
		o.add(r, callers, callees)
	}
	return r.finish(callers, callees)
}

// CallersStream is Callers reading the trace as a stream (lookup safe for concurrent
// use). A thread whose stream rearranges calls already seen (an exit without entry that
// becomes the caller of the calls before it) is counted from its tree.
func CallersStream(st *tracefile.Stream, lookup calltree.Lookup, name string, match FuncMatch, tids []int, filter func(calltree.Observer) calltree.Observer) (*CallersReport, error) {
	fo := Options{Filter: filter}
	obs, threads, err := calltree.WalkStream(st, lookup, tids,
		func(*tracefile.Thread) calltree.Observer { return fo.wrap(newCallersObs(name, match)) }, nil)
	if err != nil {
		return nil, err
	}
	f := calltree.ForestOf(st.Trace, threads)
	r := &CallersReport{Func: name, Timed: f.HasGraph() || f.Header.Tracer == "function_graph"}
	callers, callees := map[string]*Edge{}, map[string]*Edge{}
	idx := map[int]int{}
	for i, th := range st.Trace.Threads {
		idx[th.TID] = i
	}
	for k, t := range threads {
		o := calltree.Unwrap(obs[k]).(*callersObs)
		if o.adopted {
			tree, err := calltree.ReadThread(st, idx[t.TID], lookup)
			if err != nil {
				return nil, err
			}
			o = newCallersObs(name, match)
			tree.Frames(fo.wrap(o))
		}
		o.add(r, callers, callees)
	}
	return r.finish(callers, callees)
}

func sortEdges(m map[string]*Edge) []*Edge {
	out := make([]*Edge, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		return a.Name < b.Name
	})
	return out
}

// WriteCallersText prints the callers (above) and callees (below) of the function, with
// its own line between them, as perf report's caller/callee view does.
func WriteCallersText(w io.Writer, r *CallersReport, limit int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	callers, callees := r.Callers, r.Callees
	if limit > 0 && len(callers) > limit {
		callers = callers[:limit]
	}
	if limit > 0 && len(callees) > limit {
		callees = callees[:limit]
	}
	line := func(calls, total uint64, name string) {
		if r.Timed {
			fmt.Fprintf(tw, "%d\t%s\t  %s\n", calls, Dur(total), name)
		} else {
			fmt.Fprintf(tw, "%d\t  %s\n", calls, name)
		}
	}
	if len(r.Names) > 1 {
		// a glob's functions (overloads) together: which they are
		fmt.Fprintf(w, "# %s: %d functions: %s\n", r.Func, len(r.Names), strings.Join(r.Names, ", "))
	}
	if r.Timed {
		fmt.Fprintf(tw, "CALLS\tTOTAL\t  CALLERS / FUNCTION / CALLEES\n")
	} else {
		fmt.Fprintf(tw, "CALLS\t  CALLERS / FUNCTION / CALLEES\n")
	}
	// the rows a limit leaves out, in the column of names
	more := func(n int, what string) {
		if n > 0 {
			if r.Timed {
				fmt.Fprintf(tw, "\t\t    ... %d more %s\n", n, what)
			} else {
				fmt.Fprintf(tw, "\t    ... %d more %s\n", n, what)
			}
		}
	}
	for _, e := range callers {
		line(e.Calls, e.Total, "  <- "+e.Name)
	}
	more(len(r.Callers)-len(callers), "callers")
	self := ""
	if r.Timed {
		self = " (self " + Dur(r.Self) + ")"
	}
	line(r.Calls, r.Total, r.Func+self)
	for _, e := range callees {
		line(e.Calls, e.Total, "  -> "+e.Name)
	}
	more(len(r.Callees)-len(callees), "callees")
	return tw.Flush()
}
