package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/argfmt"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// counter is the first pass's observer: it notes what a streamed graph cannot show
// (calls whose exit adopted the calls before it) and counts the function-tracer calls.
type counter struct {
	calls, frames uint64
	adopted       bool
}

func (c *counter) Call(*calltree.Call, int) { c.calls++ }

// Enter makes the walker apply the rules of observers that follow the calls' nesting.
func (c *counter) Enter(*symbolize.Func, int, uint64) {}
func (c *counter) Close(f *calltree.Frame) {
	c.frames++
	if f.Adopt {
		c.adopted = true
	}
}

// WriteStream prints what Write prints, reading the trace as a stream: a first pass
// counts (the header of each thread says what was lost), a second prints each thread as
// its events come and stops at --limit. Memory grows with the call depth, not the events.
// A thread whose stream rearranges calls already seen (an exit without entry that
// becomes the caller of earlier calls, possible in version-1 traces) is built as a tree.
func WriteStream(w io.Writer, st *tracefile.Stream, lookup calltree.Lookup, o Options, progress calltree.Progress) error {
	if limitedAtOnce(st, o) {
		return writeLimited(w, st, lookup, o)
	}
	// every thread: the times shown count from the trace's earliest event
	obs, threads, err := calltree.WalkStream(st, lookup, nil,
		func(*tracefile.Thread) calltree.Observer { return o.wrap(&counter{}) }, progress)
	if err != nil {
		return err
	}
	if o.Counted != nil {
		o.Counted()
	}
	f := calltree.ForestOf(st.Trace, threads)
	idx := map[int]int{}
	for i, th := range st.Trace.Threads {
		idx[th.TID] = i
	}
	ew := &errWriter{w: w}
	first := true
	for k, t := range threads {
		if !selected(t.TID, o.TIDs) {
			continue
		}
		c := calltree.Unwrap(obs[k]).(*counter)
		if !first {
			ew.printf("\n")
		}
		first = false
		if o.Limit > 0 {
			limitedHeader(ew, t)
		} else {
			threadHeader(ew, t)
		}
		i := idx[t.TID]
		if o.Filter != nil && c.calls == 0 && c.frames == 0 {
			ew.printf("# no calls match the filters\n")
			continue
		}
		if c.adopted || t.Tree {
			if err := treeThread(ew, st, i, lookup, f, c, o); err != nil {
				return err
			}
			continue
		}
		if c.calls > 0 {
			if err := streamCalls(ew, st, i, lookup, f, t, c.calls, o); err != nil {
				return err
			}
		}
		if t.Nodes > 0 && (o.Filter == nil || c.frames > 0) {
			if err := streamGraph(ew, st, i, lookup, f, t, o); err != nil {
				return err
			}
		}
		if t.Nodes == 0 && c.calls == 0 {
			ew.printf("# no calls recorded\n")
		}
		if ew.err != nil {
			return ew.err
		}
	}
	return ew.err
}

// threadTitle is the first line of a thread's output.
func threadTitle(ew *errWriter, t *calltree.Thread) {
	name := ""
	if t.Name != "" {
		name = " (" + t.Name + ")"
	}
	ew.printf("# thread %d%s\n", t.TID, name)
}

func threadHeader(ew *errWriter, t *calltree.Thread) {
	threadTitle(ew, t)
	if t.Lost > 0 || t.LostDepth > 0 || t.Unmatched > 0 {
		// said first: the calls below are not all there is
		ew.printf("# thread %d: %d events lost (%s of %d), %d calls not graphed (depth limit, or made inside the tracer), %d returns without entry\n",
			t.TID, t.Lost, tracefile.Pct(t.Lost, t.Lost+t.Events), t.Lost+t.Events, t.LostDepth, t.Unmatched)
	}
}

// limitedAtOnce: with --limit and no read-time filter, a trace of one tracer (version 2
// or later) is printed as it is read, each thread stopping at the limit, without the pass
// that counts the whole trace first (it read gigabytes for graph -n 30). A thread that
// turns out to need more (calls of the other tracer, a return that takes earlier calls as
// its callees) is printed as WriteStream prints it otherwise.
func limitedAtOnce(st *tracefile.Stream, o Options) bool {
	h := st.Trace.Header
	return o.Limit > 0 && o.Filter == nil && h.Version >= tracefile.Version2 &&
		(h.Tracer == tracefile.TracerFunction || h.Tracer == tracefile.TracerFunctionGraph)
}

func writeLimited(w io.Writer, st *tracefile.Stream, lookup calltree.Lookup, o Options) error {
	if o.Counted != nil {
		o.Counted() // the thread tables say what was lost: no need to read the events
	}
	tr := st.Trace
	f := calltree.ForestOf(tr, nil)
	// the times shown count from the trace's earliest event: the first of each thread
	var err error
	if f.Start, err = st.Origin(); err != nil {
		return err
	}
	graphs := tr.Header.Tracer == tracefile.TracerFunctionGraph
	ew := &errWriter{w: w}
	first := true
	for i, th := range tr.Threads {
		if !selected(th.TID, o.TIDs) {
			continue
		}
		if !first {
			ew.printf("\n")
		}
		first = false
		t := &calltree.Thread{TID: th.TID, Name: th.Name, Lost: th.Lost, LostDepth: th.LostDepth, Events: st.Hint(i)}
		limitedHeader(ew, t)
		if t.Events == 0 {
			ew.printf("# no calls recorded\n")
			continue
		}
		var buf bytes.Buffer
		bw := &errWriter{w: &buf}
		var err error
		other := false
		st.Values = o.Values != nil
		if graphs {
			graphHeader(bw, o)
			p := newGraphPrinter(bw, f, o, th.TID)
			err = calltree.Follow(st, i, lookup, &onlyGraph{p, &other}, func() bool { return p.full || other })
			if p.full {
				bw.printf("# ... output limited to %d lines\n", o.Limit)
			}
		} else {
			bw.printf("#   TIME (us)   FUNCTION <- CALLER\n")
			p := &callPrinter{ew: bw, f: f, limit: o.Limit, markers: true, vals: o.Values}
			err = calltree.Follow(st, i, lookup, &onlyCalls{p, &other}, func() bool { return p.told > p.limit || other })
			if p.told > p.n {
				bw.printf("# ... output limited to %d calls\n", o.Limit)
			}
		}
		switch {
		case err == nil && !other:
			ew.printf("%s", buf.String())
		case err == nil || errors.Is(err, calltree.ErrNeedTree):
			if err := countedThread(ew, st, i, lookup, f, t, o); err != nil {
				return err
			}
		default:
			return err
		}
		if ew.err != nil {
			return ew.err
		}
	}
	return ew.err
}

// onlyGraph and onlyCalls pass a printer the calls of its tracer; one of the other tracer
// (switched live) is noted, and the thread printed after counting it.
type onlyGraph struct {
	*graphPrinter
	other *bool
}

func (g *onlyGraph) Call(*calltree.Call, int) { *g.other = true }

type onlyCalls struct {
	*callPrinter
	other *bool
}

func (c *onlyCalls) Close(*calltree.Frame) { *c.other = true }

// countedThread prints thread i (t) as WriteStream does after its counting pass, counting
// that thread alone: built as a tree when its stream needs one, else streamed.
func countedThread(ew *errWriter, st *tracefile.Stream, i int, lookup calltree.Lookup, f *calltree.Forest, t *calltree.Thread, o Options) error {
	c := &counter{}
	err := calltree.Follow(st, i, lookup, c, func() bool { return false })
	if c.adopted || errors.Is(err, calltree.ErrNeedTree) {
		return treeThread(ew, st, i, lookup, f, c, o)
	}
	if err != nil {
		return err
	}
	t.Nodes = int(c.frames) // markers go with the calls when there is no graph
	if c.calls > 0 {
		if err := streamCalls(ew, st, i, lookup, f, t, c.calls, o); err != nil {
			return err
		}
	}
	if c.frames > 0 {
		return streamGraph(ew, st, i, lookup, f, t, o)
	}
	return nil
}

// limitedHeader is a thread's header under --limit: what was lost as the trace's thread
// tables say, without the counts only a reading of all its events gives.
func limitedHeader(ew *errWriter, t *calltree.Thread) {
	threadTitle(ew, t)
	if t.Lost > 0 || t.LostDepth > 0 {
		ew.printf("# thread %d: events were lost or calls not graphed (ftrace info has the counts)\n", t.TID)
	}
}

// treeThread prints thread i from its call tree (read whole).
func treeThread(ew *errWriter, st *tracefile.Stream, i int, lookup calltree.Lookup, f *calltree.Forest, c *counter, o Options) error {
	t, err := calltree.ReadThread(st, i, lookup)
	if err != nil {
		return err
	}
	// with a filter, what the first pass saw kept (it followed this tree too)
	if len(t.Calls) > 0 && (o.Filter == nil || c.calls > 0) {
		writeCalls(ew, f, t, o)
	}
	if len(t.Roots) > 0 && (o.Filter == nil || c.frames > 0) {
		writeGraph(ew, f, t, o)
	}
	return nil
}

// callPrinter prints function-tracer calls (and the program's markers, when the
// thread has no graph calls to print them among).
type callPrinter struct {
	ew      *errWriter
	f       *calltree.Forest
	limit   int
	n       int
	told    int // calls told, printed or not
	markers bool
	vals    *argfmt.Formatter
	args    *tracefile.Values // of the next call
}

func (p *callPrinter) Values(v *tracefile.Values) {
	if !v.Ret {
		p.args = v
	}
}

// Marker prints a program's marker (ftrace_trace_marker) as the kernel's trace does
// (not counted in the limit, which is of calls; none after it is reached).
func (p *callPrinter) Marker(ts uint64, text string) {
	if !p.markers || p.limit > 0 && p.n >= p.limit {
		return
	}
	p.ew.printf("%13.3f   /* %s */\n", float64(ts-p.f.Start)/1e3, text)
}

func (p *callPrinter) Close(*calltree.Frame) {}
func (p *callPrinter) Call(c *calltree.Call, _ int) {
	p.told++
	if p.limit > 0 && p.n >= p.limit {
		return
	}
	p.n++
	caller := "?"
	if c.Caller != nil {
		caller = c.Caller.Name
	}
	name := c.Func.Name
	if p.args != nil {
		name = argfmt.WithArgs(c.Func, p.vals.Args(c.Func, p.args))
	}
	p.args = nil
	p.ew.printf("%13.3f   %s <- %s\n", float64(c.TS-p.f.Start)/1e3, name, caller)
}

func streamCalls(ew *errWriter, st *tracefile.Stream, i int, lookup calltree.Lookup, f *calltree.Forest, t *calltree.Thread, calls uint64, o Options) error {
	ew.printf("#   TIME (us)   FUNCTION <- CALLER\n")
	p := &callPrinter{ew: ew, f: f, limit: o.Limit, markers: t.Nodes == 0, vals: o.Values}
	st.Values = o.Values != nil
	if err := calltree.Follow(st, i, lookup, o.wrap(p), func() bool { return p.limit > 0 && p.n >= p.limit }); err != nil {
		return err
	}
	if o.Limit > 0 && uint64(p.n) < calls {
		ew.printf("# ... output limited to %d calls\n", o.Limit)
	}
	return nil
}

// graphPrinter prints graph calls as they begin and end: a call is a leaf line when it
// ends with no call inside it, else an opening line (printed when its first callee
// begins) and a closing line.
type graphPrinter struct {
	ew    *errWriter
	f     *calltree.Forest
	o     Options
	tid   string
	lines int
	full  bool
	stack []gframe
	// the values recorded with the next entry and the next return
	args, ret *tracefile.Values
}

type gframe struct {
	fn     *symbolize.Func
	start  uint64
	opened bool
	args   string
	valued bool // args were recorded
}

func (p *graphPrinter) Values(v *tracefile.Values) {
	if v.Ret {
		p.ret = v
	} else {
		p.args = v
	}
}

func newGraphPrinter(ew *errWriter, f *calltree.Forest, o Options, tid int) *graphPrinter {
	return &graphPrinter{ew: ew, f: f, o: o, tid: fmt.Sprintf("%6d)", tid)}
}

func graphHeader(ew *errWriter, o Options) {
	if o.Time {
		ew.printf("#%12s  %6s %14s |  %s\n", "TIME (us)", "TID", "DURATION", "FUNCTION CALLS")
	} else {
		ew.printf("#%6s %14s |  %s\n", "TID", "DURATION", "FUNCTION CALLS")
	}
}

func (p *graphPrinter) line(ts uint64, dur, text string) {
	if p.o.Limit > 0 && p.lines >= p.o.Limit {
		p.full = true
		return
	}
	p.lines++
	if p.o.Time {
		p.ew.printf("%13.3f  ", float64(ts-p.f.Start)/1e3)
	}
	p.ew.printf("%s %s |  %s\n", p.tid, dur, text)
}

// shown: calls at this depth are printed (deeper ones fold into their caller).
func (p *graphPrinter) shown(depth int) bool { return p.o.Depth == 0 || depth < p.o.Depth }

// folds: a call at this depth is printed as a leaf, whatever it calls.
func (p *graphPrinter) folds(depth int) bool { return p.o.Depth > 0 && depth+1 >= p.o.Depth }

func callText(fn *symbolize.Func) string {
	if strings.Contains(fn.Name, "(") { // C++: the demangled name has its parameters
		return fn.Name
	}
	return fn.Name + "()"
}

func (g *gframe) text() string {
	if g.valued {
		return argfmt.WithArgs(g.fn, g.args)
	}
	return callText(g.fn)
}

func (p *graphPrinter) Call(*calltree.Call, int) {}

func (p *graphPrinter) Enter(fn *symbolize.Func, _ int, start uint64) {
	if d := len(p.stack) - 1; d >= 0 {
		if top := &p.stack[d]; !top.opened && p.shown(d) && !p.folds(d) {
			top.opened = true
			p.line(top.start, blank, strings.Repeat("  ", d)+top.text()+" {")
		}
	}
	g := gframe{fn: fn, start: start}
	if p.args != nil {
		g.args, g.valued = p.o.Values.Args(fn, p.args), true
		p.args = nil
	}
	p.stack = append(p.stack, g)
}

// Marker prints a program's marker (ftrace_trace_marker) where it came among the calls,
// as a /* comment */ line (the kernel's function_graph shows trace_marker writes so).
func (p *graphPrinter) Marker(ts uint64, text string) {
	d := len(p.stack)
	if !p.shown(d) {
		return // inside a call printed as a leaf
	}
	if d > 0 {
		if top := &p.stack[d-1]; !top.opened {
			top.opened = true
			p.line(top.start, blank, strings.Repeat("  ", d-1)+top.text()+" {")
		}
	}
	p.line(ts, blank, strings.Repeat("  ", d)+"/* "+text+" */")
}

func (p *graphPrinter) Close(f *calltree.Frame) {
	d := len(p.stack) - 1
	s := p.stack[d]
	p.stack = p.stack[:d]
	rv := p.ret
	p.ret = nil
	if !p.shown(d) {
		return
	}
	note := ""
	if f.Partial {
		note = " /* unfinished */"
	} else if f.Unwound {
		note = " /* unwound */"
	}
	indent := strings.Repeat("  ", d)
	ret := ""
	if rv != nil && !f.Partial && !f.Unwound {
		ret = " = " + p.o.Values.Ret(f.Func, rv)
	}
	if !s.opened {
		p.line(f.Start, duration(f.Duration()), indent+s.text()+ret+";"+note)
		return
	}
	p.line(f.End, duration(f.Duration()), indent+"}"+ret+" /* "+f.Func.Name+" */"+note)
}

func streamGraph(ew *errWriter, st *tracefile.Stream, i int, lookup calltree.Lookup, f *calltree.Forest, t *calltree.Thread, o Options) error {
	graphHeader(ew, o)
	p := newGraphPrinter(ew, f, o, t.TID)
	st.Values = o.Values != nil
	if err := calltree.Follow(st, i, lookup, o.wrap(p), func() bool { return p.full }); err != nil {
		return err
	}
	if p.full {
		ew.printf("# ... output limited to %d lines\n", o.Limit)
	}
	return nil
}
