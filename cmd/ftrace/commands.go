package main

import (
	"bufio"
	"cmp"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/argfmt"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/chrome"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/filter"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/flame"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/graph"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/pprof"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/report"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/urfave/cli/v2"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "per-function statistics: calls, total, self, average, min, max",
		ArgsUsage: "[TRACE...]",
		Description: "The figures are those of the calls the filters keep; a call left out counts as\n" +
			"its caller's self time. Several traces (the processes of one run: ftrace.dat\n" +
			"ftrace.dat.*) make one table, a function's figures added up over them.\n\n" + filterUsage,
		Flags: append([]cli.Flag{
			inputFlag(),
			&cli.StringFlag{Name: "sort", Aliases: []string{"s"}, Value: "total", Usage: "sort by " + strings.Join(report.SortKeys, ", ")},
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Usage: "print at most this many functions (0: all); with --threads, threads; with --callers, callers and callees each"},
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "text", Usage: "text or json"},
			&cli.BoolFlag{Name: "per-thread", Aliases: []string{"T"}, Usage: "one row per thread and function"},
			&cli.BoolFlag{Name: "diff", Usage: "compare two traces: report --diff OLD NEW (sort: total, self, calls or name change)"},
			&cli.BoolFlag{Name: "threads", Usage: "one row per thread: calls, functions, traced time, top function"},
			&cli.StringFlag{Name: "callers", Usage: "the callers and callees of this function"},
			&cli.BoolFlag{Name: "args", Usage: "one row per function and argument values recorded with its calls (as graph shows them: \"fib(n=3)\")"},
		}, filterFlags()...),
		Action: func(c *cli.Context) error {
			if c.Int("limit") < 0 {
				return fmt.Errorf("report: --limit must not be negative")
			}
			if c.Bool("diff") {
				return reportDiff(c)
			}
			if c.Bool("threads") || c.String("callers") != "" {
				return reportThreadsOrCallers(c)
			}
			format := c.String("format")
			if format != "text" && format != "json" {
				return fmt.Errorf("report: unknown format %q (want text or json)", format)
			}
			o := report.Options{
				PerThread: c.Bool("per-thread"), TIDs: c.IntSlice("tid"),
				Sort: c.String("sort"), Limit: c.Int("limit"), Args: argKeys(c),
			}
			var stats []*report.Stat
			var f *calltree.Forest
			var err error
			if c.NArg() > 1 {
				stats, f, err = reportMany(c, o)
			} else {
				stats, f, err = streamReport(c, o)
			}
			if err != nil {
				return err
			}
			if format == "json" {
				return report.WriteJSON(c.App.Writer, f, stats)
			}
			if err := report.WriteText(c.App.Writer, f, stats, c.Bool("per-thread")); err != nil {
				return err
			}
			if flt, err := commandFilter(c); err == nil && !flt.Active() {
				// markers are the whole trace's: not with filters
				return report.WriteMarkers(c.App.Writer, f)
			}
			return nil
		},
	}
}

func graphCommand() *cli.Command {
	return &cli.Command{
		Name:      "graph",
		Aliases:   []string{"replay"},
		Usage:     "indented call graph with durations, per thread (like the kernel's function_graph)",
		ArgsUsage: "[TRACE...]",
		Description: "Several traces (the processes of one run) are shown one after the other, each\n" +
			"under a line naming its process.\n\n" + filterUsage,
		Flags: append([]cli.Flag{
			inputFlag(),
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Usage: "at most this many lines per thread (0: all)"},
			&cli.BoolFlag{Name: "time", Usage: "show each line's time (µs since the trace start)"},
			&cli.BoolFlag{Name: "args", Value: true, Usage: "show the arguments and return values the trace recorded (--args=false: names only)"},
		}, filterFlags()...),
		Action: func(c *cli.Context) error {
			if c.Int("limit") < 0 {
				return fmt.Errorf("graph: --limit must not be negative")
			}
			if c.NArg() > 1 {
				return graphMany(c)
			}
			in, err := openStream(c)
			if err != nil {
				return err
			}
			defer in.Close()
			w := bufio.NewWriter(c.App.Writer)
			if err := graphOne(c, w, in, func() { in.warn(c) }); err != nil {
				return err
			}
			return w.Flush()
		},
	}
}

func dumpCommand() *cli.Command {
	return &cli.Command{
		Name:      "dump",
		Usage:     "write the trace as Chrome/Perfetto trace-event JSON (--chrome) or as raw events",
		ArgsUsage: "[TRACE...]",
		Description: "Raw records are not calls: -F and -N select the records of the matching functions\n" +
			"themselves (-H leaves them out), --since/--until the records' times; -D, -t and -C\n" +
			"need --chrome. With\n" +
			"--chrome, several traces (the processes of one run) make one document, each\n" +
			"process apart, placed in time by when each trace started.\n\n" + filterUsage,
		Flags: append([]cli.Flag{
			inputFlag(),
			&cli.BoolFlag{Name: "chrome", Usage: "Chrome trace-event JSON (open in ui.perfetto.dev or chrome://tracing)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output file (default stdout)"},
			&cli.BoolFlag{Name: "args", Value: true, Usage: "show the arguments and return values recorded (raw records: with each; --chrome: in the B, E and call events' args; --args=false: none)"},
		}, filterFlags()...),
		Action: func(c *cli.Context) error {
			if !c.Bool("chrome") {
				return dumpRawCommand(c)
			}
			if c.NArg() > 1 {
				return dumpChromeMany(c)
			}
			in, err := openStream(c)
			if err != nil {
				return err
			}
			defer in.Close()
			w, done, err := outputFile(c, c.String("output"))
			if err != nil {
				return err
			}
			var vals *argfmt.Formatter
			if c.Bool("args") {
				vals = &argfmt.Formatter{}
			}
			w = &bigOutput{w: w, warn: c.App.ErrWriter, limit: chromeBig}
			err = chrome.WriteStream(w, in.st, in.sym.LockedLookup(), in.flt.TIDs(), in.wrap, in.progress(c, in.flt.TIDs()), vals)
			if cerr := done(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", in.path, err)
			}
			in.warn(c)
			return nil
		},
	}
}

// graphOne writes the graph of one trace; warn, before anything is printed (after the
// first pass's counts).
func graphOne(c *cli.Context, w *bufio.Writer, in *streamIn, warn func()) error {
	// --depth is a filter: it counts from the outermost call shown
	o := graph.Options{TIDs: c.IntSlice("tid"), Limit: c.Int("limit"), Time: c.Bool("time"), Filter: in.wrap}
	o.Counted = warn
	if c.Bool("args") {
		o.Values = &argfmt.Formatter{}
	}
	if err := graph.WriteStream(w, in.st, in.sym.LockedLookup(), o, in.progress(c, nil)); err != nil {
		return fmt.Errorf("%s: %w", in.path, err)
	}
	return nil
}

// graphMany is graph of several traces: each after a line naming its process, in the
// order they started (a glob's order is not the run's). Each is open only while it is
// read (and first to find when it started): a thousand traces need not all be held.
func graphMany(c *cli.Context) error {
	type trace struct {
		path  string
		start int64
		tids  []int
	}
	var order []trace
	paths := tracePaths(c)
	err := prescan(c, paths, func(path string, tr *tracefile.Trace) {
		t := trace{path: path, start: tr.Header.WallStart}
		for _, th := range tr.Threads {
			t.tids = append(t.tids, th.TID)
		}
		order = append(order, t)
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(order, func(x, y trace) int {
		if x.start == 0 || y.start == 0 {
			return 0
		}
		return cmp.Compare(x.start, y.start)
	})
	w := bufio.NewWriter(c.App.Writer)
	shown, tids := 0, c.IntSlice("tid")
	var read readTally
	for _, tr := range order {
		if len(tids) > 0 && !slices.ContainsFunc(tr.tids, func(tid int) bool { return slices.Contains(tids, tid) }) {
			continue // none of its threads asked for: not even its line
		}
		in, err := openStreamPath(c, tr.path, false)
		if err != nil {
			return err
		}
		in.several = len(paths) > 1
		if shown++; shown > 1 {
			w.WriteString("\n")
		}
		h := in.st.Trace.Header
		fmt.Fprintf(w, "# process %d: %s (%s)\n", h.PID, shellJoin(h.Command), in.path)
		err = graphOne(c, w, in, func() { w.Flush(); in.warnSome(c) })
		read.add(in)
		in.Close()
		if err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	read.warn(c, len(paths))
	return nil
}

// dumpChromeMany is dump --chrome of several traces into one document
// (chrome.WriteOpened), each trace open only while it is read: more traces than the
// process may open files (a test suite's thousand processes) make one document too.
func dumpChromeMany(c *cli.Context) error {
	paths := tracePaths(c)
	if err := prescan(c, paths, nil); err != nil { // a --tid none of them holds: before any output
		return err
	}
	w, done, err := outputFile(c, c.String("output"))
	if err != nil {
		return err
	}
	var vals *argfmt.Formatter
	if c.Bool("args") {
		vals = &argfmt.Formatter{}
	}
	var read readTally
	passes := make([]int, len(paths))
	open := func(k int) (chrome.Input, func(), error) {
		in, err := openStreamPath(c, paths[k], false)
		if err != nil {
			return chrome.Input{}, nil, err
		}
		in.several = true
		tids := in.flt.TIDs()
		passes[k]++
		return chrome.Input{St: in.st, Lookup: in.sym.LockedLookup(), TIDs: tids, Wrap: in.wrap,
				Progress: in.progress(c, tids)}, func() {
				if passes[k] == 2 { // written: what its reading met
					in.warnSome(c)
					read.add(in)
				}
				in.Close()
			}, nil
	}
	err = chrome.WriteOpened(&bigOutput{w: w, warn: c.App.ErrWriter, limit: chromeBig}, len(paths), open, vals)
	if cerr := done(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	read.warn(c, len(paths))
	return nil
}

// dumpRawCommand prints every record (time, thread, kind, depth, ip and its symbol),
// reading the trace as a stream: the records only, not the call trees.
func dumpRawCommand(c *cli.Context) error {
	if c.NArg() > 1 {
		return fmt.Errorf("dump: several traces make one document with --chrome only (raw records: one trace at a time)")
	}
	in, err := openStream(c)
	if err != nil {
		return err
	}
	defer in.Close()
	if in.flt.NeedsCalls() {
		return fmt.Errorf("dump: --depth, --time-filter and --caller-filter select calls, and raw records are not calls (use --chrome)")
	}
	w0, done, err := outputFile(c, c.String("output"))
	if err != nil {
		return err
	}
	var vals *argfmt.Formatter
	if c.Bool("args") {
		vals = &argfmt.Formatter{}
	}
	err = dumpRaw(w0, in.st, in.sym, in.flt, vals)
	if cerr := done(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", in.path, err)
	}
	in.warn(c)
	return nil
}

// dumpRaw prints the records flt keeps (all when nil), with the values recorded with
// each when vals is not nil.
func dumpRaw(w0 io.Writer, st *tracefile.Stream, sym *symbolize.Symbolizer, flt *filter.Filter, vals *argfmt.Formatter) error {
	tr := st.Trace
	st.Values = vals != nil
	var pend *tracefile.Values // of the next record
	w := bufio.NewWriterSize(w0, 1<<16)
	fmt.Fprintf(w, "# %12s %7s %-5s %5s %18s  %s\n", "TIME(ns)", "TID", "KIND", "DEPTH", "IP", "FUNCTION")
	tids := flt.TIDs()
	for i, th := range tr.Threads {
		if len(tids) > 0 && !slices.Contains(tids, th.TID) {
			continue
		}
		err := st.Events(i, func(evs []tracefile.Event) error {
			for _, ev := range evs {
				if ev.Kind == tracefile.ValuesKind {
					pend = st.TakeValues(&ev)
					continue
				}
				v := pend
				pend = nil
				if ev.Kind == tracefile.Marker {
					if flt.Active() && !flt.MarkerKept(ev.TS) {
						continue
					}
					if _, err := fmt.Fprintf(w, "%14d %7d %-5s %5s %18s  /* %s */\n", ev.TS-tr.Header.StartNS, th.TID, ev.Kind, "-", "-", st.MarkerText(ev.IP)); err != nil {
						return err
					}
					continue
				}
				extra := ""
				var caller *symbolize.Func
				if ev.Kind == tracefile.Call && ev.Parent != 0 {
					caller = sym.Lookup(ev.Parent - 1) // the call, not what follows it
					extra = " <- " + caller.Name
				}
				if flt.Active() && !flt.EventKept(&ev, sym.Lookup(ev.IP), caller) {
					continue
				}
				if ev.Flags&tracefile.FlagUnwound != 0 {
					extra += " (unwound)"
				}
				if v != nil { // the arguments after the name, a return value at the end
					if v.Ret {
						extra += " = " + vals.Ret(sym.Lookup(ev.IP), v)
					} else {
						extra = " (" + vals.Args(sym.Lookup(ev.IP), v) + ")" + extra
					}
				}
				if _, err := fmt.Fprintf(w, "%14d %7d %-5s %5d %#18x  %s%s\n", ev.TS-tr.Header.StartNS, th.TID, ev.Kind, ev.Depth, ev.IP, sym.Lookup(ev.IP).Name, extra); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return w.Flush()
}

func pprofCommand() *cli.Command {
	return &cli.Command{
		Name:      "pprof",
		Usage:     "write a pprof profile (calls and self time per call stack) for go tool pprof",
		ArgsUsage: "[TRACE...]",
		Description: "The stacks start at the outermost call shown; a call left out counts as its\n" +
			"caller's self time. Several traces (the processes of one run) make one profile.\n\n" + filterUsage,
		Flags: append([]cli.Flag{
			inputFlag(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "profile file (- for stdout; default ftrace.pb.gz, or stdout when it is redirected to a file)"},
			&cli.BoolFlag{Name: "args", Usage: "one function per function and argument values recorded with its calls (as graph shows them: \"fib(n=3)\")"},
		}, filterFlags()...),
		Action: func(c *cli.Context) error {
			col := pprof.NewCollector()
			f, err := streamPaths(c, col.Add)
			if err != nil {
				return err
			}
			w, done, err := outputFile(c, defaultOutput(c, "ftrace.pb.gz"))
			if err != nil {
				return err
			}
			err = col.Write(w, f)
			if cerr := done(); err == nil {
				err = cerr
			}
			return err
		},
	}
}

func flameCommand() *cli.Command {
	return &cli.Command{
		Name:      "flame",
		Usage:     "flame graph: a self-contained SVG, or folded stacks (--folded)",
		ArgsUsage: "[TRACE...]",
		Description: "The stacks start at the outermost call shown; a call left out counts as its\n" +
			"caller's self time. Several traces (the processes of one run) make one graph.\n\n" + filterUsage,
		Flags: append([]cli.Flag{
			inputFlag(),
			&cli.BoolFlag{Name: "folded", Usage: "write folded stacks (frame;frame;... value) instead of SVG"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output file (default flame.svg, or stdout with --folded or when it is redirected to a file)"},
			&cli.BoolFlag{Name: "by-thread", Usage: "one tower per thread"},
			&cli.StringFlag{Name: "title", Usage: "SVG title"},
			&cli.IntFlag{Name: "width", Value: 1200, Usage: "SVG width in pixels"},
			&cli.BoolFlag{Name: "args", Usage: "one frame per function and argument values recorded with its calls (as graph shows them: \"fib(n=3)\")"},
		}, filterFlags()...),
		Action: func(c *cli.Context) error {
			if c.Int("width") <= 0 {
				return fmt.Errorf("flame: --width must be positive (got %d)", c.Int("width"))
			}
			fo := flame.NewFolder(flame.Options{TIDs: c.IntSlice("tid"), ByThread: c.Bool("by-thread")})
			f, err := streamPaths(c, func(_ *calltree.Forest, paths []calltree.ThreadPaths) { fo.Add(paths) })
			if err != nil {
				return err
			}
			stacks := fo.Stacks(f)
			out := c.String("output")
			if !c.Bool("folded") {
				out = defaultOutput(c, "flame.svg")
			}
			w, done, err := outputFile(c, out)
			if err != nil {
				return err
			}
			if c.Bool("folded") {
				err = flame.WriteFolded(w, stacks)
			} else {
				unit := "ns"
				if !f.HasGraph() {
					unit = "calls"
				}
				title := c.String("title")
				if title == "" {
					title = "ftrace flame graph"
					if len(f.Header.Command) > 0 {
						title += ": " + filepath.Base(f.Header.Command[0])
					}
				}
				err = flame.WriteSVG(w, stacks, flame.SVGOptions{Title: title, Width: c.Int("width"), Unit: unit})
			}
			if cerr := done(); err == nil {
				err = cerr
			}
			return err
		},
	}
}

func infoCommand() *cli.Command {
	return &cli.Command{
		Name:      "info",
		Usage:     "trace header, threads, event counts, lost events and memory map",
		ArgsUsage: "[TRACE...]",
		Flags:     []cli.Flag{inputFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				// the processes of one run: each in turn, a blank line between
				for k, path := range c.Args().Slice() {
					if k > 0 {
						fmt.Fprintln(c.App.Writer)
					}
					if err := infoOne(c, path); err != nil {
						return err
					}
				}
				return nil
			}
			path, err := inputPath(c)
			if err != nil {
				return err
			}
			return infoOne(c, path)
		},
	}
}

// infoOne is info of the trace at path.
func infoOne(c *cli.Context, path string) error {
	st, err := tracefile.OpenStream(path)
	if err != nil {
		return err
	}
	defer st.Close()
	var n counts
	if n.calls, n.entries, n.exits, n.lost, n.lostDepth, err = st.Counts(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	n.last = st.LastTS()
	for i := range st.Trace.Threads {
		ev, rb, _ := st.Decoded(i)
		n.perThread = append(n.perThread, ev)
		n.rebuilt += rb
	}
	return writeInfo(c, path, st.Trace, n)
}

// counts are a trace's events by kind and its losses.
type counts struct {
	calls, entries, exits, lost, lostDepth, last uint64
	// perThread: each thread's events of the file (nil: its Len); rebuilt: entries
	// rebuilt from block headers (calls open where a ring's oldest block begins)
	perThread []uint64
	rebuilt   uint64
}

func writeInfo(c *cli.Context, path string, tr *tracefile.Trace, n counts) error {
	w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	h := tr.Header
	fmt.Fprintf(w, "file:\t%s\n", path)
	fmt.Fprintf(w, "format version:\t%d\n", h.Version)
	fmt.Fprintf(w, "tracer:\t%s\n", h.Tracer)
	fmt.Fprintf(w, "pid:\t%d\n", h.PID)
	if len(h.Command) > 0 {
		fmt.Fprintf(w, "command:\t%s\n", shellJoin(h.Command))
	}
	var flags []string
	for i, name := range []string{"complete", "abnormal", "snapshot", "lost", "write-error"} {
		if h.Flags&(1<<i) != 0 {
			// the runtime's LOST covers calls not graphed too (over the depth limit, past
			// a full shadow stack, made inside the tracer: a signal handler that landed in
			// it): named apart, as "calls not graphed" below
			if name == "lost" && n.lost == 0 && n.lostDepth > 0 {
				name = "not-graphed"
			}
			flags = append(flags, name)
		}
	}
	if len(flags) == 0 {
		flags = append(flags, "none")
	}
	cut := ""
	for _, warn := range h.Warnings {
		if strings.HasPrefix(warn, "trace truncated") {
			cut = " (as written; the file was cut short since: see the warning below)"
		}
	}
	fmt.Fprintf(w, "flags:\t%s%s\n", strings.Join(flags, ","), cut)
	fmt.Fprintf(w, "written because:\t%s\n", h.Reason)
	if h.Signal != 0 {
		fmt.Fprintf(w, "signal:\t%d\n", h.Signal)
	}
	clock := h.Clock
	if clock == "tsc" && mainMachine(tr) == elf.EM_AARCH64 {
		clock = "cntvct_el0" // the same header value: the architecture's cycle counter
	}
	fmt.Fprintf(w, "clock:\t%s", clock)
	if h.ClockHz != 0 {
		fmt.Fprintf(w, " (%d Hz)", h.ClockHz)
	}
	fmt.Fprintln(w)
	if h.WallStart != 0 {
		fmt.Fprintf(w, "started:\t%s\n", time.Unix(0, h.WallStart).UTC().Format(time.RFC3339Nano))
	}
	if h.EndNS > h.StartNS {
		fmt.Fprintf(w, "duration:\t%s\n", report.Dur(h.EndNS-h.StartNS))
	} else if h.Flags&tracefile.FlagComplete == 0 && n.last > h.StartNS {
		// not finalised: no end time, but the events say how long at least
		fmt.Fprintf(w, "duration:\tat least %s (to the last event)\n", report.Dur(n.last-h.StartNS))
	}
	if h.GraphDepth > 0 {
		fmt.Fprintf(w, "graph depth limit:\t%d\n", h.GraphDepth)
	}
	if h.Version >= tracefile.Version2 {
		mode := "streaming"
		if h.Ring {
			mode = fmt.Sprintf("flight recorder (ring of %d bytes per thread: the newest events)", h.RingBytes)
		}
		fmt.Fprintf(w, "format:\tversion %d, %s, blocks of %d bytes\n", h.Version, mode, h.BlockSize)
	}
	calls, entries, exits, lost, lostDepth := n.calls, n.entries, n.exits, n.lost, n.lostDepth
	fmt.Fprintf(w, "events:\t%d (%d calls, %d entries, %d exits)\n", calls+entries+exits, calls, entries, exits)
	if n.rebuilt > 0 {
		where := "a ring's oldest block begins"
		if !h.Ring {
			// lost, or dropped by a live clear or a ring switched on for a while
			where = "a block begins after events the file lacks: lost, cleared or overwritten"
		}
		fmt.Fprintf(w, "entries rebuilt:\t%d (of calls already open where %s: not events of the file, shown by dump and graph)\n", n.rebuilt, where)
	}
	sum := tracefile.LostSummary(tr)
	if lost == 0 && lostDepth == 0 && h.LostNoBuf == 0 && h.Flags&tracefile.FlagLost != 0 {
		// the runtime counted losses the file does not hold (a full disk: the chunks
		// that carried the counts were not written)
		fmt.Fprintf(w, "lost events:\tsome (the header says so; the counts are not in the file)\n")
	} else {
		fmt.Fprintf(w, "lost events:\t%d\n", lost)
	}
	if h.LostNoBuf > 0 {
		fmt.Fprintf(w, "lost (no buffer):\t%d\n", h.LostNoBuf)
	}
	if sum.Lost > 0 {
		fmt.Fprintf(w, "lost in all:\t%d of %d events (%s)\n", sum.Lost, sum.Lost+sum.Recorded, tracefile.Pct(sum.Lost, sum.Lost+sum.Recorded))
	}
	fmt.Fprintf(w, "calls not graphed:\t%d\n", lostDepth) // depth limit, full shadow stack, or made inside the tracer
	fmt.Fprintf(w, "threads:\t%d\n", len(tr.Threads))
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer)
	w = tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "TID\tNAME\tEVENTS\tLOST\tNOT GRAPHED\tFLAGS\t\n")
	for i, th := range tr.Threads {
		var fl []string
		events := th.Len()
		if i < len(n.perThread) {
			events = n.perThread[i] // as the events line counts them
		}
		if th.Flags&tracefile.ThreadExited != 0 {
			fl = append(fl, "exited")
		}
		if th.Flags&tracefile.ThreadFull != 0 {
			fl = append(fl, "full")
		}
		if th.OverwrittenBlocks > 0 {
			fl = append(fl, fmt.Sprintf("%d-blocks-overwritten-by-ring", th.OverwrittenBlocks))
		}
		if th.ClearedBlocks > 0 {
			fl = append(fl, fmt.Sprintf("%d-blocks-cleared", th.ClearedBlocks))
		}
		if th.MissingBlocks > 0 {
			fl = append(fl, fmt.Sprintf("%d-blocks-missing", th.MissingBlocks))
		}
		fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%d\t%s\t\n", th.TID, th.Name, events, th.Lost, th.LostDepth, strings.Join(fl, ","))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer)
	w = tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "START\tEND\tBIAS\tBUILD-ID\tPATH\n")
	for _, m := range tr.Maps {
		p := m.Path
		if m.Flags&tracefile.MapMain != 0 {
			p += " (main)"
		}
		if m.Flags&tracefile.MapVDSO != 0 {
			p += " (vdso)"
		}
		if m.Flags&tracefile.MapLate != 0 {
			p += " (dlopen)"
		}
		id := hex.EncodeToString(m.BuildID)
		if id == "" {
			id = "-"
		}
		fmt.Fprintf(w, "%#x\t%#x\t%#x\t%s\t%s\n", m.Start, m.End, m.Bias, id, p)
	}
	for _, warn := range h.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// said on stderr too, as the other readers say it, unless the output is on a terminal,
	// where it was just said twice: a pipe (info | head) or a file hid it
	if !isTerminal(c.App.Writer) {
		for _, warn := range h.Warnings {
			fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s: %s\n", path, warn)
		}
	}
	return nil
}

// shellJoin writes a command line as a shell would take it back: an argument with spaces,
// quotes or other special characters (or none at all) in single quotes.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// mainMachine is the machine of the trace's main program file, if it can be read.
func mainMachine(tr *tracefile.Trace) elf.Machine {
	for _, m := range tr.Maps {
		if m.Flags&tracefile.MapMain != 0 {
			if f, err := elf.Open(m.Path); err == nil {
				defer f.Close()
				return f.Machine
			}
		}
	}
	return elf.EM_NONE
}
