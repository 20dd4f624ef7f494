package main

import (
	"fmt"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/filter"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/report"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/urfave/cli/v2"
)

// The report modes beside the per-function table (issue 16).

// reportDiff is `ftrace report --diff OLD NEW`: both traces' per-function figures side
// by side, the biggest change first.
func reportDiff(c *cli.Context) error {
	if c.NArg() != 2 {
		return fmt.Errorf("report: --diff wants two trace files, OLD and NEW (got %d arguments)", c.NArg())
	}
	if c.String("format") != "text" {
		return fmt.Errorf("report: --diff prints text only")
	}
	if c.Bool("per-thread") {
		return fmt.Errorf("report: --diff compares whole traces (--per-thread does not apply)")
	}
	flt, err := readFilter(c)
	if err != nil {
		return err
	}
	var stats [2][]*report.Stat
	// times are compared only when both traces have them
	timed := true
	for i, path := range c.Args().Slice() {
		st, err := tracefile.OpenStream(path)
		if err != nil {
			return err
		}
		sym := newSymbolizer(st.Trace.Maps)
		var f *calltree.Forest
		o := report.Options{TIDs: c.IntSlice("tid")}
		_, o.Filter, err = boundFilter(flt, st) // each trace's times from its own start
		if err == nil {
			stats[i], f, err = report.ComputeStream(st, sym.LockedLookup(), o)
		}
		if err == nil {
			warnStream(c, path, st, sym, false)
		}
		st.Close()
		if err != nil {
			return fmt.Errorf("report: %s: %w", path, err)
		}
		timed = timed && (f.HasGraph() || f.Header.Tracer == "function_graph")
	}
	key := c.String("sort")
	if !timed && !c.IsSet("sort") {
		key = "calls" // no times to sort by: the rows that changed come first
	}
	rows, err := report.Diff(stats[0], stats[1], key, c.Int("limit"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return report.WriteDiffText(c.App.Writer, rows, timed)
}

// reportMany is the report of several traces (the processes of one run: a shell's, a test
// suite's, a server's workers'): each read as a stream with the command's filters (times
// from its own start), their figures added up (report.Merger). A glob is said to match
// nothing only if it matches nothing in any of them, a --tid only if none holds it.
func reportMany(c *cli.Context, o report.Options) ([]*report.Stat, *calltree.Forest, error) {
	// added up trace by trace: each one's rows are dropped once counted
	sum := report.NewMerger(o.PerThread)
	var forests calltree.Combiner
	each := o
	each.Limit = 0
	err := eachStream(c, func(in *streamIn) error {
		each.Progress = in.progress(c, o.TIDs)
		each.Filter = in.wrap
		stats, f, err := report.ComputeStream(in.st, in.sym.LockedLookup(), each)
		if err != nil {
			return fmt.Errorf("%s: %w", in.path, err)
		}
		in.warnSome(c)
		sum.Add(stats)
		forests.Add(f)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	stats, err := sum.Stats(o)
	if err != nil {
		return nil, nil, fmt.Errorf("report: %w", err)
	}
	return stats, forests.Forest(), nil
}

// reportThreadsOrCallers is `ftrace report --threads` and `ftrace report --callers FUNC`.
func reportThreadsOrCallers(c *cli.Context) error {
	if c.Bool("threads") && c.String("callers") != "" {
		return fmt.Errorf("report: --threads and --callers do not go together")
	}
	if c.String("format") != "text" {
		return fmt.Errorf("report: --threads and --callers print text only")
	}
	if c.Bool("threads") {
		in, err := openStream(c)
		if err != nil {
			return err
		}
		defer in.Close()
		rows, f, err := report.ThreadsStream(in.st, in.sym.LockedLookup(), c.IntSlice("tid"), in.wrap)
		if err != nil {
			return fmt.Errorf("%s: %w", in.path, err)
		}
		in.warn(c)
		return report.WriteThreadsText(c.App.Writer, f, rows, c.Int("limit"))
	}
	// a name as -F takes it: whole, without its parameters, or a glob (overloads together)
	name := c.String("callers")
	g, err := filter.Compile(name)
	if err != nil {
		return fmt.Errorf("report: --callers: %w", err)
	}
	in, err := openStream(c)
	if err != nil {
		return err
	}
	defer in.Close()
	r, err := report.CallersStream(in.st, in.sym.LockedLookup(), name, g.MatchFunc, c.IntSlice("tid"), in.wrap)
	if err != nil {
		return fmt.Errorf("report: %w (%s)", err, in.path)
	}
	in.warn(c)
	return report.WriteCallersText(c.App.Writer, r, c.Int("limit"))
}
