package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/filter"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/urfave/cli/v2"
)

// The read-time filters shared by graph, report, dump, pprof and flame (issue 16;
// docs/ftrace-cli.md, Filters): parsed once per command by readFilter, applied where a
// walk of the trace tells its calls.

// filterFlags are the filter flags, --tid among them. -F and -N take one glob each
// (repeatable): a C++ parameter list has commas, which a list flag would split on.
func filterFlags() []cli.Flag {
	return []cli.Flag{
		specFlag("filter", "F", "only the calls of functions matching `GLOB` and what they call (repeatable)"),
		specFlag("notrace", "N", "leave out the calls of functions matching `GLOB` and what they call (repeatable)"),
		specFlag("hide", "H", "leave out the calls of functions matching `GLOB` only: what they call takes their place (repeatable)"),
		specFlag("caller-filter", "C", "only the calls of functions matching `GLOB`, without what they call, and the calls that lead to them (repeatable)"),
		&cli.IntFlag{Name: "depth", Aliases: []string{"D"}, Usage: "show `N` levels of calls (1: the outermost only; 0: all), counted from the outermost call shown"},
		&cli.StringFlag{Name: "time-filter", Aliases: []string{"t"}, Usage: "leave out calls shorter than `DUR` (e.g. 10us, 1.5ms) and what they call"},
		tidFlag(),
		&cli.StringFlag{Name: "since", Usage: "only calls entered `DUR` or more after the trace start (e.g. 200ms)"},
		&cli.StringFlag{Name: "until", Usage: "only calls entered less than `DUR` after the trace start"},
	}
}

// readFilter parses the filter flags of c's command. nil: none given.
func readFilter(c *cli.Context) (*filter.Filter, error) {
	o := filter.Options{
		Filter:  c.Generic("filter").(*specList).v,
		Notrace: c.Generic("notrace").(*specList).v,
		Hide:    c.Generic("hide").(*specList).v,
		Callers: c.Generic("caller-filter").(*specList).v,
		Depth:   c.Int("depth"),
		TIDs:    c.IntSlice("tid"),
	}
	for _, d := range []struct {
		flag string
		to   *time.Duration
	}{{"time-filter", &o.MinDur}, {"since", &o.Since}, {"until", &o.Until}} {
		s := c.String(d.flag)
		if s == "" {
			continue
		}
		v, err := filter.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("%s: --%s: %w", c.Command.Name, d.flag, err)
		}
		*d.to = v
	}
	f, err := filter.New(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Command.Name, err)
	}
	return f, nil
}

// boundFilter binds f to the stream's start (when it has a time range) and returns what
// wraps the walk's observers: nil when f selects threads only, so that the output
// without filters stays what it was.
func boundFilter(f *filter.Filter, st *tracefile.Stream) (*filter.Filter, func(calltree.Observer) calltree.Observer, error) {
	if !f.Active() {
		return f, nil, nil
	}
	if f.Timed() {
		origin, err := st.Origin()
		if err != nil {
			return nil, nil, err
		}
		f = f.At(origin)
		// blocks that end well before --since are not decoded (a 10 ms margin: an event
		// may be written a little after a later one, a signal handler's)
		if from := f.Before(); from > skipMargin {
			st.From = from - skipMargin
		}
		// and those that start well after --until, once no call of the thread is open
		if until := f.After(); until > 0 {
			st.Until = until + skipMargin
		}
	}
	return f, f.Wrap, nil
}

// skipMargin: how long before --since a block must end (after --until start) to be
// passed over, in ns.
const skipMargin = 10_000_000

// filterUsage is the commands' description of the filters (their --help).
var filterUsage = strings.TrimSpace(`
Filters (docs/ftrace-cli.md): -F GLOB shows only the calls of matching functions and
what they call; -N GLOB leaves out the calls of matching functions and what they call;
-H GLOB leaves out the calls of matching functions only (what they call takes their
place); -C GLOB shows only the calls of matching functions (without what they call) and
the calls that lead to them; -D N shows N levels of calls, counted from the outermost call shown; -t DUR leaves out
calls shorter than DUR and what they call (their time counts as their caller's self
time); --since/--until DUR keep the calls entered in [since, until) after the trace
start; --tid only these threads. Globs are fnmatch(3) patterns (* ? [...]) on the
function's name, its symbol or its name without parameters.`)
