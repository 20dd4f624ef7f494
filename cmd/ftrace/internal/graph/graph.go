// Package graph prints a trace as an indented call graph with durations, in the style
// of the kernel's function_graph tracer: one line per leaf call (`name();`), an opening
// line per call with children (`name() {`) and a closing line carrying its duration.
// Function (non-graph) traces are printed as one line per call with the caller.
package graph

import (
	"fmt"
	"io"
	"strconv"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/argfmt"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
)

// Options select what is printed.
type Options struct {
	TIDs  []int // only these threads (all when empty)
	Depth int   // print calls down to this depth (0: all); deeper calls fold into their caller
	Limit int   // at most this many lines per thread (0: all)
	// Time prints each line's start time (µs since the start of the trace).
	Time bool
	// Filter wraps each thread's observers (a read-time filter: the calls it tells on are
	// the ones printed); nil: none. A thread with nothing left says so.
	Filter func(calltree.Observer) calltree.Observer
	// Counted is called by WriteStream once it has read the whole trace, before printing
	// (for warnings; may be nil).
	Counted func()
	// Values prints the arguments and return values the trace recorded (nil: not shown;
	// not shown either under a Filter, or for a thread printed from its whole tree).
	Values *argfmt.Formatter
}

// Marker returns the kernel-style duration marker: ' ', '+' (>10 µs), '!' (>100 µs),
// '#' (>1 ms), '*' (>10 ms), '@' (>100 ms), '$' (>1 s).
func Marker(ns uint64) byte {
	switch {
	case ns > 1_000_000_000:
		return '$'
	case ns > 100_000_000:
		return '@'
	case ns > 10_000_000:
		return '*'
	case ns > 1_000_000:
		return '#'
	case ns > 100_000:
		return '!'
	case ns > 10_000:
		return '+'
	}
	return ' '
}

// duration formats the DURATION column (14 characters): microseconds with three decimals,
// fewer from 100 ms on so that the column keeps its width (as the kernel cuts them), none
// from 10 s; only calls of 1,000 s and more widen it.
func duration(ns uint64) string {
	us := float64(ns) / 1e3
	prec := 3
	for digits := len(strconv.FormatUint(ns/1000, 10)); prec > 0 && digits+1+prec > 9; prec-- {
	}
	return fmt.Sprintf("%c %9.*f us", Marker(ns), prec, us)
}

const blank = "              "

// Write prints the forest.
func Write(w io.Writer, f *calltree.Forest, o Options) error {
	ew := &errWriter{w: w}
	first := true
	for _, t := range f.Threads {
		if !selected(t.TID, o.TIDs) {
			continue
		}
		if !first {
			ew.printf("\n")
		}
		first = false
		if o.Limit > 0 {
			limitedHeader(ew, t) // as WriteStream, which does not read all the events then
		} else {
			threadHeader(ew, t)
		}
		// A tracer switched through live control leaves both kinds in one trace.
		if len(t.Calls) > 0 {
			writeCalls(ew, f, t, o)
		}
		if len(t.Roots) > 0 {
			writeGraph(ew, f, t, o)
		}
		if len(t.Roots) == 0 && len(t.Calls) == 0 {
			ew.printf("# no calls recorded\n")
		}
	}
	return ew.err
}

func selected(tid int, tids []int) bool {
	if len(tids) == 0 {
		return true
	}
	for _, t := range tids {
		if t == tid {
			return true
		}
	}
	return false
}

func writeCalls(ew *errWriter, f *calltree.Forest, t *calltree.Thread, o Options) {
	ew.printf("#   TIME (us)   FUNCTION <- CALLER\n")
	p := &callPrinter{ew: ew, f: f, limit: o.Limit}
	obs := o.wrap(p)
	for i := range t.Calls {
		obs.Call(&t.Calls[i], -1)
	}
	if o.Limit > 0 && p.n < p.told {
		ew.printf("# ... output limited to %d calls\n", o.Limit)
	}
}

// wrap is obs through the filter, if any.
func (o Options) wrap(obs calltree.Observer) calltree.Observer {
	if o.Filter == nil {
		return obs
	}
	return o.Filter(obs)
}

// writeGraph prints a built thread with the printer a stream uses (told by t.Frames).
func writeGraph(ew *errWriter, f *calltree.Forest, t *calltree.Thread, o Options) {
	graphHeader(ew, o)
	p := newGraphPrinter(ew, f, o, t.TID)
	t.Frames(o.wrap(p))
	if p.full {
		ew.printf("# ... output limited to %d lines\n", o.Limit)
	}
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
