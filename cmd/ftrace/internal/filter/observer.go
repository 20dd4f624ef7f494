package filter

import (
	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// What becomes of a call, decided when it begins (pending: when it ends).
const (
	shown   = iota
	pending // shown if it, or a call inside it, lasts at least -t; with -C, if a -C call inside it is shown
	hidden  // not shown, but the calls inside it may be (outside -F, before --since, -H)
	dropped // not shown, nor anything inside it
)

// frame is an open call as the filter sees it.
type frame struct {
	fn    *symbolize.Func
	id    int
	start uint64
	state uint8
	// inside: within the subtree of a -F function (always, without -F)
	inside bool
	// leaf: a call of a -C function (shown or pending): what it calls is left out
	leaf bool
	// level is the number of shown (or pending) calls open down to this one
	level int
	top   bool
	// children sums the durations of the shown calls directly below this one
	children uint64
	// args were recorded with the call's entry (told with it when it is shown)
	args *tracefile.Values
}

// observer applies a Filter to one thread's frames. The calls it tells next form the
// filtered tree: a hidden call's shown callees hang from the nearest shown caller (or
// are outermost), a dropped call goes with all it calls, and a caller's Children (so its
// self time) counts only the durations of its shown callees: the time of the calls left
// out is its own, as that of calls never recorded.
type observer struct {
	f        *Filter
	next     calltree.Observer
	enter    calltree.Enterer
	stack    []frame
	byID     []uint8 // match bits by function id (0: not classified yet)
	byFunc   map[*symbolize.Func]uint8
	activeID []int32 // shown open calls per function id
	activeFn map[*symbolize.Func]int
	rootTime uint64
	out      calltree.Frame
	// values: next, if it is told the recorded arguments and return values; they come
	// before the event they belong to and wait here for the filter's decision on it
	values     calltree.ValueObserver
	args, retv *tracefile.Values
}

// Values keeps the arguments or return value recorded for the next event: they are told
// with it if it is shown, and dropped with it otherwise.
func (o *observer) Values(v *tracefile.Values) {
	if v.Ret {
		o.retv = v
	} else {
		o.args = v
	}
}

// NoAdopt makes a Walker build the tree of a thread whose stream would rearrange calls
// already told (calltree.Nester): a filter decides on calls as they come.
func (o *observer) NoAdopt() {}

// Marker passes a program's marker on when its time is in the range and no call filter
// (-F, -N, -H, -C, -D, -t) is given: with one, where the marker falls among the calls shown is
// not well defined.
func (o *observer) Marker(ts uint64, text string) {
	if !o.f.MarkerKept(ts) {
		return
	}
	if m, ok := o.next.(calltree.MarkerObserver); ok {
		m.Marker(ts, text)
	}
}

// MarkerKept: a marker at ts is shown when it is in the time range and no call filter
// (-F, -N, -H, -C, -D, -t) is given.
func (f *Filter) MarkerKept(ts uint64) bool {
	return !f.callFilter() && f.inRange(ts) == 0
}

// Unwrap is the observer told what is kept.
func (o *observer) Unwrap() calltree.Observer { return o.next }

// RootTime is the sum of the durations of the outermost calls shown (report --threads'
// traced time).
func (o *observer) RootTime() uint64 { return o.rootTime }

func (o *observer) class(fn *symbolize.Func, id int) uint8 {
	if id >= 0 {
		for len(o.byID) <= id {
			o.byID = append(o.byID, 0)
		}
		if o.byID[id] == 0 {
			o.byID[id] = o.f.classify(fn)
		}
		return o.byID[id]
	}
	m, ok := o.byFunc[fn]
	if !ok {
		m = o.f.classify(fn)
		o.byFunc[fn] = m
	}
	return m
}

func (o *observer) Call(c *calltree.Call, id int) {
	args := o.args
	o.args = nil
	if o.f.CallKept(c) {
		o.tell(args)
		o.next.Call(c, id)
	}
}

func (o *observer) Enter(fn *symbolize.Func, id int, start uint64) {
	fr := frame{fn: fn, id: id, start: start, inside: len(o.f.include) == 0, args: o.args}
	o.args = nil
	var parent *frame
	if n := len(o.stack); n > 0 {
		parent = &o.stack[n-1]
		fr.inside = fr.inside || parent.inside
		fr.level = parent.level
		if parent.state == shown || parent.state == pending {
			fr.level++
		}
	}
	m := o.class(fn, id)
	fr.inside = fr.inside || m&included != 0
	callers := len(o.f.callers) > 0
	switch r := o.f.callIn(start); {
	case parent != nil && (parent.state == dropped || parent.leaf),
		m&excluded != 0,
		r > 0:
		fr.state = dropped
	case r < 0 || !fr.inside || m&hiding != 0:
		fr.state = hidden
	case o.f.depth > 0 && fr.level >= o.f.depth:
		fr.state = dropped
	case callers && m&calling != 0:
		// shown with the calls that lead to it: now, or once it lasted -t
		fr.leaf = true
		fr.state = pending
		if o.f.minDur == 0 {
			o.stack = append(o.stack, fr)
			o.showPath(len(o.stack) - 1)
			return
		}
	case callers, o.f.minDur > 0:
		fr.state = pending
	default:
		fr.state = shown
	}
	o.stack = append(o.stack, fr)
	if fr.state == shown {
		o.show(len(o.stack) - 1)
	}
}

// showPath shows call k of the stack and the pending calls that lead to it, outermost
// first: those down from the nearest shown one (hidden calls between stay hidden).
func (o *observer) showPath(k int) {
	i := k
	for i > 0 && o.stack[i-1].state != shown {
		i--
	}
	for ; i <= k; i++ {
		if o.stack[i].state == pending {
			o.show(i)
		}
	}
}

// show tells next that call k of the stack begins.
func (o *observer) show(k int) {
	fr := &o.stack[k]
	fr.state = shown
	if fr.id >= 0 {
		for len(o.activeID) <= fr.id {
			o.activeID = append(o.activeID, 0)
		}
		fr.top = o.activeID[fr.id] == 0
		o.activeID[fr.id]++
	} else {
		fr.top = o.activeFn[fr.fn] == 0
		o.activeFn[fr.fn]++
	}
	o.tell(fr.args)
	fr.args = nil
	if o.enter != nil {
		o.enter.Enter(fr.fn, fr.id, fr.start)
	}
}

func (o *observer) Close(f *calltree.Frame) {
	k := len(o.stack) - 1
	retv := o.retv
	o.retv = nil
	if k < 0 || f.Adopt { // a Walker does not adopt for a Nester
		return
	}
	fr := &o.stack[k]
	if fr.state == pending && f.Duration() >= o.f.minDur && (len(o.f.callers) == 0 || fr.leaf) {
		// it is shown, and so are the pending calls around it (they last longer)
		o.showPath(k)
	}
	if fr.state != shown {
		o.stack = o.stack[:k]
		return
	}
	if fr.id >= 0 {
		o.activeID[fr.id]--
	} else {
		o.activeFn[fr.fn]--
	}
	out := &o.out
	*out = *f
	out.Children, out.Top = fr.children, fr.top
	d := f.Duration()
	o.stack = o.stack[:k]
	// the nearest shown caller, past the hidden calls between (-H); the pending ones
	// around a shown call are shown with it
	i := k - 1
	for i >= 0 && o.stack[i].state == hidden {
		i--
	}
	if i >= 0 && o.stack[i].state == shown {
		o.stack[i].children += d
	} else {
		o.rootTime += d
	}
	o.tell(retv)
	o.next.Close(out)
}

// tell passes values held for a call now shown on to next (when it takes them).
func (o *observer) tell(v *tracefile.Values) {
	if v != nil && o.values != nil {
		o.values.Values(v)
	}
}
