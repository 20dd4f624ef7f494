package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// The summary's lost fraction is of the events the file's tables count: record reads no
// event back (a trial showed "(100.0%)" for every trace with losses).
func TestSummaryLine(t *testing.T) {
	tr := &tracefile.Trace{Header: tracefile.Header{Version: tracefile.Version2}, Threads: []*tracefile.Thread{
		{TID: 1, Lost: 10863425}, {TID: 2},
	}}
	ring := &tracefile.Trace{Header: tracefile.Header{Version: tracefile.Version2, Ring: true}, Threads: tr.Threads}
	for _, c := range []struct {
		tr                *tracefile.Trace
		events, lostDepth uint64
		noLoss            bool
		want              string
	}{
		// the jq trial's function tracer dropped 14 % at start-up, and the line said nothing of --no-loss
		{tr, 44135243, 0, false, "ftrace: t.dat: 2 threads, 44135243 events, 10863425 lost (19.8%; record with --no-loss to keep every event) (1.50s)"},
		{tr, 44135243, 0, true, "ftrace: t.dat: 2 threads, 44135243 events, 10863425 lost (19.8%) (1.50s)"},
		{ring, 44135243, 0, false, "ftrace: t.dat: 2 threads, 44135243 events, 10863425 lost (19.8%) (1.50s)"},
		{&tracefile.Trace{Threads: []*tracefile.Thread{{TID: 1}}}, 7, 3, false, "ftrace: t.dat: 1 thread, 7 events, 3 calls not graphed (1.50s)"},
	} {
		if got := summaryLine("t.dat", c.tr, c.events, c.lostDepth, 1500*time.Millisecond, c.noLoss); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// A summary line names at most maxNamed traces and counts the rest (libuv's suite, traced,
// named 1,059 children on one line).
func TestSomeOf(t *testing.T) {
	var names []string
	for i := 0; i < maxNamed+5; i++ {
		names = append(names, fmt.Sprintf("t.dat.%d", i))
	}
	for _, tt := range []struct {
		n    int
		want string
	}{
		{2, "t.dat.0 t.dat.1"},
		{maxNamed, strings.Join(names[:maxNamed], " ")},
		{maxNamed + 5, strings.Join(names[:maxNamed], " ") + " … and 5 more"},
	} {
		if got := someOf(names[:tt.n], " "); got != tt.want {
			t.Errorf("someOf(%d names) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// The run's other traces are summed up too, from their tables: a server's workers do the
// work and lose the events (the nginx trial: record spoke of the master's 8.7k events
// alone while a worker lost 3,221).
func TestOthersSummary(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		tr, err := tracetest.Parse(text, tracetest.NewNames().Resolve)
		if err != nil {
			t.Fatal(err)
		}
		tr.Header.Flags |= tracefile.FlagComplete
		if err := tracetest.WriteFile(p, tr, "v2", 64); err != nil {
			t.Fatal(err)
		}
		return p
	}
	calm := write("t.dat.11", "tracer function_graph\npid 11\nthread 11 w\n> 10 main\n< 20 main\n")
	lossy := write("t.dat.12", "tracer function_graph\npid 12\nthread 12 w\nlost 2\n> 10 main\n> 11 f\n< 12 f\n< 20 main\nthread 13 pool\n> 30 g\n< 40 g\n")
	got := othersSummary([]string{calm, lossy}, false)
	want := fmt.Sprintf("ftrace: the other 2 traces: 3 threads, 8 events, 2 lost (20.0%%; record with --no-loss to keep every event) in %s (2)", lossy)
	if len(got) != 1 || got[0] != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := othersSummary([]string{calm}, true); len(got) != 1 || got[0] != "ftrace: the other trace: 1 thread, 2 events" {
		t.Errorf("one calm trace: %q", got)
	}
}

// record names the snapshots the run wrote next to its traces (the lighttpd trial: 15
// .snap.N files, not a word about them), not those an earlier run left, nor other files.
func TestSnapshotsOf(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.dat")
	touch := func(names ...string) {
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	touch("x.dat.snap.1") // an earlier run's
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(dir, "x.dat.snap.1"), old, old)
	files := filesBefore(out, time.Now())
	touch("x.dat", "x.dat.snap.2", "x.dat.snap.10", "x.dat.77", "x.dat.77.snap.1", "x.dat.snapshot", "x.dat.part")
	got := snapshotsOf([]string{out, filepath.Join(dir, "x.dat.77")}, files)
	var base []string
	for _, g := range got {
		base = append(base, filepath.Base(g))
	}
	sort.Strings(base)
	if want := []string{"x.dat.77.snap.1", "x.dat.snap.10", "x.dat.snap.2"}; !slices.Equal(base, want) {
		t.Errorf("snapshots %v, want %v", base, want)
	}
}
