package main

import (
	"fmt"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/report"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
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
	var stats [2][]*report.Stat
	// times are compared only when both traces have them
	timed := true
	for i, path := range c.Args().Slice() {
		f, err := loadForestFile(c, path)
		if err != nil {
			return err
		}
		timed = timed && (f.HasGraph() || f.Header.Tracer == "function_graph")
		stats[i], err = report.Compute(f, report.Options{TIDs: c.IntSlice("tid")})
		if err != nil {
			return fmt.Errorf("report: %s: %w", path, err)
		}
	}
	rows, err := report.Diff(stats[0], stats[1], c.String("sort"), c.Int("limit"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return report.WriteDiffText(c.App.Writer, rows, timed)
}

// loadForestFile reads and symbolises the trace at path, warning on stderr as
// loadForest does (without progress: --diff reads two traces).
func loadForestFile(c *cli.Context, path string) (*calltree.Forest, error) {
	tr, err := tracefile.Open(path)
	if err != nil {
		return nil, err
	}
	for _, w := range tr.Header.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s: %s\n", path, w)
	}
	sym := symbolize.New(tr.Maps)
	f := calltree.Build(tr, sym.Lookup, nil)
	for _, w := range sym.Warnings() {
		fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s\n", w)
	}
	return f, nil
}

// reportThreadsOrCallers is `ftrace report --threads` and `ftrace report --callers FUNC`.
func reportThreadsOrCallers(c *cli.Context) error {
	if c.Bool("threads") && c.String("callers") != "" {
		return fmt.Errorf("report: --threads and --callers do not go together")
	}
	if c.String("format") != "text" {
		return fmt.Errorf("report: --threads and --callers print text only")
	}
	f, _, err := loadForest(c)
	if err != nil {
		return err
	}
	if c.Bool("threads") {
		return report.WriteThreadsText(c.App.Writer, f, report.Threads(f, c.IntSlice("tid")))
	}
	r, err := report.Callers(f, c.String("callers"), c.IntSlice("tid"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return report.WriteCallersText(c.App.Writer, r)
}
