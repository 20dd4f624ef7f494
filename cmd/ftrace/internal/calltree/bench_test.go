package calltree_test

import (
	"bytes"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// fibTrace returns a graph trace of fib(n) on each of threads threads.
func fibTrace(n, threads int, names *tracetest.Names) *tracefile.Trace {
	ip, _ := names.Resolve("fib")
	tr := &tracefile.Trace{Header: tracefile.Header{Tracer: tracefile.TracerFunctionGraph, Flags: tracefile.FlagComplete}}
	for t := 0; t < threads; t++ {
		th := &tracefile.Thread{TID: 100 + t}
		var ts uint64
		var rec func(k int)
		rec = func(k int) {
			ts += 10
			th.Events = append(th.Events, tracefile.Event{Kind: tracefile.Entry, TS: ts, IP: ip, Depth: -1})
			if k >= 2 {
				rec(k - 1)
				rec(k - 2)
			}
			ts += 10
			th.Events = append(th.Events, tracefile.Event{Kind: tracefile.Exit, TS: ts, IP: ip, Depth: -1})
		}
		rec(n)
		tr.Threads = append(tr.Threads, th)
	}
	return tr
}

// BenchmarkReadBuild decodes and builds the call trees of a 4-thread fib(25) trace
// (~1.9M events); b.N traces.
func BenchmarkReadBuild(b *testing.B) {
	names := tracetest.NewNames()
	var buf bytes.Buffer
	if err := tracefile.Write(&buf, fibTrace(25, 4, names)); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr, err := tracefile.Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		f := calltree.Build(tr, names.Lookup, nil)
		if f.Threads[0].Nodes != 242785 {
			b.Fatalf("%d nodes", f.Threads[0].Nodes)
		}
	}
}
