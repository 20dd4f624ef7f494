package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/internal/testenv"
)

const diffSrc = `#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long spin(long n) { volatile long s = 0; for (long i = 0; i < n; i++) s += i; return s; }
__attribute__((noinline)) long step(long n) { return spin(n); }
__attribute__((noinline)) long setup(void) { return spin(1000); }
int main(int argc, char **argv) {
	long steps = atol(argv[1]), work = atol(argv[2]), s = setup();
	for (long i = 0; i < steps; i++)
		s += step(work);
	printf("%ld\n", s > 0);
	return 0;
}
`

// diffRuns records diffprog 3 1000 and diffprog 7 newSpin with tracer and returns
// `report --diff` of the two.
func diffRuns(t *testing.T, tracer, newSpin string) string {
	t.Helper()
	dir := t.TempDir()
	prog := buildTraced(t, dir, "diffprog", diffSrc)
	ftrace := testenv.Tool(t, "ftrace")
	testenv.Run(t, dir, ftrace, "record", "-q", "-t", tracer, "-o", "old.dat", "--", prog, "3", "1000")
	testenv.Run(t, dir, ftrace, "record", "-q", "-t", tracer, "-o", "new.dat", "--", prog, "7", newSpin)
	return testenv.Run(t, dir, ftrace, "report", "--diff", "old.dat", "new.dat")
}

// TestE2EReportDiff records one program twice, the second run with more and longer
// steps, and checks that report --diff shows the calls each run made and puts the
// function whose time grew most (spin, under step) first.
func TestE2EReportDiff(t *testing.T) {
	if testenv.BuildDir() == "" {
		t.Skip("FTKIT_BUILD not set")
	}
	out := diffRuns(t, "function_graph", "200000")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 5 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "CALLS OLD") {
		t.Fatalf("report --diff:\n%s", out)
	}
	// calls: old, new, delta; then the total's old, new, delta, % ... function
	row := regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+([+-]\d+)\s+.*\s{2}(\w+)( \[.*\])?$`)
	calls := map[string]string{}
	var order []string
	for _, l := range lines[1:] {
		m := row.FindStringSubmatch(l)
		if m == nil || !strings.Contains(" main setup step spin ", " "+m[4]+" ") {
			continue // the runtime's own functions (a buffer flush) may show too
		}
		calls[m[4]] = m[1] + " " + m[2] + " " + m[3]
		order = append(order, m[4])
	}
	want := map[string]string{"main": "1 1 +0", "setup": "1 1 +0", "step": "3 7 +4", "spin": "4 8 +4"}
	for fn, w := range want {
		if calls[fn] != w {
			t.Errorf("%s: calls %q, want %q\n%s", fn, calls[fn], w, out)
		}
	}
	// spin's total grows by ~1.4M loop iterations, main's by the same plus a little,
	// step's by the same minus setup's spin: main, spin and step lead, setup is last.
	if len(order) != 4 || order[3] != "setup" {
		t.Errorf("order %v, want setup (unchanged work) last\n%s", order, out)
	}
	if !regexp.MustCompile(`(?m)^\s*4\s+8\s+\+4\s+.*\s\+\d+(\.\d)?%\s.*\+\d+(\.\d)?%\s+spin`).MatchString(out) {
		t.Errorf("spin's row lacks positive total and self changes:\n%s", out)
	}
}

// Function (untimed) traces: rows go by the change in calls unless --sort says otherwise
// (they went by total, 0 on both sides: the changed rows could come last; GNU patch trial).
func TestE2EReportDiffFunction(t *testing.T) {
	if testenv.BuildDir() == "" {
		t.Skip("FTKIT_BUILD not set")
	}
	out := diffRuns(t, "function", "1000")
	row := regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+([+-]\d+)\s+.*?(\w+)( \[.*\])?$`)
	var deltas []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if m := row.FindStringSubmatch(l); m != nil && strings.Contains(" main setup step spin ", " "+m[4]+" ") {
			deltas = append(deltas, m[3])
		}
	}
	// step and spin (+4) before main and setup (+0)
	if fmt.Sprint(deltas) != "[+4 +4 +0 +0]" {
		t.Errorf("call changes in row order %v, want the +4 rows first:\n%s", deltas, out)
	}
}

// TestReportManyTracesMemory: reading many traces together (a test suite's processes)
// keeps one row per function, not each trace's tables until the last is read: the
// memory of `report`, `graph`, `info`, `dump --chrome`, `pprof` and `flame` over 1,200
// traces stays within a few MB of that over 200, with fewer descriptors than traces. (Each
// trace's walker was kept with its thread, 100–300 KB a trace; `dump --chrome` held every
// trace open; `pprof` and `flame` kept every thread's call paths, 110–130 KB a trace here.)
func TestReportManyTracesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1,400 traces")
	}
	// one thread calling 300 functions, each twice
	var evs []tracefile.Event
	ts := uint64(2000)
	for k := 0; k < 2; k++ {
		for f := 0; f < 300; f++ {
			ip := 0x555555554000 + uint64(f)*0x40
			evs = append(evs, tracefile.Event{Kind: tracefile.Entry, TS: ts, IP: ip, Parent: ip + 0x13},
				tracefile.Event{Kind: tracefile.Exit, TS: ts + 7, IP: ip})
			ts += 10
		}
	}
	var buf bytes.Buffer
	tr := &tracefile.Trace{Header: tracefile.Header{Tracer: tracefile.TracerFunctionGraph,
		Flags: tracefile.FlagComplete, PID: 4242, Command: []string{"many"}, StartNS: 1000, EndNS: ts},
		Threads: []*tracefile.Thread{{TID: 4242, Name: "many", Events: evs, Flags: tracefile.ThreadExited}}}
	if err := tracefile.WriteV2(&buf, tr, tracefile.WriteOptions{BlockEvents: 10000}); err != nil {
		t.Fatal(err)
	}
	ftrace := testenv.Tool(t, "ftrace")
	rss := func(n int, cmd string) int64 {
		dir := t.TempDir()
		var files []string
		for i := 0; i < n; i++ {
			f := filepath.Join(dir, fmt.Sprintf("t%d.dat", i))
			if err := os.WriteFile(f, buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		// with fewer descriptors than traces: each is open only while it is read
		var out bytes.Buffer
		c := exec.Command(ftrace, append(strings.Fields(cmd), files...)...)
		c.Dir, c.Stdout, c.Stderr = dir, &out, &out
		kib, err := testenv.PeakRSS(t, c, 128)
		if err != nil {
			t.Fatalf("ftrace %s of %d traces: %v\n%.500s", cmd, n, err, out.Bytes())
		}
		return kib
	}
	for _, cmd := range []string{"report", "graph", "info", "dump --chrome -o out.json", "pprof -o p.pb.gz", "flame -o f.svg"} {
		few, many := rss(200, cmd), rss(1200, cmd)
		t.Logf("%s: max RSS %d KiB for 200 traces, %d KiB for 1,200", cmd, few, many)
		if many-few > 12<<10 {
			t.Errorf("%s: 1,000 more traces took %d KiB more (%d B a trace)", cmd, many-few, (many-few)*1024/1000)
		}
	}
}
