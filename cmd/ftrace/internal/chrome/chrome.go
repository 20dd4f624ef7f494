// Package chrome writes a trace in the Chrome trace-event JSON format (the "JSON Object
// Format" that chrome://tracing and ui.perfetto.dev open): a begin ("B") and an end ("E")
// event per function-graph call, in the order the calls began and ended, one instant
// ("i") event per function-tracer call, and process_name/thread_name metadata ("M")
// events. Timestamps are in microseconds since the start of the trace.
//
// Begin/end pairs rather than complete ("X") events: a call's begin is written when it
// begins, before its duration is known, so a trace of any size is written as it is read,
// in memory that grows with the call depth (uftrace's dump --chrome has the same form).
package chrome

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/argfmt"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// Event is one trace event.
type Event struct {
	Name string            `json:"name,omitempty"` // none on "E": the begin's
	Cat  string            `json:"cat,omitempty"`
	Ph   string            `json:"ph"`
	TS   float64           `json:"ts"`
	Dur  *float64          `json:"dur,omitempty"`
	PID  int               `json:"pid"`
	TID  int               `json:"tid"`
	S    string            `json:"s,omitempty"`
	Args map[string]string `json:"args,omitempty"`
}

// File is the top-level JSON object.
type File struct {
	TraceEvents     []Event           `json:"traceEvents"`
	DisplayTimeUnit string            `json:"displayTimeUnit"`
	OtherData       map[string]string `json:"otherData,omitempty"`
}

// writer emits the document's events one by one.
type writer struct {
	bw     *bufio.Writer
	n      int
	pid    int
	start  uint64 // the current trace's time 0 (trace clock, ns)
	shift  int64  // ns added to its times: where it starts among several traces
	err    error
	buf    []byte
	quoted map[string][]byte // JSON of the strings seen
	source map[*symbolize.Func]string
}

func newWriter(w io.Writer, h *tracefile.Header, start uint64) (*writer, error) {
	cw, err := newDoc(w, h, 1)
	if err == nil {
		cw.process(h, start, 0)
	}
	return cw, err
}

// newDoc begins the document of n traces, the first with header h.
func newDoc(w io.Writer, h *tracefile.Header, n int) (*writer, error) {
	cw := &writer{bw: bufio.NewWriterSize(w, 1<<16)}
	other := map[string]string{"tracer": h.Tracer, "producer": "ftkit ftrace"}
	if len(h.Command) > 0 && n == 1 {
		other["command"] = strings.Join(h.Command, " ")
	}
	if n > 1 {
		other["traces"] = strconv.Itoa(n)
	}
	ob, err := json.Marshal(other)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cw.bw, "{\"displayTimeUnit\":\"ns\",\"otherData\":%s,\"traceEvents\":[\n", ob)
	return cw, cw.err
}

// process makes the trace with header h the one written next: its process, its time 0
// (start) at shift ns.
func (cw *writer) process(h *tracefile.Header, start uint64, shift int64) {
	cw.pid, cw.start, cw.shift = h.PID, start, shift
	if cw.pid == 0 {
		cw.pid = 1
	}
	pname := "traced process"
	if len(h.Command) > 0 {
		pname = filepath.Base(h.Command[0])
	}
	cw.emit(Event{Name: "process_name", Ph: "M", PID: cw.pid, Args: map[string]string{"name": pname}})
}

func (cw *writer) emit(e Event) {
	if cw.err != nil {
		return
	}
	if cw.n > 0 {
		cw.buf = append(cw.buf[:0], ",\n"...)
	} else {
		cw.buf = cw.buf[:0]
	}
	cw.buf = cw.appendEvent(cw.buf, &e)
	cw.n++
	_, cw.err = cw.bw.Write(cw.buf)
}

// appendEvent appends e as json.Marshal writes it, without its reflection: names repeat,
// so each string is escaped once (encoding/json took 3/4 of dump --chrome's time: 0.5M
// events/s).
func (cw *writer) appendEvent(b []byte, e *Event) []byte {
	b = append(b, '{')
	if e.Name != "" {
		b = append(b, `"name":`...)
		b = cw.appendString(b, e.Name)
		b = append(b, ',')
	}
	if e.Cat != "" {
		b = append(b, `"cat":`...)
		b = cw.appendString(b, e.Cat)
		b = append(b, ',')
	}
	b = append(b, `"ph":`...)
	b = cw.appendString(b, e.Ph)
	b = append(b, `,"ts":`...)
	b = appendFloat(b, e.TS)
	if e.Dur != nil {
		b = append(b, `,"dur":`...)
		b = appendFloat(b, *e.Dur)
	}
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(e.PID), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, int64(e.TID), 10)
	if e.S != "" {
		b = append(b, `,"s":`...)
		b = cw.appendString(b, e.S)
	}
	if len(e.Args) > 0 {
		keys := make([]string, 0, len(e.Args))
		for k := range e.Args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, `,"args":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = cw.appendString(b, k)
			b = append(b, ':')
			b = cw.appendString(b, e.Args[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendString appends s as a JSON string, escaped once per distinct string.
func (cw *writer) appendString(b []byte, s string) []byte {
	q, ok := cw.quoted[s]
	if !ok {
		if cw.quoted == nil || len(cw.quoted) > 1<<16 {
			cw.quoted = map[string][]byte{}
		}
		q = appendJSONString(nil, s)
		cw.quoted[s] = q
	}
	return append(b, q...)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// appendFloat formats f as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func (cw *writer) us(ts uint64) float64 {
	t := cw.shift
	if ts > cw.start {
		t += int64(ts - cw.start)
	}
	return float64(t) / 1e3
}

func (cw *writer) thread(tid int, name string) {
	if name == "" {
		name = fmt.Sprintf("thread %d", tid)
	}
	cw.emit(Event{Name: "thread_name", Ph: "M", PID: cw.pid, TID: tid, Args: map[string]string{"name": name}})
}

func (cw *writer) end() error {
	if cw.err != nil {
		return cw.err
	}
	cw.bw.WriteString("\n]}\n")
	return cw.bw.Flush()
}

// printer turns one thread's calls into events: it is the calltree.Observer (and
// Enterer) of a Walker over the thread's stream or of its tree's Frames.
type printer struct {
	cw        *writer
	tid       int
	vals      *argfmt.Formatter
	args, ret *tracefile.Values // recorded with the next call / return
}

// Values keeps the arguments or return value for the event they come before.
func (p *printer) Values(v *tracefile.Values) {
	if v.Ret {
		p.ret = v
	} else {
		p.args = v
	}
}

func (p *printer) Call(c *calltree.Call, _ int) {
	args := map[string]string{}
	if c.Caller != nil {
		args["caller"] = c.Caller.Name
	}
	if p.args != nil {
		args["args"] = p.vals.Args(c.Func, p.args)
		p.args = nil
	}
	p.cw.emit(Event{Name: c.Func.Name, Cat: "function", Ph: "i", S: "t", TS: p.cw.us(c.TS), PID: p.cw.pid, TID: p.tid, Args: args})
}

// Marker is a program's marker (ftrace_trace_marker): an instant event of category marker.
func (p *printer) Marker(ts uint64, text string) {
	p.cw.emit(Event{Name: text, Cat: "marker", Ph: "i", S: "t", TS: p.cw.us(ts), PID: p.cw.pid, TID: p.tid})
}

func (p *printer) Enter(fn *symbolize.Func, _ int, start uint64) {
	e := Event{Name: fn.Name, Cat: "function", Ph: "B", TS: p.cw.us(start), PID: p.cw.pid, TID: p.tid}
	if fn.File != "" {
		src, ok := p.cw.source[fn]
		if !ok {
			if p.cw.source == nil {
				p.cw.source = map[*symbolize.Func]string{}
			}
			src = fmt.Sprintf("%s:%d", fn.File, fn.Line)
			p.cw.source[fn] = src
		}
		e.Args = map[string]string{"source": src}
	}
	if p.args != nil {
		if e.Args == nil {
			e.Args = map[string]string{}
		}
		e.Args["args"] = p.vals.Args(fn, p.args)
		p.args = nil
	}
	p.cw.emit(e)
}

// Close writes the end event without the name and category: the viewers end the
// innermost open "B" of the thread and keep its name (the format makes both optional on
// "E"), and a long C++ name repeated there made up half the document.
func (p *printer) Close(f *calltree.Frame) {
	e := Event{Ph: "E", TS: p.cw.us(f.End), PID: p.cw.pid, TID: p.tid}
	if f.Partial {
		e.Args = map[string]string{"unfinished": "true"}
	}
	if p.ret != nil {
		if !f.Partial && !f.Unwound {
			e.Args = map[string]string{"retval": p.vals.Ret(f.Func, p.ret)}
		}
		p.ret = nil
	}
	p.cw.emit(e)
}

// Write writes the trace-event JSON of the forest to w, event by event.
func Write(w io.Writer, f *calltree.Forest) error {
	cw, err := newWriter(w, &f.Header, f.Start)
	if err != nil {
		return err
	}
	for _, t := range f.Threads {
		cw.thread(t.TID, t.Name)
		t.Frames(&printer{cw: cw, tid: t.TID})
	}
	return cw.end()
}

// counter is the first pass's observer: it notes a thread whose stream rearranges calls
// already seen (an exit without entry that became the caller of earlier calls).
type counter struct{ adopted bool }

func (c *counter) Call(*calltree.Call, int) {}

// Enter makes the walker apply the rules of observers that follow the calls' nesting.
func (c *counter) Enter(*symbolize.Func, int, uint64) {}
func (c *counter) Close(f *calltree.Frame) {
	if f.Adopt {
		c.adopted = true
	}
}

// WriteStream writes what Write writes for the trace's call trees, reading the trace as a
// stream, each thread's events as they come. A version-1 trace is read twice: a first
// pass finds the trace's start and the threads that need their tree (a return that takes
// earlier calls as its callees: version 2 has none, its blocks' headers give the calls
// open where the events resume). A thread's function-tracer calls and graph calls
// interleave in time order (Write gives the calls first); each event is the same. Memory
// grows with the call depth, not the events.
//
// tids selects threads (none: all); wrap, if not nil, puts the read-time filters
// between the walk and the writer.
// vals, when not nil, adds the arguments (to B and call events) and return values (to E
// events) the trace recorded (the filters keep those of the calls they show).
func WriteStream(w io.Writer, st *tracefile.Stream, lookup calltree.Lookup, tids []int, wrap func(calltree.Observer) calltree.Observer, progress calltree.Progress, vals *argfmt.Formatter) error {
	return WriteStreams(w, []Input{{St: st, Lookup: lookup, TIDs: tids, Wrap: wrap, Progress: progress}}, vals)
}

// Input is one trace for WriteStreams, with WriteStream's arguments.
type Input struct {
	St       *tracefile.Stream
	Lookup   calltree.Lookup
	TIDs     []int
	Wrap     func(calltree.Observer) calltree.Observer
	Progress calltree.Progress
}

// WriteStreams is WriteStream for the traces of several processes (of one run) in one
// document, each process under its own pid, placed in time by the wall-clock time each
// trace started at (those that do not say start with the earliest).
func WriteStreams(w io.Writer, ins []Input, vals *argfmt.Formatter) error {
	return WriteOpened(w, len(ins), func(k int) (Input, func(), error) { return ins[k], func() {}, nil }, vals)
}

// WriteOpened is WriteStreams of n traces each opened by open(k) when it is read (twice:
// a first pass finds where it starts) and closed by the function it returns: a test
// suite's thousand traces need not all be open at once.
func WriteOpened(w io.Writer, n int, open func(k int) (Input, func(), error), vals *argfmt.Formatter) error {
	firsts := make([]first, n)
	var origin int64
	for k := range n {
		in, done, err := open(k)
		if err != nil {
			return err
		}
		fr, err := firstPass(in)
		done()
		if err != nil {
			return err
		}
		h := in.St.Trace.Header
		if h.WallStart != 0 {
			fr.wall = h.WallStart + int64(fr.f.Start) - int64(h.StartNS)
			if origin == 0 || fr.wall < origin {
				origin = fr.wall
			}
		}
		firsts[k] = fr
	}
	cw, err := newDoc(w, &firsts[0].f.Header, n)
	if err != nil {
		return err
	}
	for k := range n {
		fr := firsts[k]
		var shift int64
		if fr.wall != 0 && origin != 0 {
			shift = fr.wall - origin
		}
		in, done, err := open(k)
		if err != nil {
			return err
		}
		cw.process(&fr.f.Header, fr.f.Start, shift)
		if fr.counted {
			in.Progress = nil
		}
		err = writeThreads(cw, in, fr.threads, fr.tree, vals)
		done()
		if err != nil {
			return err
		}
	}
	return cw.end()
}

// first is what a first pass over one trace finds: its threads (those that need their
// tree: a version-1 trace's), its forest's header and start, its wall-clock start.
type first struct {
	threads []*calltree.Thread
	tree    []bool // the threads written from their tree
	counted bool   // a first pass read the trace (and showed the progress)
	f       *calltree.Forest
	wall    int64 // wall-clock ns of f.Start (0: unknown)
}

func firstPass(in Input) (first, error) {
	var fr first
	if in.St.Trace.Header.Version >= tracefile.Version2 {
		// one pass: the start from each thread's first block
		start, err := in.St.Origin()
		if err != nil {
			return fr, err
		}
		fr.f = calltree.ForestOf(in.St.Trace, nil)
		fr.f.Start = start
		for _, th := range in.St.Trace.Threads {
			if len(in.TIDs) == 0 || slices.Contains(in.TIDs, th.TID) {
				fr.threads = append(fr.threads, &calltree.Thread{TID: th.TID, Name: th.Name})
			}
		}
		fr.tree = make([]bool, len(fr.threads))
		return fr, nil
	}
	obs, threads, err := calltree.WalkStream(in.St, in.Lookup, in.TIDs,
		func(*tracefile.Thread) calltree.Observer { return &counter{} }, in.Progress)
	if err != nil {
		return fr, err
	}
	fr.f, fr.threads, fr.counted = calltree.ForestOf(in.St.Trace, threads), threads, true
	for k, t := range threads {
		fr.tree = append(fr.tree, obs[k].(*counter).adopted || t.Tree)
	}
	return fr, nil
}

// writeThreads writes each thread's events of one trace: from its tree when tree says
// its stream rearranges calls, else as they come.
func writeThreads(cw *writer, in Input, threads []*calltree.Thread, tree []bool, vals *argfmt.Formatter) error {
	st, wrap := in.St, in.Wrap
	if wrap == nil {
		wrap = func(o calltree.Observer) calltree.Observer { return o }
	}
	idx := map[int]int{}
	var total uint64
	for i, th := range st.Trace.Threads {
		idx[th.TID] = i
		total += st.Hint(i)
	}
	var done uint64
	for k, t := range threads {
		cw.thread(t.TID, t.Name)
		p := &printer{cw: cw, tid: t.TID, vals: vals}
		i := idx[t.TID]
		if tree[k] {
			if err := treeThread(st, i, in.Lookup, wrap(p)); err != nil {
				return err
			}
			if cw.err != nil {
				return cw.err
			}
			continue
		}
		st.Values = vals != nil
		th := st.Trace.Threads[i]
		err := calltree.Follow(st, i, in.Lookup, wrap(p), func() bool {
			if in.Progress != nil {
				in.Progress(int(done+th.N), int(total))
			}
			return cw.err != nil
		})
		done += th.N
		st.Values = false
		if err != nil {
			return err
		}
		if cw.err != nil {
			return cw.err
		}
	}
	if in.Progress != nil && total > 0 {
		in.Progress(int(total), int(total))
	}
	return nil
}

// treeThread writes thread i from its call tree (read whole).
func treeThread(st *tracefile.Stream, i int, lookup calltree.Lookup, p calltree.Observer) error {
	t, err := calltree.ReadThread(st, i, lookup)
	if err != nil {
		return err
	}
	t.Frames(p)
	return nil
}
