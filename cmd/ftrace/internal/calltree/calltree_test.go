package calltree_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

// shape renders a thread's trees as name(start-end,self)[children], marking partial
// (~) and unwound (^) frames.
func shape(t *calltree.Thread) string {
	var b strings.Builder
	var walk func(ns []*calltree.Node)
	walk = func(ns []*calltree.Node) {
		for i, n := range ns {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s(%d-%d,%d)", n.Func.Name, n.Start, n.End, n.Self())
			if n.Partial {
				b.WriteString("~")
			}
			if n.Unwound {
				b.WriteString("^")
			}
			if len(n.Children) > 0 {
				b.WriteString("[")
				walk(n.Children)
				b.WriteString("]")
			}
		}
	}
	walk(t.Roots)
	return b.String()
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name      string
		events    string
		want      string
		unmatched int
		unclosed  int
		nodes     int
	}{
		{"nested", tracetest.Sample[strings.Index(tracetest.Sample, "thread 100"):strings.Index(tracetest.Sample, "thread 101")],
			"main(1000-2000,550)[foo(1100-1500,300)[bar(1200-1300,100)] bar(1600-1650,50)]", 0, 0, 4},
		{"recursion", "thread 1\n> 10 fib\n> 20 fib\n> 30 fib\n< 40 fib\n< 50 fib\n< 60 fib\n",
			"fib(10-60,20)[fib(20-50,20)[fib(30-40,10)]]", 0, 0, 3},
		{"exit before any entry", "thread 1\n< 5 outer\n> 10 a\n< 20 a\n",
			"a(10-20,10)", 1, 0, 1},
		{"open at end", "thread 1\n> 10 a\n> 20 b\n< 30 b\n> 40 c\n",
			"a(10-40,20)~[b(20-30,10) c(40-40,0)~]", 0, 2, 3},
		// the runtime's depths (d=): b at a's depth means a (and x) returned unrecorded
		{"lost exits closed by depth", "thread 1\n> 10 main d=0\n> 20 a d=1\n> 30 x d=2\n> 50 b d=1\n< 60 b 50\n< 70 main 10\n",
			"main(10-70,40)[a(20-30,10)~[x(30-30,0)~] b(50-60,10)]", 0, 2, 4},
		{"exit skips frames (longjmp)", "thread 1\n> 10 a\n> 20 b\n> 30 c\n< 50 a\n",
			"a(10-50,10)[b(20-50,10)~[c(30-50,20)~]]", 0, 2, 3},
		{"exit with entry time before the stream", "thread 1\n> 10 a\n< 20 a\n> 30 b\n< 35 b\n< 40 main 5\n> 50 c\n< 60 c\n",
			"main(5-40,20)[a(10-20,10) b(30-35,5)] c(50-60,10)", 1, 0, 4},
		{"entry time pairs recursion", "thread 1\n> 10 f\n> 20 f\n< 30 f 10 unwound\n",
			"f(10-30,10)^[f(20-30,10)~]", 0, 1, 2},
		{"several roots", "thread 1\n> 10 a\n< 20 a\n> 30 b\n< 35 b\n",
			"a(10-20,10) b(30-35,5)", 0, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tracetest.Forest(t, tt.events)
			th := f.Threads[0]
			if got := shape(th); got != tt.want {
				t.Errorf("tree\n got %s\nwant %s", got, tt.want)
			}
			th.Walk(func(n *calltree.Node) bool {
				want := 0
				if n.Parent != nil {
					want = n.Parent.Depth + 1
				}
				if n.Depth != want {
					t.Errorf("%s at %d: depth %d, want %d", n.Func.Name, n.Start, n.Depth, want)
				}
				return true
			})
			if th.Unmatched != tt.unmatched || th.Unclosed != tt.unclosed || th.Nodes != tt.nodes {
				t.Errorf("unmatched %d unclosed %d nodes %d, want %d %d %d", th.Unmatched, th.Unclosed, th.Nodes, tt.unmatched, tt.unclosed, tt.nodes)
			}
		})
	}
}

func TestFunctionCalls(t *testing.T) {
	f := tracetest.Forest(t, "tracer function\nthread 7 t\nc 10 foo main\nc 20 bar foo\nc 30 0x1234\n")
	th := f.Threads[0]
	if len(th.Calls) != 3 || len(th.Roots) != 0 {
		t.Fatalf("%d calls %d roots", len(th.Calls), len(th.Roots))
	}
	got := []string{}
	for _, c := range th.Calls {
		caller := "-"
		if c.Caller != nil {
			caller = c.Caller.Name
		}
		got = append(got, c.Func.Name+"<"+caller)
	}
	if s := strings.Join(got, " "); s != "foo<main bar<foo 0x1234<-" {
		t.Errorf("calls %s", s)
	}
}

func TestStackAndProgress(t *testing.T) {
	n := tracetest.NewNames()
	tr, err := tracetest.Parse(tracetest.Sample, n.Resolve)
	if err != nil {
		t.Fatal(err)
	}
	last := 0
	f := calltree.Build(tr, n.Lookup, func(done, total int) {
		if done < last || total != 14 {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
	})
	if last != 14 {
		t.Errorf("final progress %d, want 14", last)
	}
	var stacks []string
	f.Threads[0].Walk(func(nd *calltree.Node) bool {
		var s []string
		for _, fn := range nd.Stack() {
			s = append(s, fn.Name)
		}
		stacks = append(stacks, strings.Join(s, ">"))
		return true
	})
	if got := strings.Join(stacks, " "); got != "main main>foo main>foo>bar main>bar" {
		t.Errorf("stacks %s", got)
	}
	if f.Start != 1000 {
		t.Errorf("start %d", f.Start)
	}
}

// FuzzBuild: any trace file the reader accepts builds a forest (no panic, whatever the
// records say: times out of order, exits without entries, any depths) in which every node
// it counted is reachable from the roots.
func FuzzBuild(f *testing.F) {
	for _, src := range []string{tracetest.Sample,
		"thread 1\n> 10 main d=0\n> 20 a d=1\n> 30 x d=2\n> 50 b d=1\n< 60 b 50\n< 70 main 10\n"} {
		tr, err := tracetest.Parse(src, tracetest.NewNames().Resolve)
		if err != nil {
			f.Fatal(err)
		}
		var b bytes.Buffer
		if err := tracefile.Write(&b, tr); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := tracefile.Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		forest := calltree.Build(tr, func(addr uint64) *symbolize.Func { return &symbolize.Func{Name: "f", Addr: addr} }, nil)
		for _, th := range forest.Threads {
			n := 0
			th.Walk(func(*calltree.Node) bool { n++; return true })
			if n != th.Nodes {
				t.Fatalf("thread %d: %d nodes reachable, %d built", th.TID, n, th.Nodes)
			}
		}
	})
}
