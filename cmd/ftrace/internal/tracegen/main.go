// Command tracegen writes a synthetic function_graph trace (format version 2) of a given
// number of events, for the reader benchmarks in bench/: a deterministic pseudo-program
// of a few hundred functions calling each other to varying depths, on several threads.
// With -processes N, N such traces of one run (pids 4242, 4243, ...: OUT, OUT.4243, ...).
//
//	go run ./cmd/ftrace/internal/tracegen -events 100000000 -threads 4 -o big.dat
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"os"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
)

func main() {
	events := flag.Int("events", 1_000_000, "events in all (about)")
	threads := flag.Int("threads", 4, "threads (they share one event sequence)")
	funcs := flag.Int("funcs", 300, "distinct functions")
	processes := flag.Int("processes", 1, "traces of one run, each of -events")
	out := flag.String("o", "synthetic.dat", "output file (the first process's)")
	flag.Parse()
	if *events <= 0 || *threads <= 0 || *funcs <= 0 || *processes <= 0 {
		fmt.Fprintln(os.Stderr, "tracegen: -events, -threads, -funcs and -processes must be positive")
		os.Exit(2)
	}
	evs := program(*events / *threads, *funcs)
	for p := 0; p < *processes; p++ {
		name := *out
		if p > 0 {
			name = fmt.Sprintf("%s.%d", *out, 4242+p)
		}
		if err := write(evs, 4242+p, *threads, name); err != nil {
			fmt.Fprintln(os.Stderr, "tracegen:", err)
			os.Exit(1)
		}
	}
}

// write writes the trace of process pid, whose threads each make the events evs.
func write(evs []tracefile.Event, pid, threads int, out string) error {
	tr := &tracefile.Trace{Header: tracefile.Header{
		Tracer: tracefile.TracerFunctionGraph, Flags: tracefile.FlagComplete, PID: pid,
		Command: []string{"synthetic"}, StartNS: 1000, EndNS: evs[len(evs)-1].TS + 1,
	}}
	for t := 0; t < threads; t++ {
		// tids apart from the other processes'
		tid := pid*64 + t
		tr.Threads = append(tr.Threads, &tracefile.Thread{TID: tid, Name: fmt.Sprintf("worker-%d", t), Events: evs, Flags: tracefile.ThreadExited})
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := tracefile.WriteV2(w, tr, tracefile.WriteOptions{BlockEvents: 10000}); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", out, err)
	}
	return f.Close()
}

// program returns about n events of a pseudo-program: each function calls up to three
// others of higher index, so the calls form a DAG that is walked to depth ≤ 24, with a few
// recursive functions.
func program(n, funcs int) []tracefile.Event {
	rng := rand.New(rand.NewSource(1))
	const base = 0x555555554000
	callees := make([][]int, funcs)
	for f := range callees {
		for k := rng.Intn(4); k > 0 && f+1 < funcs; k-- {
			callees[f] = append(callees[f], f+1+rng.Intn(min(funcs-f-1, 40)))
		}
	}
	evs := make([]tracefile.Event, 0, n+64)
	ts := uint64(2000)
	var call func(f, depth int)
	call = func(f, depth int) {
		ip := base + uint64(f)*0x40
		ts += uint64(5 + rng.Intn(20))
		evs = append(evs, tracefile.Event{Kind: tracefile.Entry, TS: ts, IP: ip, Depth: int32(depth), Parent: ip + 0x13})
		if depth < 24 && len(evs) < n {
			for _, c := range callees[f] {
				call(c, depth+1)
			}
			if f%17 == 0 && depth < 20 && rng.Intn(3) == 0 {
				call(f, depth+1) // recursion
			}
		}
		ts += uint64(5 + rng.Intn(20))
		evs = append(evs, tracefile.Event{Kind: tracefile.Exit, TS: ts, IP: ip, Depth: int32(depth)})
	}
	for len(evs) < n {
		call(rng.Intn(min(funcs, 20)), 0)
	}
	return evs
}
