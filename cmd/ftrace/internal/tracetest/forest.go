package tracetest

import (
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
)

// Forest parses text with made-up addresses and builds its call trees.
func Forest(t testing.TB, text string) *calltree.Forest {
	t.Helper()
	n := NewNames()
	tr, err := Parse(text, n.Resolve)
	if err != nil {
		t.Fatal(err)
	}
	return calltree.Build(tr, n.Lookup, nil)
}

// Sample is a two-thread graph trace used by the generators' tests:
// thread 100 main → foo → bar, then main → bar; thread 101 work → fib → fib.
const Sample = `
tracer function_graph
pid 42
cmd ./prog x
start 1000
thread 100 main
> 1000 main
> 1100 foo
> 1200 bar
< 1300 bar
< 1500 foo
> 1600 bar
< 1650 bar
< 2000 main
thread 101 worker
> 1200 work
> 1300 fib
> 1310 fib
< 1330 fib
< 1400 fib
< 1900 work
`
