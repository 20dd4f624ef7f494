// Package filter selects, when a trace is read, the calls the ftrace reading commands
// show: the subtrees of some functions (-F), functions left out with everything they
// call (-N), functions hidden alone (-H), the calling paths of some functions (-C), a
// depth (-D), a minimum duration (-t), threads (--tid) and a time range
// (--since/--until), with uftrace's meanings (docs/ftrace-cli.md, Filters). It sits
// between a call-tree walk and what consumes its frames (an Observer wrapping an
// Observer), so a streamed trace is filtered in memory bounded by the call depth.
package filter

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

// Options are the filters as given on the command line.
type Options struct {
	Filter  []string // -F: only the subtrees rooted at calls of these functions
	Notrace []string // -N: leave out these functions' calls and everything they call
	Hide    []string // -H: leave out these functions' calls only (their callees take their place)
	// Callers (-C): only the calls of these functions, as leaves, and the calls that
	// lead to them
	Callers []string
	// Depth shows calls down to this depth (0: all), counted from the outermost call
	// shown (with -F, the filtered function's call is depth 0).
	Depth int
	// MinDur drops calls shorter than this, with what they call (0: none).
	MinDur time.Duration
	TIDs   []int // only these threads (all when empty)
	// Since and Until bound, relative to the trace start, the entry time of the calls
	// shown: since <= entry < until. Until 0 is no bound.
	Since, Until time.Duration
}

// Filter is a parsed, checked set of filters, bound to a trace's start time (At).
type Filter struct {
	include, exclude []*Glob
	hide, callers    []*Glob
	depth            int
	minDur           uint64
	tids             []int
	since, until     uint64 // ns after origin; until 0: none
	origin           uint64
	// entered: a call was entered in the time range (shared by the copies At makes)
	entered *atomic.Bool
}

// New checks and compiles o.
func New(o Options) (*Filter, error) {
	f := &Filter{depth: o.Depth, tids: o.TIDs, entered: new(atomic.Bool)}
	for _, p := range o.Filter {
		g, err := Compile(p)
		if err != nil {
			return nil, fmt.Errorf("--filter: %w", err)
		}
		f.include = append(f.include, g)
	}
	for _, l := range []struct {
		flag  string
		globs []string
		to    *[]*Glob
	}{{"--notrace", o.Notrace, &f.exclude}, {"--hide", o.Hide, &f.hide}, {"--caller-filter", o.Callers, &f.callers}} {
		for _, p := range l.globs {
			g, err := Compile(p)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", l.flag, err)
			}
			*l.to = append(*l.to, g)
		}
	}
	switch {
	case o.Depth < 0:
		return nil, fmt.Errorf("--depth must not be negative (got %d)", o.Depth)
	case o.MinDur < 0:
		return nil, fmt.Errorf("--time-filter must not be negative (got %s)", o.MinDur)
	case o.Since < 0:
		return nil, fmt.Errorf("--since must not be negative (got %s)", o.Since)
	case o.Until < 0:
		return nil, fmt.Errorf("--until must not be negative (got %s)", o.Until)
	case o.Until > 0 && o.Until <= o.Since:
		return nil, fmt.Errorf("--until (%s) must be after --since (%s)", o.Until, o.Since)
	}
	for _, t := range o.TIDs {
		if t <= 0 {
			return nil, fmt.Errorf("--tid %d: thread ids are positive", t)
		}
	}
	f.minDur, f.since, f.until = uint64(o.MinDur), uint64(o.Since), uint64(o.Until)
	return f, nil
}

// ParseDuration reads a duration of the filters: a Go duration with a unit (10us, 1.5ms,
// 2s; µs too), not negative.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want a number and a unit: ns, us, ms, s, m, h; e.g. 10us, 1.5ms)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("bad duration %q: negative", s)
	}
	return d, nil
}

// Active reports whether f selects calls (more than threads): without it, the commands'
// output is what it was without filters, byte for byte.
func (f *Filter) Active() bool {
	return f != nil && (f.callFilter() || f.Timed())
}

// callFilter reports whether f selects calls by function, depth or duration (more than
// by threads and time).
func (f *Filter) callFilter() bool {
	return len(f.include) > 0 || len(f.exclude) > 0 || len(f.hide) > 0 || len(f.callers) > 0 ||
		f.depth > 0 || f.minDur > 0
}

// Timed reports whether f has a time range (and so needs the trace's start: At).
func (f *Filter) Timed() bool { return f != nil && (f.since > 0 || f.until > 0) }

// Before is the time (as event times) before which the calls f keeps were not entered:
// its --since, once bound (At); 0 when there is none.
func (f *Filter) Before() uint64 {
	if f == nil || f.since == 0 {
		return 0
	}
	return f.origin + f.since
}

// After is the time (as event times) at or after which the calls f keeps were not
// entered: its --until, once bound (At); 0 when there is none.
func (f *Filter) After() uint64 {
	if f == nil || f.until == 0 {
		return 0
	}
	return f.origin + f.until
}

// TIDs are the threads selected (all when empty).
func (f *Filter) TIDs() []int {
	if f == nil {
		return nil
	}
	return f.tids
}

// NeedsCalls reports whether f uses calls' durations or nesting (-D, -t, -C): what a
// record-by-record dump cannot apply.
func (f *Filter) NeedsCalls() bool {
	return f != nil && (f.depth > 0 || f.minDur > 0 || len(f.callers) > 0)
}

// At returns f with times counted from origin (the trace's start, as Origin finds it).
func (f *Filter) At(origin uint64) *Filter {
	if f == nil {
		return nil
	}
	g := *f
	g.origin = origin
	return &g
}

// inRange reports where ts falls against the time range: -1 before since, 0 inside, 1
// at or after until.
func (f *Filter) inRange(ts uint64) int {
	switch {
	case f.since > 0 && ts < f.origin+f.since:
		return -1
	case f.until > 0 && ts >= f.origin+f.until:
		return 1
	}
	return 0
}

// callIn is inRange for a call entered at ts, noting one entered inside.
func (f *Filter) callIn(ts uint64) int {
	r := f.inRange(ts)
	if r == 0 && f.entered != nil && !f.entered.Load() {
		f.entered.Store(true)
	}
	return r
}

// EmptyRange reports whether f has a time range in which no call met was entered (a
// --since past the trace's end): the output is empty, and a warning says why.
func (f *Filter) EmptyRange() bool {
	return f != nil && f.Timed() && f.entered != nil && !f.entered.Load()
}

// match bits of a function
const (
	known    = 1 << iota
	included // matches a -F glob
	excluded // matches a -N glob
	hiding   // matches a -H glob
	calling  // matches a -C glob
)

func (f *Filter) classify(fn *symbolize.Func) uint8 {
	m := uint8(known)
	for _, g := range f.include {
		if g.MatchFunc(fn) {
			m |= included
			g.matched.Store(true)
		}
	}
	for _, l := range []struct {
		globs []*Glob
		bit   uint8
	}{{f.exclude, excluded}, {f.hide, hiding}, {f.callers, calling}} {
		for _, g := range l.globs {
			if g.MatchFunc(fn) {
				m |= l.bit
				g.matched.Store(true)
			}
		}
	}
	return m
}

// Unmatched names the -F, -N, -H and -C globs that matched no function the reader met ("-F
// 'x'"): a filter that matches nothing leaves an empty report with no word why.
func (f *Filter) Unmatched() []string {
	if f == nil {
		return nil
	}
	var out []string
	for _, l := range []struct {
		flag  string
		globs []*Glob
	}{{"-F", f.include}, {"-N", f.exclude}, {"-H", f.hide}, {"-C", f.callers}} {
		for _, g := range l.globs {
			if !g.matched.Load() {
				out = append(out, fmt.Sprintf("%s '%s'", l.flag, g.src))
			}
		}
	}
	return out
}

// CallKept reports whether a function-tracer call is shown. Such a call has no
// duration and no depth (-t and -D do not apply); its only nesting is its caller, so -F
// keeps the calls of and from matching functions and -N drops them; -H drops the calls
// of matching functions and -C keeps only those (each names its caller).
func (f *Filter) CallKept(c *calltree.Call) bool {
	if f.callIn(c.TS) != 0 {
		return false
	}
	fm := f.classify(c.Func)
	var cm uint8
	if c.Caller != nil {
		cm = f.classify(c.Caller)
	}
	if (fm|cm)&excluded != 0 || fm&hiding != 0 || len(f.callers) > 0 && fm&calling == 0 {
		return false
	}
	return len(f.include) == 0 || (fm|cm)&included != 0
}

// EventKept reports whether `dump` prints a record of function fn (its caller's for
// function-tracer calls): a record is not a call, so -F and -N select the records of
// the matching functions themselves (not of what they call), -H leaves out those of
// the matching functions, and the time range selects by the records' times.
func (f *Filter) EventKept(ev *tracefile.Event, fn, caller *symbolize.Func) bool {
	if ev.Kind == tracefile.Call {
		return f.CallKept(&calltree.Call{TS: ev.TS, Func: fn, Caller: caller})
	}
	in := f.inRange
	if ev.Kind == tracefile.Entry {
		in = f.callIn // an entry in range is a call met there
	}
	if in(ev.TS) != 0 {
		return false
	}
	m := f.classify(fn)
	if m&(excluded|hiding) != 0 {
		return false
	}
	return len(f.include) == 0 || m&included != 0
}

// Wrap returns the observer that tells next only what f keeps (next itself when f is
// not Active). One per thread; it is a calltree.Nester.
func (f *Filter) Wrap(next calltree.Observer) calltree.Observer {
	if !f.Active() {
		return next
	}
	o := &observer{f: f, next: next, byFunc: map[*symbolize.Func]uint8{}, activeFn: map[*symbolize.Func]int{}}
	o.enter, _ = next.(calltree.Enterer)
	o.values, _ = next.(calltree.ValueObserver)
	return o
}

func contains(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}
