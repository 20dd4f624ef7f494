package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/argfmt"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/filter"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/report"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

const defaultTrace = "ftrace.dat"

// inputFlag is the trace file flag shared by the reading commands; a positional argument
// works too.
func inputFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "input", Aliases: []string{"i"}, Usage: "trace file to read", Value: defaultTrace}
}

func tidFlag() *cli.IntSliceFlag {
	return &cli.IntSliceFlag{Name: "tid", Usage: "only these threads (repeat or comma-separate)"}
}

// inputPath is the positional argument, else --input.
func inputPath(c *cli.Context) (string, error) {
	switch c.NArg() {
	case 0:
		return c.String("input"), nil
	case 1:
		return c.Args().First(), nil
	}
	return "", fmt.Errorf("%s: too many arguments %q (want at most one trace file)", c.Command.Name, c.Args().Slice())
}

// isTerminal reports whether w is a terminal (not /dev/null, another character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// defaultOutput is where a command that writes a file by default (flame, pprof) writes
// without -o: to stdout when it is redirected to a regular file (`ftrace flame > x.svg`
// left x.svg empty and wrote flame.svg), else to name.
func defaultOutput(c *cli.Context, name string) string {
	if c.IsSet("output") {
		return c.String("output")
	}
	if f, ok := c.App.Writer.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return "-"
		}
	}
	return name
}

// progressThreshold is the event count above which conversions show progress.
const progressThreshold = 1 << 20

// loadForest reads and symbolises a trace, warning on stderr about symbol problems.
// loadTrace reads the input trace, saying on stderr what the reader tolerated.
func loadTrace(c *cli.Context) (*tracefile.Trace, string, error) {
	path, err := inputPath(c)
	if err != nil {
		return nil, "", err
	}
	tr, err := tracefile.Open(path)
	if err != nil {
		return nil, "", err
	}
	for _, w := range tr.Header.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s: %s\n", path, w)
	}
	return tr, path, nil
}

// objects are the program files a command has read the symbols of, for all the traces it
// reads (the processes of one run share their program and libraries).
var objects = symbolize.NewCache()

// newSymbolizer is a Symbolizer for a trace's memory map, sharing objects.
func newSymbolizer(maps []tracefile.Mapping) *symbolize.Symbolizer {
	s := symbolize.New(maps)
	s.Shared = objects
	return s
}

func loadForest(c *cli.Context) (*calltree.Forest, *tracefile.Trace, error) {
	tr, path, err := loadTrace(c)
	if err != nil {
		return nil, nil, err
	}
	sym := newSymbolizer(tr.Maps)
	calls, entries, exits, _, _ := tr.Counts()
	progress := progressFunc(c, path, calls+entries+exits)
	if err := checkTIDs(c, path, tr); err != nil {
		return nil, nil, err
	}
	warnLost(c, path, tr)
	f := calltree.Build(tr, sym.Lookup, progress)
	warnSymbols(c, sym)
	return f, tr, nil
}

// progressFunc returns what shows progress on stderr while a trace of that many events is
// read: nothing unless stderr is a terminal and the trace is big.
func progressFunc(c *cli.Context, path string, events uint64) calltree.Progress {
	stderr := c.App.ErrWriter
	threshold := uint64(progressThreshold)
	if v, err := strconv.ParseUint(os.Getenv("FTRACE_PROGRESS_EVENTS"), 10, 64); err == nil {
		threshold = v
	}
	if !isTerminal(stderr) || events <= threshold {
		return nil
	}
	last := time.Now()
	return func(done, total int) {
		if done < total && time.Since(last) < 200*time.Millisecond {
			return
		}
		last = time.Now()
		fmt.Fprintf(stderr, "\rftrace: %s: %d/%d events (%d%%)", path, done, total, done*100/max(total, 1))
		if done == total {
			fmt.Fprintln(stderr)
		}
	}
}

// streamIn is a trace opened as a stream by a reading command, with its symbols and
// the command's filters.
type streamIn struct {
	st   *tracefile.Stream
	path string
	sym  *symbolize.Symbolizer
	// flt is the command's filters bound to this trace (nil: the command has none);
	// wrap applies them to a walk's observers (nil: they select threads only).
	flt  *filter.Filter
	wrap func(calltree.Observer) calltree.Observer
	// several: one of the traces of one run; an empty one is not said on its own (an
	// intermediate process of a daemon's double fork ran no traced code), only when
	// they all are
	several bool
}

// openStream checks the command's filters, opens the input trace as a stream, refusing
// a --tid it does not hold (when the command has --tid). Close it.
func openStream(c *cli.Context) (*streamIn, error) {
	path, err := inputPath(c)
	if err != nil {
		return nil, err
	}
	return openStreamPath(c, path, true)
}

// openStreamPath is openStream for the trace at path; a --tid it does not hold is
// refused only with checkTID (one of several traces need not hold it).
func openStreamPath(c *cli.Context, path string, checkTID bool) (*streamIn, error) {
	flt, err := commandFilter(c)
	if err != nil {
		return nil, err
	}
	st, err := tracefile.OpenStream(path)
	if err != nil {
		return nil, err
	}
	if checkTID {
		if err := checkTIDs(c, path, st.Trace); err != nil {
			st.Close()
			return nil, err
		}
	}
	in := &streamIn{st: st, path: path, sym: newSymbolizer(st.Trace.Maps)}
	lookup := in.sym.LockedLookup()
	st.Name = func(addr uint64, ret bool) string { // a trigger's stack traces
		if ret {
			addr-- // the call, not what follows it
		}
		return lookup(addr).Name
	}
	if in.flt, in.wrap, err = boundFilter(flt, st); err != nil {
		st.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// graph and dump show when calls end, not their self time: past --until, only the
	// returns of the calls open then are decoded (report, pprof and flame need what
	// those calls made later, their children's time)
	st.UntilReturns = c.Command.Name == "graph" || c.Command.Name == "dump"
	return in, nil
}

// commandFilter is readFilter for a command with the filter flags, else nil.
func commandFilter(c *cli.Context) (*filter.Filter, error) {
	if c.Generic("filter") == nil {
		return nil, nil
	}
	return readFilter(c)
}

func (in *streamIn) Close() error { return in.st.Close() }

// progress shows the reading of the threads in tids (all when empty).
func (in *streamIn) progress(c *cli.Context, tids []int) calltree.Progress {
	var total uint64
	for i, th := range in.st.Trace.Threads {
		if len(tids) == 0 || slices.Contains(tids, th.TID) {
			total += in.st.Hint(i)
		}
	}
	return progressFunc(c, in.path, total)
}

// wrapped is obs through the command's filters, if any.
func (in *streamIn) wrapped(obs calltree.Observer) calltree.Observer {
	if in.wrap == nil {
		return obs
	}
	return in.wrap(obs)
}

// warn says on stderr what reading met (see warnStream).
func (in *streamIn) warn(c *cli.Context) {
	in.warnSome(c)
	for _, u := range in.flt.Unmatched() {
		fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s: %s matches no function in the trace\n", in.path, u)
	}
}

// warnSome is warn but for the globs that matched nothing: one of several traces need
// not have a function another has.
func (in *streamIn) warnSome(c *cli.Context) {
	warnStream(c, in.path, in.st, in.sym, in.several)
	if in.flt.EmptyRange() {
		fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s: no call was entered in the --since/--until range (times count from the trace's start)\n", in.path)
	}
}

// streamReport computes the report reading the trace as a stream (memory bounded by
// functions × threads and call depth, not by events), saying on stderr what the reader
// tolerated and what was lost.
func streamReport(c *cli.Context, o report.Options) ([]*report.Stat, *calltree.Forest, error) {
	in, err := openStream(c)
	if err != nil {
		return nil, nil, err
	}
	defer in.Close()
	o.Progress = in.progress(c, o.TIDs)
	o.Filter = in.wrap
	stats, f, err := report.ComputeStream(in.st, in.sym.LockedLookup(), o)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", in.path, err)
	}
	in.warn(c)
	return stats, f, nil
}

// argKeys splits functions by the arguments recorded with their calls when the command
// asks (--args), named as graph shows the calls; nil otherwise.
func argKeys(c *cli.Context) *calltree.ArgKeys {
	if !c.Bool("args") {
		return nil
	}
	vals := &argfmt.Formatter{}
	return &calltree.ArgKeys{Name: func(fn *symbolize.Func, v *tracefile.Values) string {
		return argfmt.WithArgs(fn, vals.Args(fn, v))
	}}
}

// streamPaths reads the trace as a stream into each thread's call paths (flame graphs,
// profiles), given to add a trace at a time, saying on stderr what the reader tolerated
// and what was lost. It returns the forest of all the traces read.
func streamPaths(c *cli.Context, add func(f *calltree.Forest, paths []calltree.ThreadPaths)) (*calltree.Forest, error) {
	if c.NArg() > 1 {
		return streamPathsMany(c, add)
	}
	in, err := openStream(c)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	f, paths, err := in.paths(c, true)
	if err != nil {
		return nil, err
	}
	add(f, paths)
	return f, nil
}

// streamPathsMany is streamPaths of several traces (the processes of one run), each
// trace's paths given to add once read and then let go (a test suite's thousands of
// traces), each function one *Func over them (calltree.Unifier).
func streamPathsMany(c *cli.Context, add func(f *calltree.Forest, paths []calltree.ThreadPaths)) (*calltree.Forest, error) {
	var forests calltree.Combiner
	var funcs calltree.Unifier
	err := eachStream(c, func(in *streamIn) error {
		f, paths, err := in.paths(c, false)
		if err != nil {
			return err
		}
		forests.Add(f)
		funcs.Unify(paths)
		add(f, paths)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return forests.Forest(), nil
}

// warnNoEvents says that n traces (more than one) hold no event between them.
func warnNoEvents(c *cli.Context, events uint64, n int) {
	if events == 0 && n > 1 {
		fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: none of the %d traces holds an event\n", n)
	}
}

// eachStream calls fn with each of the command's traces in turn, open only meanwhile
// (a test suite's hundreds of traces need not all be open at once), then refuses a --tid
// that none of them held and says which globs matched nothing in any.
func eachStream(c *cli.Context, fn func(in *streamIn) error) error {
	have := map[int]bool{}
	var read readTally
	paths := tracePaths(c)
	for _, path := range paths {
		in, err := openStreamPath(c, path, false)
		if err != nil {
			return err
		}
		in.several = len(paths) > 1
		noteTIDs(have, in.st.Trace)
		err = fn(in)
		read.add(in)
		in.Close()
		if err != nil {
			return err
		}
	}
	warnNoEvents(c, read.events, len(paths))
	if err := tidsInNone(c, have); err != nil {
		return err
	}
	warnUnmatchedAll(c, read.unmatched, len(paths))
	return nil
}

// readTally is what the reading of several traces met: their events, and how many of
// them each glob matched nothing in.
type readTally struct {
	events    uint64
	unmatched map[string]int
}

// add counts a trace that was read.
func (r *readTally) add(in *streamIn) {
	r.events += streamEvents(in.st)
	if r.unmatched == nil {
		r.unmatched = map[string]int{}
	}
	for _, u := range in.flt.Unmatched() {
		r.unmatched[u]++
	}
}

// warn says, once n traces were read, whether none held an event and which globs matched
// nothing in any.
func (r *readTally) warn(c *cli.Context, n int) {
	warnNoEvents(c, r.events, n)
	warnUnmatchedAll(c, r.unmatched, n)
}

// prescan opens each of paths briefly, before any output, to refuse a --tid that none of
// them holds; seen, if not nil, is given each trace meanwhile.
func prescan(c *cli.Context, paths []string, seen func(path string, tr *tracefile.Trace)) error {
	have := map[int]bool{}
	for _, path := range paths {
		in, err := openStreamPath(c, path, false)
		if err != nil {
			return err
		}
		noteTIDs(have, in.st.Trace)
		if seen != nil {
			seen(path, in.st.Trace)
		}
		in.Close()
	}
	return tidsInNone(c, have)
}

// tracePaths is the command's trace files but for the snapshots of a process whose own
// trace, or a later snapshot of it, is also given: a snapshot copies its process's trace
// so far, and `report t.dat t.dat.*`, as record advises, took t.dat.<pid>.snap.<n> too and
// counted each call before it twice (the nginx trial). Each one left out is said.
func tracePaths(c *cli.Context) []string {
	paths := c.Args().Slice()
	if len(paths) < 2 {
		return paths
	}
	type proc struct {
		pid   int
		start uint64
	}
	ids := make([]*tracefile.Ident, len(paths))
	best := map[proc]int{} // the fullest trace of each process: its own, else the latest snapshot
	for i, p := range paths {
		id, err := tracefile.ReadIdent(p)
		if err != nil {
			continue // opening it says why
		}
		ids[i] = &id
		k := proc{id.PID, id.Start}
		if j, ok := best[k]; !ok || ids[j].Snapshot && (!id.Snapshot || id.End > ids[j].End) {
			best[k] = i
		}
	}
	var out []string
	for i, p := range paths {
		if id := ids[i]; id != nil && id.Snapshot {
			if j := best[proc{id.PID, id.Start}]; j != i {
				fmt.Fprintf(c.App.ErrWriter, "ftrace: %s: a snapshot of process %d, whose fuller trace %s is given too: left out (its calls would count twice)\n", p, id.PID, paths[j])
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// noteTIDs adds the threads of tr to have.
func noteTIDs(have map[int]bool, tr *tracefile.Trace) {
	for _, th := range tr.Threads {
		have[th.TID] = true
	}
}

// tidsInNone refuses a --tid that none of several traces holds (have: their threads).
func tidsInNone(c *cli.Context, have map[int]bool) error {
	for _, t := range c.IntSlice("tid") {
		if !have[t] {
			return fmt.Errorf("%s: --tid %d: none of the traces has such a thread", c.Command.Name, t)
		}
	}
	return nil
}

// warnUnmatchedAll says which globs matched nothing in any of the n traces read
// (unmatched: in how many each matched nothing).
func warnUnmatchedAll(c *cli.Context, unmatched map[string]int, n int) {
	for _, u := range slices.Sorted(maps.Keys(unmatched)) {
		if unmatched[u] == n {
			fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s matches no function in any of the traces\n", u)
		}
	}
}

// paths reads the trace into each thread's call paths and says what reading met
// (unmatched globs too with all).
func (in *streamIn) paths(c *cli.Context, all bool) (*calltree.Forest, []calltree.ThreadPaths, error) {
	tids := in.flt.TIDs()
	obs, threads, err := calltree.WalkStreamArgs(in.st, in.sym.LockedLookup(), tids,
		func(*tracefile.Thread) calltree.Observer { return in.wrapped(&calltree.Paths{}) }, in.progress(c, tids), argKeys(c))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", in.path, err)
	}
	paths := make([]calltree.ThreadPaths, len(obs))
	for k := range obs {
		paths[k] = calltree.ThreadPaths{Paths: calltree.Unwrap(obs[k]).(*calltree.Paths), T: threads[k]}
		// the span the profile covers is the time window's part of what was read, not the
		// blocks decoded around it (which ones are skipped depends on their sizes)
		if t := threads[k]; t != nil && in.flt.Timed() {
			if b := in.flt.Before(); b > t.First {
				t.First = b
			}
			if a := in.flt.After(); a != 0 && a < t.Last {
				t.Last = a
			}
		}
	}
	if all {
		in.warn(c)
	} else {
		in.warnSome(c)
	}
	return calltree.ForestOf(in.st.Trace, threads), paths, nil
}

// streamEvents is the number of events a stream's threads hold (those not read, under
// --tid: what their chunks announce).
func streamEvents(st *tracefile.Stream) uint64 {
	var events uint64
	for i, th := range st.Trace.Threads {
		if th.N == 0 {
			th.N = st.Hint(i)
		}
		events += uint64(th.N)
	}
	return events
}

// warnStream says on stderr what reading a stream met: reader warnings, losses, symbols.
// (several: one of the traces of a run, whose emptiness warnNoEvents says.)
func warnStream(c *cli.Context, path string, st *tracefile.Stream, sym *symbolize.Symbolizer, several bool) {
	tr := st.Trace
	for _, w := range tr.Header.Warnings {
		fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s: %s\n", path, w)
	}
	if streamEvents(st) == 0 && len(tr.Header.Warnings) == 0 && !several {
		// an empty output otherwise says nothing (a filter at record time that matched nothing)
		fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s: the trace holds no events\n", path)
	}
	warnLost(c, path, tr)
	warnSymbols(c, sym)
}

// warnSymbols says on stderr what sym met that no earlier trace of this command said: the
// traces of one run share their objects, and a missing library was named once per trace
// (pcre2's 339 traces).
func warnSymbols(c *cli.Context, sym *symbolize.Symbolizer) {
	if c.App.Metadata == nil {
		c.App.Metadata = map[string]any{}
	}
	said, _ := c.App.Metadata["symbolWarned"].(map[string]bool)
	if said == nil {
		said = map[string]bool{}
		c.App.Metadata["symbolWarned"] = said
	}
	for _, m := range sym.Warnings() {
		if !said[m] {
			said[m] = true
			fmt.Fprintf(c.App.ErrWriter, "ftrace: warning: %s\n", m)
		}
	}
}

// checkTIDs refuses a --tid naming a thread the trace does not hold: the output would be
// empty with no word why.
func checkTIDs(c *cli.Context, path string, tr *tracefile.Trace) error {
	have := map[int]bool{}
	var tids []int
	for _, th := range tr.Threads {
		if !have[th.TID] {
			have[th.TID] = true
			tids = append(tids, th.TID)
		}
	}
	for _, t := range c.IntSlice("tid") {
		if !have[t] {
			sort.Ints(tids)
			return fmt.Errorf("%s: no thread %d in the trace (threads: %s)", path, t, joinInts(tids))
		}
	}
	return nil
}

// warnLost says on stderr that events were lost, in all and per thread: the time of the
// calls not recorded counts as their callers' self time, and nothing else in a profile,
// a flame graph or a report shows it.
func warnLost(c *cli.Context, path string, tr *tracefile.Trace) {
	sum := tracefile.LostSummary(tr)
	if sum.Lost == 0 {
		return
	}
	w := c.App.ErrWriter
	// a function trace has no times: only counts are short
	what := "the time of calls not recorded shows as their callers' self time"
	if tr.Header.Tracer == tracefile.TracerFunction {
		what = "the calls not recorded are missing from the counts"
	}
	fmt.Fprintf(w, "ftrace: warning: %s: %d events lost (%s of %d); %s%s\n",
		path, sum.Lost, tracefile.Pct(sum.Lost, sum.Lost+sum.Recorded), sum.Lost+sum.Recorded, what, sum.Hint)
	const most = 8
	for i, th := range sum.Threads {
		if i == most {
			fmt.Fprintf(w, "ftrace: warning: %s: and %d more threads lost events\n", path, len(sum.Threads)-most)
			break
		}
		fmt.Fprintf(w, "ftrace: warning: %s: thread %d%s: %d of %d events lost (%s)\n",
			path, th.TID, threadName(th.Name), th.Lost, th.Lost+th.Recorded, tracefile.Pct(th.Lost, th.Lost+th.Recorded))
	}
}

func threadName(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

// outputFile opens -o's file (stdout for "" or "-"); the returned close commits it.
func outputFile(c *cli.Context, name string) (io.Writer, func() error, error) {
	if name == "" || name == "-" {
		return c.App.Writer, func() error { return nil }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() error {
		if err := f.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		return nil
	}, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// chromeBig is about where trace-event JSON stops loading: the Perfetto UI and
// chrome://tracing read the whole file into the browser's memory (a trial wrote 9 GB
// without a word).
const chromeBig = 1 << 30

// bigOutput passes writes on to w and says once on warn, when the output passes limit
// bytes, that it is too big to open, while there is still time to interrupt it.
type bigOutput struct {
	w      io.Writer
	warn   io.Writer
	limit  int64
	n      int64
	warned bool
}

func (b *bigOutput) Write(p []byte) (int, error) {
	n, err := b.w.Write(p)
	b.n += int64(n)
	if b.n > b.limit && !b.warned {
		b.warned = true
		fmt.Fprintf(b.warn, "ftrace: dump: the JSON passed %d MiB: the Perfetto UI and chrome://tracing cannot load files this big; narrow it with --since/--until, -F, -N, -D, -t or --tid\n", b.limit>>20)
	}
	return n, err
}
