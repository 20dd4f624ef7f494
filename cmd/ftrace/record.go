package main

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/filter"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/mcountloc"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

func recordCommand() *cli.Command {
	return &cli.Command{
		Name:      "record",
		Usage:     "run a program with tracing on and write its trace",
		ArgsUsage: "[flags] -- PROG [ARGS...]",
		Description: "Runs PROG (linked with libftrt) with FTRACE_TRACER, FTRACE_FILTER, FTRACE_NOTRACE,\n" +
			"FTRACE_GRAPH_FUNCTION, FTRACE_GRAPH_NOTRACE, FTRACE_GRAPH_DEPTH, FTRACE_TIME_FILTER, FTRACE_THREADS,\n" +
			"FTRACE_TRIGGER, FTRACE_ARGS, FTRACE_RETVAL, " +
			"FTRACE_OUTPUT, FTRACE_BUFFER_KB, FTRACE_NO_LOSS, FTRACE_RING, FTRACE_SIZE and FTRACE_DURATION set from the\n" +
			"flags, and exits with the " +
			"program's exit status. By default every event is streamed to the file by a writer thread\n" +
			"of the runtime; when it falls behind, events are dropped and counted (--no-loss: the\n" +
			"program's threads wait instead). --ring keeps only each thread's newest events.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "tracer", Aliases: []string{"t"}, Value: tracefile.TracerFunctionGraph, Usage: "`NAME`: function, function_graph or nop (nop: nothing recorded until a live command sets a tracer)"},
			// not StringSliceFlag: it splits at every comma and trims, and C++ names
			// hold both ("ns::f(char const*, int)"); the runtime splits the list itself
			specFlag("filter", "F", "trace only functions matching these `GLOBS` (comma-separated, repeatable; !glob removes)"),
			specFlag("notrace", "N", "never trace functions matching these `GLOBS`"),
			specFlag("graph-function", "G", "function_graph: graph only these functions (`GLOBS`) and what they call"),
			&cli.GenericFlag{Name: "graph-notrace", Value: &specList{}, Usage: "function_graph: leave out these functions (`GLOBS`) and what they call"},
			&cli.IntFlag{Name: "depth", Aliases: []string{"D"}, Usage: "record `N` levels of graph calls (1: the outermost only; 0: unlimited)"},
			specFlag("trigger", "T", "act on hits of functions: `SPEC` is GLOB@ACTION[:COUNT] with actions (comma-separated) traceon, traceoff, snapshot, stacktrace, depth=N, finish (repeatable; FTRACE_TRIGGER)"),
			specFlag("argument", "A", "record arguments: `SPEC` is FUNC@arg1,arg2/s,fparg1 (uftrace syntax; repeatable; FTRACE_ARGS), or @FILE: the specs of a file, one per line (ftrace args --spec)"),
			specFlag("retval", "R", "record return values: `SPEC` is FUNC@retval[/FMT] (repeatable; FTRACE_RETVAL), or @FILE (ftrace args --spec)"),
			&cli.BoolFlag{Name: "auto-args", Aliases: []string{"a"}, Usage: "record every function's arguments and return value as the program's DWARF describes them (needs -g)"},
			&cli.StringFlag{Name: "threads", Usage: "record only these threads: thread ids and thread-name globs, comma-separated (`LIST`; FTRACE_THREADS)"},
			&cli.StringFlag{Name: "time-filter", Usage: "function_graph: record only calls lasting at least `DUR` (e.g. 10us, 1.5ms) and those of their callees that do (FTRACE_TIME_FILTER)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: defaultTrace, Usage: "trace file (%p: pid)"},
			&cli.IntFlag{Name: "buffer-kb", Aliases: []string{"b"}, Usage: "per-thread buffer size in KiB while the writer catches up (0: runtime default; 256 to 4096 used)"},
			&cli.BoolFlag{Name: "no-loss", Usage: "threads wait for the writer instead of dropping events (FTRACE_NO_LOSS=1)"},
			&cli.StringFlag{Name: "ring", Usage: "flight recorder: keep the newest `SIZE` bytes of events per thread (K, M, G, T suffixes), written at exit, on a fatal signal, snapshot or live dump (FTRACE_RING)"},
			&cli.StringFlag{Name: "clock", Usage: "tsc or mono (default: runtime's choice)"},
			&cli.BoolFlag{Name: "control", Usage: "serve the live-control socket (FTRACE_CONTROL=1; on by default with a tracer; --control=false: none)"},
			&cli.DurationFlag{Name: "duration", Usage: "stop recording after `D` (e.g. 30s, 5m): the trace is finalised then and the program runs on untraced"},
			&cli.StringFlag{Name: "size", Usage: "stop recording once the trace uses `SIZE` of disk (e.g. 512M, 2G; K, M, G: powers of 1024)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no summary on stderr"},
		},
		Action: doRecord,
	}
}

func doRecord(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return errors.New("record: no program given (usage: ftrace record [flags] -- PROG [ARGS...])")
	}
	tracer := c.String("tracer")
	switch tracer {
	case tracefile.TracerFunction, tracefile.TracerFunctionGraph, "nop":
	default:
		return fmt.Errorf("record: unknown tracer %q (want function, function_graph or nop)", tracer)
	}
	if c.Int("depth") < 0 {
		return fmt.Errorf("record: --depth must not be negative (got %d)", c.Int("depth"))
	}
	// what the runtime takes (FTRACE_BUFFER_KB); it uses 256 KiB to 4 MiB of it
	if b := c.Int("buffer-kb"); b != 0 && (b < 4 || b > 4194304) {
		return fmt.Errorf("record: --buffer-kb %d: want 4 to 4194304 (KiB; 256 to 4096 are used), or 0 for the default", b)
	}
	limitSize, err := parseSize(c.String("size"))
	if err != nil {
		return fmt.Errorf("record: --size: %w", err)
	}
	if c.Duration("duration") < 0 {
		return errors.New("record: --duration must not be negative")
	}
	out := c.String("output")
	if err := outputOK(out); err != nil {
		return fmt.Errorf("record: --output %s: %w", out, err)
	}
	path := args[0]
	if !strings.Contains(path, "/") { // as exec.Command: a name is looked up in $PATH
		if path, err = exec.LookPath(path); err != nil {
			return notRunnable(fmt.Errorf("record: %w", err))
		}
	}
	// the program whose symbols and DWARF the filters and -a read: qemu-user's guest,
	// env's command
	target := path
	if inner := wrapped(args); inner != "" {
		target = inner
	}
	if tracer == "function" {
		// the function tracer has no calls' ends: these would be taken silently
		var graphOnly []string
		for _, f := range []struct{ name, shown string }{{"graph-function", "-G"}, {"graph-notrace", "--graph-notrace"},
			{"depth", "-D"}, {"time-filter", "--time-filter"}, {"retval", "-R"}} {
			if c.IsSet(f.name) {
				graphOnly = append(graphOnly, f.shown)
			}
		}
		if len(graphOnly) > 0 && !c.Bool("quiet") {
			verb := "apply"
			if len(graphOnly) == 1 {
				verb = "applies"
			}
			fmt.Fprintf(c.App.ErrWriter, "ftrace: record: %s %s to function_graph's calls only: the function tracer records every call, without return values\n",
				strings.Join(graphOnly, ", "), verb)
		}
	}
	env := []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + out}
	for _, l := range [][2]string{{"filter", "FTRACE_FILTER"}, {"notrace", "FTRACE_NOTRACE"},
		{"graph-function", "FTRACE_GRAPH_FUNCTION"}, {"graph-notrace", "FTRACE_GRAPH_NOTRACE"}} {
		if f := c.Generic(l[0]).(*specList).v; len(f) > 0 {
			env = append(env, l[1]+"="+strings.Join(runtimeGlobs(target, f), ","))
		}
	}
	if d := c.Int("depth"); d > 0 {
		env = append(env, "FTRACE_GRAPH_DEPTH="+strconv.Itoa(d))
	}
	if tg := c.Generic("trigger").(*specList).v; len(tg) > 0 {
		for _, x := range tg {
			if strings.Contains(x, ";") || !strings.Contains(x, "@") {
				return fmt.Errorf("record: --trigger %q: want GLOB@ACTION[:COUNT][,ACTION...] (one trigger per flag)", x)
			}
		}
		env = append(env, "FTRACE_TRIGGER="+strings.Join(tg, ";"))
	}
	if th := c.String("threads"); th != "" {
		env = append(env, "FTRACE_THREADS="+th)
	}
	argEnv, cleanup, err := argsEnv(c, target)
	if err != nil {
		return err
	}
	defer cleanup()
	env = append(env, argEnv...)
	if tf := c.String("time-filter"); tf != "" {
		d, err := filter.ParseDuration(tf)
		if err != nil {
			return fmt.Errorf("record: --time-filter: %w", err)
		}
		if d > 0 {
			env = append(env, fmt.Sprintf("FTRACE_TIME_FILTER=%dns", d.Nanoseconds()))
		}
	}
	if b := c.Int("buffer-kb"); b > 0 {
		env = append(env, "FTRACE_BUFFER_KB="+strconv.Itoa(b))
	}
	if c.Bool("no-loss") {
		env = append(env, "FTRACE_NO_LOSS=1")
	}
	if r := c.String("ring"); r != "" {
		if v, err := parseSize(r); err != nil || v == 0 {
			return fmt.Errorf("record: --ring %q: not a size (bytes, or a number with K, M, G or T)", r)
		}
		env = append(env, "FTRACE_RING="+r)
	}
	if cl := c.String("clock"); cl != "" {
		env = append(env, "FTRACE_CLOCK="+cl)
	}
	// the runtime stops by itself (its writer checks): a killed ftrace leaves no run traced
	// without end
	if limitSize > 0 {
		env = append(env, "FTRACE_SIZE="+strconv.FormatUint(limitSize, 10))
	}
	if d := c.Duration("duration"); d > 0 {
		env = append(env, "FTRACE_DURATION="+strconv.FormatInt(d.Nanoseconds(), 10)+"ns")
	}
	if c.IsSet("control") {
		if c.Bool("control") {
			env = append(env, "FTRACE_CONTROL=1")
		} else {
			env = append(env, "FTRACE_CONTROL=0")
		}
	}
	// A stale trace would be mistaken for this run's.
	if !strings.Contains(out, "%p") {
		// only if there is one: on a read-only file system a missing file does not say
		// ENOENT to remove, and the program runs anyway (the runtime says it writes no trace)
		if _, err := os.Lstat(out); err == nil {
			if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("record: removing old %s: %w", out, err)
			}
		}
	}
	// The terminal's ^C goes to the program; ftrace waits for it to finish. Caught, not
	// ignored: an ignored signal stays ignored across exec, and the program (make, a
	// shell) would never see ^C. One ftrace was started with ignored (a script's
	// background job, nohup) stays ignored, for the program too: caught, it went back to
	// the default at exec, and a background xz died of a ^C meant for its script.
	swallow := make(chan os.Signal, 4)
	signal.Notify(swallow, notIgnored(syscall.SIGINT, syscall.SIGQUIT)...)
	defer signal.Stop(swallow)
	start := time.Now()
	files := filesBefore(out, start)
	// the traces of this run's processes are kept apart, not replaced by each other's:
	// a wrapper (a shell, make) that is not traced itself may run several that are
	env = append(env, "FTRACE_SESSION="+strconv.FormatInt(start.UnixNano(), 10))
	cmd, err := startProgram(path, args, append(withoutFtraceEnv(os.Environ()), env...), os.Stdin, c.App.Writer, c.App.ErrWriter)
	if errors.Is(err, syscall.EMFILE) {
		// ftrace's own descriptors (the exec status pipe, the runtime's epoll), not the
		// program's: it never ran
		return fmt.Errorf("record: %w: ftrace needs a few descriptors of its own to start %s (raise ulimit -n)", err, path)
	}
	if errors.Is(err, syscall.ENOEXEC) {
		if m := elfMachine(path); m != "" {
			// an aarch64 program on an x86-64 host without binfmt: qemu-user runs it
			return notRunnable(fmt.Errorf("record: %w: %s is a program for %s; run it through qemu-user: "+
				"ftrace record -- qemu-%s -L /usr/%s-linux-gnu %s", err, path, m, m, m, path))
		}
	}
	if err != nil {
		return notRunnable(fmt.Errorf("record: %w", err))
	}
	// Termination requests to ftrace are passed on; the program decides what to do.
	fwd := make(chan os.Signal, 4)
	signal.Notify(fwd, notIgnored(syscall.SIGTERM, syscall.SIGHUP)...)
	go func() {
		for sig := range fwd {
			cmd.proc.Signal(sig)
		}
	}()
	// --size/--duration: said when the runtime stops, not only when the program ends
	final := strings.ReplaceAll(out, "%p", strconv.Itoa(cmd.proc.Pid))
	done, noticed := make(chan struct{}), make(chan bool, 1)
	if (limitSize > 0 || c.Duration("duration") > 0) && !c.Bool("quiet") {
		go watchStop(c, final, done, noticed)
	} else {
		noticed <- false
	}
	state, err := cmd.wait()
	close(done)
	said := <-noticed
	signal.Stop(fwd)
	close(fwd)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	code := state.ExitCode()
	ws, _ := state.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if !c.Bool("quiet") {
		// what a shell says of a program a signal ended (it cannot: ftrace exits normally)
		if ws.Signaled() {
			core := ""
			if ws.CoreDump() {
				core = " (core dumped)"
			}
			fmt.Fprintf(c.App.ErrWriter, "ftrace: %s: killed by signal %d (%s)%s\n", filepath.Base(path), int(ws.Signal()), unix.SignalName(ws.Signal()), core)
		}
		if why := limitStop(c, final); why != "" && !said {
			fmt.Fprintf(c.App.ErrWriter, "ftrace: recording stopped %s; the program ran on untraced\n", why)
		}
		// the program started may be a wrapper (env, a shell) of one that was traced;
		// under qemu-user or env, the hints name the program they run
		if summarise(c, out, target, cmd.proc.Pid, files) == 0 {
			noTableHint(c.App.ErrWriter, target)
		}
	}
	if code != 0 {
		return exitError{code}
	}
	return nil
}

// notIgnored is those of sigs that ftrace was not started with ignored (signal.Notify
// would catch an ignored one, and the program would then start with its default).
func notIgnored(sigs ...os.Signal) []os.Signal {
	var out []os.Signal
	for _, sig := range sigs {
		if !signal.Ignored(sig) {
			out = append(out, sig)
		}
	}
	return out
}

func withoutFtraceEnv(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "FTRACE_") {
			out = append(out, e)
		}
	}
	return out
}

// summarise tells where the trace went (or why there is none); it returns the events of
// the trace (0 without one).
func summarise(c *cli.Context, out, prog string, pid int, files *runFiles) (events uint64) {
	stderr := c.App.ErrWriter
	d := time.Since(files.start)
	path := strings.ReplaceAll(out, "%p", strconv.Itoa(pid))
	others, running := otherTraces(out, pid, files)
	defer func() {
		if len(others) > 0 {
			fmt.Fprintf(stderr, "ftrace: traces of other processes (%%p): %s\n", someOf(others, " "))
		}
		// the descendants of the program and of the other processes of a %p pattern
		var kids, parts, execs []string
		for _, root := range append([]string{path}, append(others, running...)...) {
			k, p, e := descendants(root, pid, files)
			kids, parts, execs = append(kids, k...), append(parts, p...), append(execs, e...)
		}
		if len(kids) > 0 {
			// forked children, and processes of the run a wrapper or a child started
			// (sub-makes run by sh): <output>.<pid> alike
			fmt.Fprintf(stderr, "ftrace: traces of the run's other processes: %s\n", someOf(kids, " "))
			fmt.Fprintf(stderr, "ftrace: (report, graph, dump --chrome, pprof and flame read several traces as one: ftrace report %s %s.*)\n",
				path, path)
		}
		if len(parts) > 0 {
			fmt.Fprintf(stderr, "ftrace: forked children's traces at .part: %s\n", someOf(parts, ", "))
		}
		if len(execs) > 0 {
			fmt.Fprintf(stderr, "ftrace: traces of exec'd images: %s\n", someOf(execs, " "))
		}
		if rest := append(append(append([]string{}, others...), kids...), execs...); len(rest) > 0 {
			for _, l := range othersSummary(rest, c.Bool("no-loss")) {
				fmt.Fprintln(stderr, l)
			}
		}
		roots := append(append(append(append([]string{path}, others...), running...), kids...), execs...)
		if snaps := snapshotsOf(roots, files); len(snaps) > 0 {
			// copies of a trace so far, which the readers leave out next to it
			fmt.Fprintf(stderr, "ftrace: snapshots written during the run: %s\n", someOf(snaps, " "))
		}
	}()
	// a version 2+ trace announces its counts (block headers, thread tables): reading
	// every event back took minutes on a 47 GB trace, the deleted file held open meanwhile
	st, err := tracefile.OpenStream(path)
	var lostDepth uint64
	if err == nil {
		if st.Trace.Header.Version >= tracefile.Version2 {
			for i, th := range st.Trace.Threads {
				events += st.Hint(i)
				lostDepth += th.LostDepth
			}
		} else {
			var calls, entries, exits uint64
			calls, entries, exits, _, lostDepth, err = st.Counts()
			events = calls + entries + exits
		}
		st.Close()
		if err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	if err != nil {
		part := fmt.Sprintf("%s.%d.part", path, pid)
		if _, perr := os.Stat(part); perr == nil {
			if traceComplete(part) { // it could not take its name: the runtime said why
				fmt.Fprintf(stderr, "ftrace: the trace is complete in %s\n", part)
				return
			}
			if c.String("ring") != "" {
				fmt.Fprintf(stderr, "ftrace: the program ended without finalising its trace; a flight recorder's "+
					"events live in the process's memory until written (exit, fatal signal, snapshot, dump), "+
					"so they are lost; the file's start is in %s\n", part)
			} else {
				fmt.Fprintf(stderr, "ftrace: the program ended without finalising its trace; partial trace in %s\n", part)
			}
			return
		}
		if os.IsNotExist(err) {
			// the runtime said why it could not create the file; the hint is for a
			// program that never tried
			dir := filepath.Dir(path)
			if st, derr := os.Stat(dir); derr != nil || !st.IsDir() {
				fmt.Fprintf(stderr, "ftrace: no trace written to %s: no directory %s\n", path, dir)
			} else if werr := unix.Access(dir, unix.W_OK); werr != nil {
				// a read-only file system, or a directory of someone else's
				fmt.Fprintf(stderr, "ftrace: no trace written to %s: cannot write in %s (%v); choose another with -o\n", path, dir, werr)
			} else if len(others) > 0 {
				// a wrapper (a shell) whose descendants were traced
				fmt.Fprintf(stderr, "ftrace: no trace written to %s by the program itself (pid %d)\n", path, pid)
			} else if table, rt, ok := buildState(prog); ok && !table && !rt {
				if lib := tracedLibrary(prog); lib != "" {
					fmt.Fprintf(stderr, "ftrace: no trace written to %s: %s was not built for ftkit, but its library %s has call sites: "+
						"link %s with ftcc too (the runtime lives in the executable)\n", path, prog, lib, filepath.Base(prog))
				} else {
					fmt.Fprintf(stderr, "ftrace: no trace written to %s: %s was not built for ftkit (no call-site table, no runtime); "+
						"build it with ftcc (docs/ftcc.md)\n", path, prog)
				}
			} else if ok && table != rt {
				fmt.Fprintf(stderr, "ftrace: no trace written to %s\n", path) // noTableHint says why
			} else {
				fmt.Fprintf(stderr, "ftrace: no trace written to %s (is the program linked with libftrt and built with ftlink?)\n", path)
			}
			return
		}
		fmt.Fprintf(stderr, "ftrace: %v\n", err)
		return
	}
	if by := st.Trace.Header.PID; by != pid {
		// a wrapper that is not traced: its last traced process to finish has the name
		fmt.Fprintf(stderr, "ftrace: %s is the trace of pid %d (%s), which the program (pid %d) ran; the program wrote none itself\n",
			path, by, commandName(st.Trace.Header.Command), pid)
	}
	fmt.Fprintln(stderr, summaryLine(path, st.Trace, events, lostDepth, d, c.Bool("no-loss")))
	return events
}

// othersSummary is record's word on the run's other traces (a server's workers, a test
// suite's programs: where the work, and the losses, often are): their threads and events
// from the files' tables, the events they lost and where, and which a limit stopped.
func othersSummary(paths []string, noLoss bool) []string {
	var threads int
	var events, lost uint64
	var lossy, stopped []string
	hint, noLossHelps := "", false
	for _, p := range paths {
		st, err := tracefile.OpenStream(p)
		if err != nil {
			continue
		}
		if st.Trace.Header.Version >= tracefile.Version2 { // version 1: counted by reading only
			for i := range st.Trace.Threads {
				events += st.Hint(i)
			}
		}
		threads += len(st.Trace.Threads)
		if sum := tracefile.LostSummary(st.Trace); sum.Lost > 0 {
			lost += sum.Lost
			lossy = append(lossy, fmt.Sprintf("%s (%d)", p, sum.Lost))
			if hint == "" {
				hint, noLossHelps = sum.Hint, sum.NoLossHelps
			}
		}
		if r := st.Trace.Header.Reason; r == tracefile.ReasonSize || r == tracefile.ReasonDuration {
			stopped = append(stopped, p)
		}
		st.Close()
	}
	what := "the other trace"
	if len(paths) > 1 {
		what = fmt.Sprintf("the other %d traces", len(paths))
	}
	line := fmt.Sprintf("ftrace: %s: %d %s, %d events", what, threads, map[bool]string{true: "thread", false: "threads"}[threads == 1], events)
	if lost > 0 {
		if noLoss && noLossHelps {
			hint = ""
		}
		line += fmt.Sprintf(", %d lost (%s%s) in %s", lost, tracefile.Pct(lost, lost+events), hint, someOf(lossy, ", "))
	}
	out := []string{line}
	if len(stopped) > 0 {
		out = append(out, fmt.Sprintf("ftrace: recording stopped early (--size, --duration) in %s", someOf(stopped, " ")))
	}
	return out
}

// commandName is how record names a traced process by its recorded argv.
func commandName(argv []string) string {
	if len(argv) == 0 || argv[0] == "" {
		return "command not recorded"
	}
	return filepath.Base(argv[0])
}

// summaryLine is record's last word on a trace of events recorded events (its threads'
// events are not loaded: the counts come from the file's tables), with what to do about
// lost events (not --no-loss when it was given).
func summaryLine(path string, tr *tracefile.Trace, events, lostDepth uint64, d time.Duration, noLoss bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ftrace: %s: %d %s, %d events", path, len(tr.Threads), map[bool]string{true: "thread", false: "threads"}[len(tr.Threads) == 1], events)
	if sum := tracefile.LostSummary(tr); sum.Lost > 0 {
		hint := sum.Hint
		if noLoss && sum.NoLossHelps {
			hint = ""
		}
		fmt.Fprintf(&b, ", %d lost (%s%s)", sum.Lost, tracefile.Pct(sum.Lost, sum.Lost+events), hint)
	}
	if lostDepth > 0 {
		fmt.Fprintf(&b, ", %d calls not graphed", lostDepth)
	}
	fmt.Fprintf(&b, " (%.2fs)", d.Seconds())
	return b.String()
}

func liveCommand() *cli.Command {
	return &cli.Command{
		Name:      "live",
		Usage:     "control a running traced process",
		ArgsUsage: "PID COMMAND [ARG]",
		Description: "Commands: status, enable, disable, tracer function|function_graph|nop, filter GLOBS,\n" +
			"notrace GLOBS, graph_function GLOBS, graph_notrace GLOBS, depth N, threads LIST, trigger SPEC,\n" +
			"time_filter DUR, args SPEC|auto|off, retval SPEC|auto|off, " +
			"ring SIZE|off, size SIZE|off, snapshot [PATH], dump [PATH], clear, finish.\n" +
			"A process with no control socket (started without FTRACE_TRACER or FTRACE_CONTROL=1) is\n" +
			"attached: its runtime starts the socket when one of its threads waits in a system call.\n" +
			"An argument that begins with - needs -- before it: ftrace live PID -- depth -3.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "socket", Usage: "control socket path (default: found from the pid)"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "give up after this long (snapshot, dump and finish: 10m unless set: they copy the whole trace)"},
			&cli.DurationFlag{Name: "attach-timeout", Value: 3 * time.Second, Usage: "how long to wait for a process without a control socket to start one (0: do not ask)"},
		},
		Action: doLive,
	}
}

// liveCommandList: the commands and how many arguments each takes at most, in the order
// the docs and the error for an unknown one list them.
var liveCommandList = []struct {
	name    string
	maxArgs int
}{
	{"status", 0}, {"enable", 0}, {"disable", 0}, {"tracer", 1}, {"filter", 1}, {"notrace", 1},
	{"graph_function", 1}, {"graph_notrace", 1}, {"depth", 1}, {"threads", 1}, {"trigger", 1},
	{"time_filter", 1}, {"args", 1}, {"retval", 1}, {"snapshot", 1}, {"dump", 1}, {"ring", 1},
	{"size", 1}, {"clear", 0}, {"finish", 0},
}

var liveCommands = func() map[string]int { // command → max args
	m := map[string]int{}
	for _, c := range liveCommandList {
		m[c.name] = c.maxArgs
	}
	return m
}()

// liveCommandNames is "status, enable, … or finish".
func liveCommandNames() string {
	names := make([]string, len(liveCommandList))
	for i, c := range liveCommandList {
		names[i] = c.name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func doLive(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) < 2 {
		return errors.New("live: usage: ftrace live PID COMMAND [ARG]")
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil || pid <= 0 {
		return fmt.Errorf("live: bad pid %q", args[0])
	}
	if len(args) > 2 && args[1] == "--" { // ftrace live PID -- depth -3
		args = append(args[:1], args[2:]...)
	}
	cmd, rest := args[1], args[2:]
	maxArgs, ok := liveCommands[cmd]
	if !ok {
		return fmt.Errorf("live: unknown command %q (want %s)", cmd, liveCommandNames())
	}
	if len(rest) > maxArgs {
		return fmt.Errorf("live: %s takes at most %d argument(s)", cmd, maxArgs)
	}
	switch cmd {
	case "tracer", "depth", "time_filter", "ring", "size":
		if len(rest) != 1 {
			return fmt.Errorf("live: %s needs an argument", cmd)
		}
		if cmd == "size" && rest[0] != "off" {
			if v, err := parseSize(rest[0]); err != nil || v == 0 {
				return fmt.Errorf("live: size needs a size (bytes, or with K, M, G, T) or off, not %q", rest[0])
			}
		}
		if _, err := strconv.ParseUint(rest[0], 10, 32); cmd == "depth" && err != nil {
			return fmt.Errorf("live: depth needs a number from 0 (no limit) to 4294967295, not %q", rest[0])
		}
	case "args", "retval":
		if len(rest) != 1 {
			return fmt.Errorf("live: %s needs SPEC, auto or off", cmd)
		}
		spec, cleanup, err := liveArgSpec(pid, cmd, rest[0])
		if err != nil {
			return err
		}
		defer cleanup()
		rest[0] = spec
	case "snapshot", "dump":
		if len(rest) == 1 {
			if abs, err := filepath.Abs(rest[0]); err == nil {
				rest[0] = abs // the process may run in another directory
			}
		}
	}
	req := strings.Join(append([]string{cmd}, rest...), " ")
	if strings.ContainsAny(req, "\n\r") || len(req) > 4095 {
		return errors.New("live: request must be one line of at most 4095 bytes")
	}
	sock := c.String("socket")
	if sock == "" {
		if sock, err = findSocket(pid); err != nil && !strings.HasPrefix(err.Error(), "live: no process") &&
			!errors.As(err, &otherUserError{}) {
			sock, err = attach(pid, err, c.Duration("attach-timeout"))
		}
	} else {
		err = trustedSocket(sock)
	}
	if err != nil {
		return err
	}
	timeout := c.Duration("timeout")
	if (cmd == "snapshot" || cmd == "dump" || cmd == "finish") && !c.IsSet("timeout") {
		timeout = 10 * time.Minute
	}
	resp, err := liveRequest(pid, sock, req, timeout)
	if err != nil {
		return err
	}
	if resp != "" {
		fmt.Fprintln(c.App.Writer, resp)
	}
	return nil
}

// liveRequest sends one request to pid's control socket and returns the text of an "ok"
// reply; an "error" reply is an error.
func liveRequest(pid int, sock, req string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("unix", sock, timeout)
	// a runtime older than its rename-once-listening shows its socket bound but not
	// listening for a moment: a live process is asked again briefly
	for i := 0; i < 10 && err != nil && errors.Is(err, syscall.ECONNREFUSED) && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
		conn, err = net.DialTimeout("unix", sock, timeout)
	}
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		// Nobody listens: the socket outlived its process (SIGKILL leaves it behind).
		if kerr := syscall.Kill(pid, 0); errors.Is(kerr, syscall.ESRCH) {
			if os.Remove(sock) == nil {
				return "", fmt.Errorf("live: no process %d (removed its stale control socket %s, left by a run that was killed)", pid, sock)
			}
			return "", fmt.Errorf("live: no process %d (%s is a stale control socket, left by a run that was killed)", pid, sock)
		}
		return "", fmt.Errorf("live: process %d does not answer on %s: the socket is left from an earlier process with this pid, or the process is ending", pid, sock)
	}
	if err != nil {
		return "", fmt.Errorf("live: connecting to process %d at %s: %w", pid, sock, err)
	}
	defer conn.Close()
	end := time.Now().Add(timeout)
	conn.SetDeadline(end)
	if _, err := fmt.Fprintf(conn, "%s\n", req); err != nil {
		return "", fmt.Errorf("live: sending %q: %w", req, err)
	}
	// read in slices: a process with no descriptor left cannot take the request (its
	// server waits for one), which is said at once rather than after the whole timeout
	rd := bufio.NewReader(conn)
	var resp string
	for {
		slice := time.Now().Add(time.Second)
		if slice.After(end) {
			slice = end
		}
		conn.SetReadDeadline(slice)
		var part string
		part, err = rd.ReadString('\n')
		resp += part
		if !errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(end) {
			break
		}
		if open, limit := procDescriptors(pid); limit > 0 && open >= limit {
			return "", fmt.Errorf("live: process %d has all the %d descriptors its limit allows open (ulimit -n): "+
				"it cannot take the request until it closes one; ask again then", pid, limit)
		}
	}
	if errors.Is(err, io.EOF) {
		return "", fmt.Errorf("live: process %d closed the connection without replying to %q: it ended (exit, signal) meanwhile", pid, req)
	}
	if err != nil {
		return "", fmt.Errorf("live: reading the reply to %q: %w", req, err)
	}
	resp = strings.TrimRight(resp, "\n")
	switch {
	case resp == "ok":
		return "", nil
	case strings.HasPrefix(resp, "ok "):
		return resp[3:], nil
	case strings.HasPrefix(resp, "error"):
		return "", fmt.Errorf("live: process %d refused %q: %s", pid, req, strings.TrimSpace(strings.TrimPrefix(resp, "error")))
	}
	return "", fmt.Errorf("live: unexpected reply %q", resp)
}

// procDescriptors is how many descriptors pid has open and its soft limit on them
// (RLIMIT_NOFILE); limit 0 when either cannot be read (another user's process).
func procDescriptors(pid int) (open, limit int) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if n, err := strconv.Atoi(f[0]); err == nil {
					return len(ents), n
				}
			}
		}
	}
	return 0, 0
}

// outputOK checks, before the program runs, that the trace can be renamed onto out: it is
// renamed there when finalised and would replace a device such as /dev/null, a directory,
// or the user's data (even the program itself); and its directory exists (the program ran
// to its end before the runtime said it could write no trace).
func outputOK(out string) error {
	dir := filepath.Dir(out)
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("its directory %s: %w", dir, errors.Unwrap(err))
	} else if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if strings.Contains(out, "%p") {
		return nil
	}
	st, err := os.Lstat(out)
	switch {
	case err != nil || st.Mode()&os.ModeSymlink != 0:
		return nil
	case st.IsDir():
		return errors.New("is a directory (name the trace file: -o DIR/ftrace.dat)")
	case !st.Mode().IsRegular():
		return fmt.Errorf("is not a regular file (%s); the trace is written beside it and renamed onto it", st.Mode().Type())
	}
	f, err := os.Open(out)
	if err != nil {
		// not known to be a trace: not replaced (the runtime would refuse it too)
		return fmt.Errorf("exists and cannot be read to tell whether it is a trace: %w", errors.Unwrap(err))
	}
	defer f.Close()
	magic := make([]byte, len(tracefile.Magic))
	if n, _ := io.ReadFull(f, magic); n > 0 && string(magic[:n]) != tracefile.Magic {
		return errors.New("exists and is not an ftkit trace: not replacing it (remove it or name another file)")
	}
	return nil
}

// watchStop says on stderr, once the runtime finalised the trace at path for --size or
// --duration while the program runs on, that it did; noticed gets whether it did, once done
// is closed (the program ended) or it said so.
func watchStop(c *cli.Context, path string, done <-chan struct{}, noticed chan<- bool) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			noticed <- false
			return
		case <-tick.C:
			if _, err := os.Stat(path); err != nil {
				continue
			}
			if why := limitStop(c, path); why != "" {
				fmt.Fprintf(c.App.ErrWriter, "ftrace: recording stopped %s; the program runs on untraced\n", why)
				noticed <- true
				return
			}
		}
	}
}

// limitStop says why the runtime finalised the trace at path by itself (--size,
// --duration), or "" if it did not.
func limitStop(c *cli.Context, path string) string {
	reason, err := tracefile.ReadReason(path)
	if err != nil {
		return ""
	}
	switch reason {
	case tracefile.ReasonSize:
		size := int64(0)
		if fi, err := os.Stat(path); err == nil {
			size = fi.Size()
		}
		return fmt.Sprintf("at %d bytes of trace (--size)", size)
	case tracefile.ReasonDuration:
		return fmt.Sprintf("after %v (--duration)", c.Duration("duration"))
	}
	return ""
}

// parseSize reads a byte count with an optional K, M, G or T suffix (powers of 1024).
func parseSize(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	mult := uint64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	case "T":
		mult = 1 << 40
	}
	num := s
	if mult > 1 {
		num = s[:len(s)-1]
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n == 0 || n > (1<<63)/mult {
		return 0, fmt.Errorf("%q is not a size (a positive number of bytes, with K, M, G or T)", s)
	}
	return n * mult, nil
}

// findSocket returns the first existing control socket path of pid, in the runtime's order.
func findSocket(pid int) (string, error) {
	var cands []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		cands = append(cands, filepath.Join(d, fmt.Sprintf("ftkit-%d.sock", pid)))
	}
	cands = append(cands, filepath.Join("/tmp", fmt.Sprintf("ftkit-%d", os.Geteuid()), fmt.Sprintf("ftkit-%d.sock", pid)))
	for _, p := range cands {
		if st, err := os.Lstat(p); err == nil && st.Mode()&os.ModeSocket != 0 {
			if err := trustedSocket(p); err != nil {
				return "", err
			}
			return p, nil
		}
	}
	if err := syscall.Kill(pid, 0); err != nil && errors.Is(err, syscall.ESRCH) {
		return "", fmt.Errorf("live: no process %d", pid)
	}
	if uid, ok := procEUID(pid); ok && uid != os.Geteuid() {
		// its socket is in its user's directory, which we do not trust, and the attach
		// signal would start a server we may not use: neither is tried
		return "", otherUserError{fmt.Errorf("live: process %d runs as uid %d, not as you (uid %d): control it as that user "+
			"(its control socket is in /tmp/ftkit-%d or that user's XDG_RUNTIME_DIR); it was not signalled", pid, uid, os.Geteuid(), uid)}
	}
	return "", fmt.Errorf("live: process %d has no control socket (looked for %s)", pid, strings.Join(cands, ", "))
}

// otherUserError: the process is another user's (not to be attached).
type otherUserError struct{ error }

// procEUID is pid's effective uid, from /proc/PID/status.
func procEUID(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if f := statusField(b, "Uid"); err == nil && len(f) >= 2 {
		uid, err := strconv.Atoi(f[1])
		return uid, err == nil
	}
	return 0, false
}

// trustedSocket refuses a control socket that another user could have put there or
// answer through: its directory must be ours alone (owner, no group/other access, not a
// symlink) and the socket ours, as the runtime requires when it makes one. A socket in a
// directory someone else controls could be theirs, replying what they like.
func trustedSocket(path string) error {
	euid := uint32(os.Geteuid())
	dir := filepath.Dir(path)
	var ds, ss syscall.Stat_t
	if err := syscall.Lstat(dir, &ds); err != nil {
		return fmt.Errorf("live: %s: %w", dir, err)
	}
	switch {
	case ds.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return fmt.Errorf("live: refusing %s: %s is not a directory (a symlink?)", path, dir)
	case ds.Uid != euid:
		return fmt.Errorf("live: refusing %s: its directory %s belongs to uid %d, not to you (uid %d)", path, dir, ds.Uid, euid)
	case ds.Mode&0o077 != 0:
		return fmt.Errorf("live: refusing %s: its directory %s is open to other users (mode %04o; want 0700)", path, dir, ds.Mode&0o7777)
	}
	if err := syscall.Lstat(path, &ss); err != nil {
		return fmt.Errorf("live: %s: %w", path, err)
	}
	if ss.Mode&syscall.S_IFMT != syscall.S_IFSOCK || ss.Uid != euid {
		return fmt.Errorf("live: refusing %s: not a socket of yours (uid %d)", path, ss.Uid)
	}
	return nil
}

// elfMachine names the architecture of the ELF program at path when it is one qemu-user
// runs ("aarch64"), else "".
func elfMachine(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if f.Machine == elf.EM_AARCH64 {
		return "aarch64"
	}
	return ""
}

// noTableHint says when the program has no call-site table (compiled with -pg -mfentry but
// never run through recordmcount): the trace then holds none of its functions.
func noTableHint(stderr io.Writer, prog string) {
	table, rt, ok := buildState(prog)
	switch {
	case !ok || (!table && !rt):
		// a script, unreadable, or a program not built for ftkit at all (said above, or a
		// wrapper of traced programs)
	case !table:
		fmt.Fprintf(stderr, "ftrace: %s has no %s call-site table, so none of its functions is traced: "+
			"run recordmcount on its objects (compiled with gcc -pg -mfentry) before linking, then ftlink it\n",
			prog, mcountloc.TableSection)
	case !rt:
		// call sites but not the runtime: ftcc links -static and -static-libstdc++
		// programs so
		fmt.Fprintf(stderr, "ftrace: %s has call sites but not the ftkit runtime (linked without libftrt.a: "+
			"link it with ftcc too, not the compiler alone; ftcc leaves -static and -static-libstdc++ "+
			"links without it), so nothing of it is traced\n", prog)
	}
}

// wrapped returns the program a wrapper's command line runs — qemu-user's guest, env's
// command (env [OPTIONS] [NAME=VALUE]... PROG), qemu's guest inside env — or "" when
// args[0] is neither.
func wrapped(args []string) string {
	inner := ""
	for len(args) > 0 {
		if guest := qemuGuest(args); guest != "" {
			return guest // (qemu runs an aarch64 program, not env)
		}
		if filepath.Base(args[0]) != "env" {
			break
		}
		rest := envCommand(args[1:])
		if len(rest) == 0 {
			break
		}
		inner, args = rest[0], rest
	}
	return inner
}

// envCommand is the command of env's arguments args (after its options and NAME=VALUE
// words), nil if none.
func envCommand(args []string) []string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return args[i+1:]
		case a == "-u" || a == "-C" || a == "-S" || a == "--unset" || a == "--chdir" || a == "--split-string":
			i++ // its value follows
		case strings.HasPrefix(a, "-"):
		case strings.Contains(a, "="):
		default:
			return args[i:]
		}
	}
	return nil
}

// qemuNoValue are qemu-user's options that take no value; the others take one.
var qemuNoValue = map[string]bool{"-h": true, "-help": true, "-version": true, "-strace": true,
	"-singlestep": true, "-one-insn-per-tb": true}

// qemuGuest returns the program a qemu-user command line runs (qemu-aarch64 [OPTIONS] PROG
// [ARGS]), or "" when args[0] is not qemu-user: record then reads the guest's symbols and
// DWARF, not qemu's.
func qemuGuest(args []string) string {
	if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "qemu-") {
		return ""
	}
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case strings.HasPrefix(a, "-"):
			if !qemuNoValue[a] {
				i++
			}
		default:
			return a
		}
	}
	return ""
}

// tracedLibrary returns a shared library prog needs that has a call-site table (built
// with ftcc while prog was not); "" if none.
func tracedLibrary(prog string) string {
	if libs := tracedLibraries(prog); len(libs) > 0 {
		return libs[0]
	}
	return ""
}

// maxLibraries bounds the shared libraries tracedLibraries looks at.
const maxLibraries = 256

// tracedLibraries returns the shared libraries prog needs, its libraries' needs too,
// that have a call-site table, each where the dynamic loader finds it first: the needing
// object's RUNPATH (RPATH without one; $ORIGIN too), LD_LIBRARY_PATH, the system's
// directories.
func tracedLibraries(prog string) []string {
	var out []string
	seen := map[string]bool{}
	queue := []string{prog}
	for len(queue) > 0 && len(seen) < maxLibraries {
		obj := queue[0]
		queue = queue[1:]
		f, err := elf.Open(obj)
		if err != nil {
			continue
		}
		if obj != prog && f.Section(mcountloc.TableSection) != nil {
			out = append(out, obj)
		}
		needed, _ := f.ImportedLibraries()
		dirs := searchDirs(f, obj)
		f.Close()
		for _, n := range needed {
			if lib := findLibrary(n, dirs); lib != "" && !seen[lib] {
				seen[lib] = true
				queue = append(queue, lib)
			}
		}
	}
	return out
}

// searchDirs lists where the dynamic loader looks for obj's needed libraries.
func searchDirs(f *elf.File, obj string) []string {
	origin := filepath.Dir(obj)
	if abs, err := filepath.Abs(obj); err == nil {
		origin = filepath.Dir(abs)
	}
	var dirs []string
	paths, _ := f.DynString(elf.DT_RUNPATH)
	if len(paths) == 0 {
		paths, _ = f.DynString(elf.DT_RPATH)
	}
	for _, p := range paths {
		for _, d := range filepath.SplitList(p) {
			dirs = append(dirs, strings.ReplaceAll(d, "$ORIGIN", origin))
		}
	}
	dirs = append(dirs, filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	return append(dirs, "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu", "/usr/local/lib", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// findLibrary returns the first ELF file named name in dirs (a name with a slash is a
// path); "" if none.
func findLibrary(name string, dirs []string) string {
	if strings.Contains(name, "/") {
		if isELF(name) {
			return name
		}
		return ""
	}
	for _, d := range dirs {
		if lib := filepath.Join(d, name); d != "" && isELF(lib) {
			return lib
		}
	}
	return ""
}

// buildState tells whether prog has a call-site table and the ftkit runtime (ok: an ELF
// file that could be read).
func buildState(prog string) (table, rt, ok bool) {
	f, err := elf.Open(prog)
	if err != nil {
		return false, false, false
	}
	defer f.Close()
	return f.Section(mcountloc.TableSection) != nil, fileRuntimeNote(f) != 0, true
}

// otherTraces lists the traces of other processes an output pattern with %p was given
// (the program's descendants: a shell's pipeline), written during the run, and the
// outputs of those still writing theirs (their <output>.<pid>.part only exists yet).
func otherTraces(out string, pid int, files *runFiles) (done, running []string) {
	if !strings.Contains(out, "%p") {
		return nil, nil
	}
	name := strings.ReplaceAll(regexp.QuoteMeta(out), "%p", "([0-9]+)") // the output of pid $1
	re, err := regexp.Compile("^" + name + "$")
	part, err2 := regexp.Compile("^(" + name + `)\.([0-9]+)\.part$`)
	if err != nil || err2 != nil {
		return nil, nil
	}
	glob := strings.ReplaceAll(globQuote(out), "%p", "[0-9]*")
	own := strconv.Itoa(pid)
	done = files.recent(glob, func(name string) bool {
		m := re.FindStringSubmatch(name)
		return m != nil && m[1] != own
	})
	for _, p := range files.recent(glob+".[0-9]*.part", nil) {
		if m := part.FindStringSubmatch(p); m != nil && m[2] == m[3] && m[2] != own {
			running = append(running, m[1])
		}
	}
	return done, running
}

// descendants lists, for the trace path of process pid (or of another process of a %p
// pattern), the traces its forked descendants wrote (PATH.<pid>, theirs PATH.<pid>.<pid>,
// and so on; a program a child execs PATH.<pid>.exec<n>), their .part files with why
// (childParts), and those of images exec'd without a fork (PATH.exec<n>).
func descendants(path string, pid int, files *runFiles) (kids, parts, execs []string) {
	kids = files.recent(globQuote(path)+".[0-9]*", func(k string) bool {
		for _, p := range strings.Split(k[len(path)+1:], ".") {
			if _, err := strconv.Atoi(strings.TrimPrefix(p, "exec")); err != nil {
				return false
			}
		}
		return true
	})
	return kids, childParts(path, pid, files), files.recent(globQuote(path)+".exec[0-9]*", nil)
}

// snapshotsOf lists the snapshots the run wrote of the traces at roots, under their
// default names (<trace>.snap.<n>: live snapshot, triggers, ftrace_trace_snapshot()).
func snapshotsOf(roots []string, files *runFiles) []string {
	var snaps []string
	for _, r := range roots {
		snaps = append(snaps, files.recent(globQuote(r)+".snap.[0-9]*", nil)...)
	}
	return snaps
}

// runFiles tells the files a run wrote from those that were there before it (an earlier
// run's children's traces, which its own output's removal leaves).
type runFiles struct {
	start  time.Time
	before map[string]time.Time // the files the output could name at start, and their mtimes
}

// filesBefore notes the files out (a %p in it: any pid) and its descendants' names could
// be, as they are at start.
func filesBefore(out string, start time.Time) *runFiles {
	r := &runFiles{start: start, before: map[string]time.Time{}}
	names, _ := filepath.Glob(strings.ReplaceAll(globQuote(out), "%p", "*") + "*")
	for _, n := range names {
		if st, err := os.Stat(n); err == nil {
			r.before[n] = st.ModTime()
		}
	}
	return r
}

// recent lists the files the glob pattern names that the run wrote (modified since its
// start, with a second of slack for coarse file times, and not as they were before it)
// and that keep (if any) accepts.
func (r *runFiles) recent(pattern string, keep func(string) bool) []string {
	cands, _ := filepath.Glob(pattern)
	var names []string
	for _, c := range cands {
		if keep != nil && !keep(c) {
			continue
		}
		st, err := os.Stat(c)
		if err != nil || st.ModTime().Before(r.start.Add(-time.Second)) {
			continue
		}
		if m, ok := r.before[c]; ok && m.Equal(st.ModTime()) {
			continue
		}
		names = append(names, c)
	}
	return names
}

// maxNamed is how many traces a line of record's summary names.
const maxNamed = 20

// someOf joins the first maxNamed names, and says how many more there are (a test suite
// run traced makes a thousand children: libuv's named 1,059 on one line).
func someOf(names []string, sep string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, sep)
	}
	return fmt.Sprintf("%s%s… and %d more", strings.Join(names[:maxNamed], sep), sep, len(names)-maxNamed)
}

// childParts lists the .part files of the program's forked descendants (PATH.<pid>...
// .part), each with why it is there: its process runs on (a daemon outlives the program
// record ran), it is complete but could not take its name (a worker that dropped root),
// or it was not finalised.
func childParts(path string, pid int, files *runFiles) []string {
	own := fmt.Sprintf("%s.%d.part", path, pid)
	var out []string
	for _, p := range files.recent(globQuote(path)+".[0-9]*.part", nil) {
		ids := strings.Split(strings.TrimSuffix(p[len(path)+1:], ".part"), ".")
		child, err := strconv.Atoi(ids[len(ids)-1])
		if p == own || err != nil {
			continue
		}
		why := "not finalised"
		if err := syscall.Kill(child, 0); err == nil || errors.Is(err, syscall.EPERM) {
			why = fmt.Sprintf("still written: process %d is running", child)
		} else if traceComplete(p) {
			why = "complete; it could not take its name"
		}
		out = append(out, p+" ("+why+")")
	}
	return out
}

// traceComplete: is the trace at path finalised (its header says complete)?
func traceComplete(path string) bool {
	st, err := tracefile.OpenStream(path)
	if err != nil {
		return false
	}
	defer st.Close()
	return st.Trace.Header.Flags&tracefile.FlagComplete != 0
}

// globQuote makes s match itself in a glob pattern.
func globQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`).Replace(s)
}
