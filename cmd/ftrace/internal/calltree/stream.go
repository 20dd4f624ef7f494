package calltree

import (
	"errors"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// Frame is a graph call as a streaming reader sees it when it ends: what Build would
// have made a Node, without its children (only the sum of their durations).
type Frame struct {
	Func *symbolize.Func
	// ID numbers the functions densely from 0 within one Walker (-1: not numbered).
	ID         int
	IP         uint64
	Start, End uint64
	// Children is the sum of the children's durations.
	Children uint64
	// Top: no enclosing call of the same function (a recursion's outermost call).
	Top              bool
	Partial, Unwound bool
	// Adopt marks an exit without a recorded entry that became the caller of every call
	// the thread recorded before it (Build's rule): those calls of Func are no longer
	// outermost.
	Adopt bool
}

// Duration is End - Start.
func (f *Frame) Duration() uint64 {
	if f.End < f.Start {
		return 0
	}
	return f.End - f.Start
}

// Self is the duration minus the children's durations (0 when they exceed it).
func (f *Frame) Self() uint64 {
	d := f.Duration()
	if f.Children > d {
		return 0
	}
	return d - f.Children
}

// Observer is told what a thread's events mean, in stream order: function-tracer calls
// as they come, graph calls when they end (children before their caller). The Frame
// passed to Close is reused after it returns.
type Observer interface {
	// Call is told of a function-tracer call; id numbers c.Func as Frame.ID does.
	Call(c *Call, id int)
	Close(f *Frame)
}

// Nester is an Observer that cannot take an Adopt frame: what it was told of the calls
// before cannot be rearranged (a read-time filter has decided on them as they came). A
// Walker returns ErrNeedTree instead, so that the thread is built as a tree and told by
// Thread.Frames, which never adopts.
type Nester interface {
	Observer
	NoAdopt()
}

// Wrapper is an Observer that passes (some of) what it is told to another one.
type Wrapper interface {
	Observer
	Unwrap() Observer
}

// Unwrap returns the innermost observer of a chain of Wrappers.
func Unwrap(o Observer) Observer {
	for {
		w, ok := o.(Wrapper)
		if !ok {
			return o
		}
		o = w.Unwrap()
	}
}

// ErrNeedTree is returned by a Walker for a stream it cannot follow without the whole
// tree: an exit without entry that adopts some, not all, of the calls before it (only
// possible after the stream lost data). Build the thread's tree instead.
var ErrNeedTree = errors.New("calltree: this thread's stream needs the whole tree")

// Walker follows one thread's events as Build does, in memory that grows with the call
// depth and the number of functions, not with the events.
type Walker struct {
	lookup Lookup
	obs    Observer
	enter  Enterer // obs, if it is one
	// noAdopt: obs cannot take an Adopt frame (see Nester)
	noAdopt bool
	// addresses resolve to function ids: a direct-mapped cache in front of a map
	dm     [dmSize]dmEntry
	ids    map[uint64]int32
	funcID map[*symbolize.Func]int32
	funcs  []*symbolize.Func
	active []int32 // open calls per function id
	stack  []wframe
	frame  Frame // passed to obs.Close
	call   Call  // passed to obs.Call
	prevTS uint64
	seen   bool
	// the roots so far: how many, the sum of their durations (when all are closed),
	// the earliest and the latest-appended one's start
	roots                     int
	rootsDur                  uint64
	minRootStart, lastRootStr uint64
	// T holds the thread's counts (Roots and Calls stay empty).
	T Thread
	// Text gives a Marker event's text (tracefile.Stream.MarkerText); nil: markers
	// are not passed on.
	Text func(uint64) string
	mark MarkerObserver // obs, if it is one
	// Vals takes a ValuesKind event's record (tracefile.Stream.TakeValues); nil: they
	// are dropped.
	Vals func(*tracefile.Event) *tracefile.Values
	vobs ValueObserver // obs, if it is one
	// Args, with Vals: a call with recorded arguments is told as a function of its own
	// per distinct values (nil: as its function).
	Args *ArgKeys
	pend *tracefile.Values // arguments of the next call
}

// ValueObserver is an Observer that is also told of the arguments (before the Enter or
// Call they belong to) and return values (before the Close) the trace recorded.
type ValueObserver interface {
	Values(v *tracefile.Values)
}

// MarkerObserver is an Observer that is also told of the program's markers
// (ftrace_trace_marker), in stream order.
type MarkerObserver interface {
	Marker(ts uint64, text string)
}

const dmSize = 1024

type dmEntry struct {
	addr uint64
	id   int32
	ok   bool
}

type wframe struct {
	ip, start uint64
	children  uint64
	id        int32
	depth     int32
	top       bool
}

// NewWalker returns a Walker for thread th (its facts are copied into W.T) that resolves
// addresses with lookup (which it caches) and tells obs.
func NewWalker(th *tracefile.Thread, lookup Lookup, obs Observer) *Walker {
	en, _ := obs.(Enterer)
	_, nest := obs.(Nester)
	mk, _ := obs.(MarkerObserver)
	vo, _ := obs.(ValueObserver)
	return &Walker{
		lookup: lookup, obs: obs, enter: en, noAdopt: nest, mark: mk, vobs: vo,
		ids:    map[uint64]int32{},
		funcID: map[*symbolize.Func]int32{},
		T:      Thread{TID: th.TID, Name: th.Name},
	}
}

// id resolves addr to its function's id.
func (w *Walker) id(addr uint64) int32 {
	e := &w.dm[(addr^addr>>12)%dmSize]
	if e.ok && e.addr == addr {
		return e.id
	}
	id, ok := w.ids[addr]
	if !ok {
		id = w.funcIndex(w.lookup(addr))
		w.ids[addr] = id
	}
	*e = dmEntry{addr: addr, id: id, ok: true}
	return id
}

// funcIndex is fn's id, given on first sight.
func (w *Walker) funcIndex(fn *symbolize.Func) int32 {
	id, ok := w.funcID[fn]
	if !ok {
		id = int32(len(w.funcs))
		w.funcs = append(w.funcs, fn)
		w.active = append(w.active, 0)
		w.funcID[fn] = id
	}
	return id
}

// callID is the id of a call of addr: its function's, or with Args that of its
// function with the arguments recorded just before it.
func (w *Walker) callID(addr uint64) int32 {
	id := w.id(addr)
	if v := w.pend; v != nil {
		w.pend = nil
		if fn := w.Args.funcOf(w.funcs[id], v); fn != w.funcs[id] {
			id = w.funcIndex(fn)
		}
	}
	return id
}

func (w *Walker) fn(addr uint64) *symbolize.Func { return w.funcs[w.id(addr)] }

// Events follows a batch of events.
func (w *Walker) Events(evs []tracefile.Event) error {
	t := &w.T
	for i := range evs {
		ev := &evs[i]
		if ev.Kind == tracefile.Marker {
			if w.Text != nil {
				text := w.Text(ev.IP)
				w.T.Markers = tallyMarker(w.T.Markers, ev.TS, text)
				if w.mark != nil {
					w.mark.Marker(ev.TS, text)
				}
			}
			continue // a message, not a call: not counted
		}
		if ev.Kind == tracefile.ValuesKind {
			if w.Vals != nil {
				if v := w.Vals(ev); v != nil {
					if w.vobs != nil {
						w.vobs.Values(v)
					}
					if w.Args != nil && !v.Ret {
						w.pend = v
					}
				}
			}
			continue
		}
		if !w.seen || ev.TS < t.First {
			t.First = ev.TS
		}
		if !w.seen || ev.TS < t.FirstEvent {
			t.FirstEvent = ev.TS
		}
		if ev.TS > t.Last {
			t.Last = ev.TS
		}
		w.seen = true
		t.Events++
		switch ev.Kind {
		case tracefile.Call:
			id := w.callID(ev.IP)
			c := &w.call
			*c = Call{TS: ev.TS, IP: ev.IP, Func: w.funcs[id]}
			if ev.Parent != 0 {
				c.Caller = callerOf(w.fn, ev.Parent)
			}
			w.obs.Call(c, int(id))
		case tracefile.Entry:
			for ev.Depth >= 0 && len(w.stack) > 0 && w.stack[len(w.stack)-1].depth >= ev.Depth {
				k := len(w.stack) - 1
				w.close(max(w.prevTS, w.stack[k].start), true, false)
				t.Unclosed++
			}
			f := wframe{id: w.callID(ev.IP), ip: ev.IP, start: ev.TS, depth: ev.Depth}
			f.top = w.active[f.id] == 0
			w.active[f.id]++
			if len(w.stack) == 0 {
				w.addRoot(ev.TS)
			}
			w.stack = append(w.stack, f)
			if w.enter != nil {
				w.enter.Enter(w.funcs[f.id], int(f.id), f.start)
			}
			t.Nodes++
		case tracefile.Exit:
			w.pend = nil // arguments belong to the call that follows them
			j := w.match(ev)
			if j < 0 {
				t.Unmatched++
				if ev.Parent != 0 && ev.Parent <= ev.TS {
					if err := w.adopt(ev); err != nil {
						return err
					}
				}
				continue
			}
			for k := len(w.stack) - 1; k > j; k-- {
				w.close(ev.TS, true, false)
				t.Unclosed++
			}
			w.close(ev.TS, false, ev.Flags&tracefile.FlagUnwound != 0)
		}
		w.prevTS = ev.TS
	}
	return nil
}

// End closes the calls still open when the stream ended.
func (w *Walker) End() {
	for len(w.stack) > 0 {
		w.close(w.T.Last, true, false)
		w.T.Unclosed++
	}
	w.T.RootTime = w.rootsDur
}

func (w *Walker) addRoot(start uint64) {
	if w.roots == 0 || start < w.minRootStart {
		w.minRootStart = start
	}
	w.lastRootStr = start
	w.roots++
}

// close ends the innermost open call at end.
func (w *Walker) close(end uint64, partial, unwound bool) {
	k := len(w.stack) - 1
	s := &w.stack[k]
	f := &w.frame
	*f = Frame{Func: w.funcs[s.id], ID: int(s.id), IP: s.ip, Start: s.start, End: end, Children: s.children,
		Top: s.top, Partial: partial, Unwound: unwound}
	d := f.Duration()
	if k > 0 {
		w.stack[k-1].children += d
	} else {
		w.rootsDur += d
	}
	w.active[s.id]--
	w.stack = w.stack[:k]
	w.obs.Close(f)
}

// adopt handles an exit whose entry is not in the stream but whose entry time is known:
// Build makes it the caller of the roots that started after it.
func (w *Walker) adopt(ev *tracefile.Event) error {
	t := &w.T
	id := w.id(ev.IP)
	f := Frame{Func: w.funcs[id], ID: int(id), IP: ev.IP, Start: ev.Parent, End: ev.TS, Top: true,
		Unwound: ev.Flags&tracefile.FlagUnwound != 0}
	switch {
	case w.roots == 0 || w.lastRootStr < f.Start:
		// nothing to adopt: a root of its own (below the open calls, when there are some:
		// Build appends it to the roots, which Enter cannot say; such a stream is rare)
		if len(w.stack) > 0 && w.enter != nil {
			return ErrNeedTree
		}
		w.addRoot(f.Start)
		w.rootsDur += f.Duration()
		if w.enter != nil {
			w.enter.Enter(f.Func, f.ID, f.Start)
		}
	case w.minRootStart >= f.Start && len(w.stack) == 0 && !w.noAdopt:
		// every root: it is the caller of everything so far
		f.Children, f.Adopt = w.rootsDur, true
		w.roots, w.rootsDur, w.minRootStart, w.lastRootStr = 1, f.Duration(), f.Start, f.Start
	default:
		return ErrNeedTree
	}
	t.Nodes++
	if f.Start < t.First {
		t.First = f.Start
	}
	w.obs.Close(&f)
	return nil
}

// match is Build's match over the walker's stack.
func (w *Walker) match(ev *tracefile.Event) int {
	ip := ev.IP
	if ev.Parent != 0 {
		for k := len(w.stack) - 1; k >= 0; k-- {
			if w.stack[k].ip == ip && w.stack[k].start == ev.Parent {
				return k
			}
			if w.stack[k].start < ev.Parent {
				break
			}
		}
	}
	for k := len(w.stack) - 1; k >= 0; k-- {
		if w.stack[k].ip == ip {
			return k
		}
	}
	id := w.id(ip)
	for k := len(w.stack) - 1; k >= 0; k-- {
		if w.stack[k].id == id {
			return k
		}
	}
	return -1
}

var errStop = errors.New("calltree: stopped")

// Follow walks thread i of a stream into obs, with its markers, and ends the calls left
// open, unless stop (checked after each batch of events) says enough was seen first.
func Follow(st *tracefile.Stream, i int, lookup Lookup, obs Observer, stop func() bool) error {
	w := NewWalker(st.Trace.Threads[i], lookup, obs)
	w.Text = st.MarkerText
	w.Vals = st.TakeValues
	err := st.Events(i, func(evs []tracefile.Event) error {
		if err := w.Events(evs); err != nil {
			return err
		}
		if stop() {
			return errStop
		}
		return nil
	})
	switch {
	case err == nil:
		w.End()
	case errors.Is(err, errStop):
		err = nil
	}
	return err
}

// ReadThread reads thread i of a stream whole and builds its tree (for the rare thread
// a stream cannot follow alone), its markers tallied.
func ReadThread(st *tracefile.Stream, i int, lookup Lookup) (*Thread, error) {
	var evs []tracefile.Event
	if err := st.Events(i, func(b []tracefile.Event) error {
		for k := range b {
			if b[k].Kind == tracefile.ValuesKind {
				st.TakeValues(&b[k]) // a tree shows no values
				continue
			}
			evs = append(evs, b[k])
		}
		return nil
	}); err != nil {
		return nil, err
	}
	whole := *st.Trace.Threads[i]
	whole.Events = evs
	return buildThread(&whole, lookup, st.MarkerText, func(int) {}), nil
}

// BuildThread builds one thread's tree (as Build does for each thread).
func BuildThread(th *tracefile.Thread, lookup Lookup) *Thread {
	return buildThread(th, lookup, nil, func(int) {})
}

// Frames tells obs about t's calls and graph calls as a Walker over the same stream
// would (the order of calls and frames between each other may differ).
func (t *Thread) Frames(obs Observer) {
	for i := range t.Calls {
		obs.Call(&t.Calls[i], -1)
	}
	active := map[*symbolize.Func]int{}
	en, _ := obs.(Enterer)
	var walk func(n *Node)
	walk = func(n *Node) {
		f := Frame{Func: n.Func, ID: -1, IP: n.IP, Start: n.Start, End: n.End, Top: active[n.Func] == 0,
			Partial: n.Partial, Unwound: n.Unwound}
		if en != nil {
			en.Enter(n.Func, -1, n.Start)
		}
		active[n.Func]++
		for _, c := range n.Children {
			walk(c)
			f.Children += c.Duration()
		}
		active[n.Func]--
		obs.Close(&f)
	}
	for _, r := range t.Roots {
		walk(r)
	}
}
