package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

func TestThreads(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample)
	for _, tt := range []struct {
		tids []int
		want string // tid name calls funcs traced top/self
	}{
		// thread 100: main 1000 (self 1000-400-50), foo 400 (self 300), bar 100+50
		// thread 101: work 700 (self 600), fib 100 (self 80+20)
		{nil, "100 main 4 3 1000 main/550; 101 worker 3 2 700 work/600"},
		{[]int{101}, "101 worker 3 2 700 work/600"},
	} {
		var got []string
		for _, s := range Threads(f, tt.tids) {
			got = append(got, fmt.Sprintf("%d %s %d %d %d %s/%d", s.TID, s.Name, s.Calls, s.Funcs, s.Traced, s.Top, s.TopSelf))
		}
		if g := strings.Join(got, "; "); g != tt.want {
			t.Errorf("tids %v:\n got %s\nwant %s", tt.tids, g, tt.want)
		}
	}
	var b bytes.Buffer
	if err := WriteThreadsText(&b, f, Threads(f, nil), 0); err != nil {
		t.Fatal(err)
	}
	want := "  TID  CALLS  FUNCS   TRACED     TOP SELF  LOST  THREAD\n" +
		"  100      4      3  1000 ns  main 550 ns     0  main\n" +
		"  101      3      2   700 ns  work 600 ns     0  worker\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestCallers(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample)
	fn := tracetest.Forest(t, "tracer function\nthread 1 t\nc 100 work main\nc 200 work main\nc 300 fib work\nc 400 work\n")
	edges := func(es []*Edge) string {
		var s []string
		for _, e := range es {
			s = append(s, fmt.Sprintf("%s:%d/%d", e.Name, e.Calls, e.Total))
		}
		return strings.Join(s, " ")
	}
	for _, tt := range []struct {
		name string
		fn   string
		tids []int
		want string // calls/total/self callers | callees
	}{
		{"leaf, two callers", "bar", nil, "2/150/150 foo:1/100 main:1/50 | "},
		{"middle", "foo", nil, "1/400/300 main:1/400 | bar:1/100"},
		// the recursive call counts once in fib's total and in the fib→fib edge
		{"recursion", "fib", nil, "2/100/100 work:1/100 fib:1/0 | fib:1/20"},
		{"root", "main", nil, "1/1000/550 (root):1/1000 | foo:1/400 bar:1/50"},
		{"other thread only", "bar", []int{101}, "error"},
		{"function trace", "work", nil, "3/0/0 main:2/0 (root):1/0 | fib:1/0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := f
			if strings.HasPrefix(tt.name, "function") {
				src = fn
			}
			r, err := Callers(src, tt.fn, nil, tt.tids)
			got := "error"
			if err == nil {
				got = fmt.Sprintf("%d/%d/%d %s | %s", r.Calls, r.Total, r.Self, edges(r.Callers), edges(r.Callees))
			} else if !strings.Contains(err.Error(), `no calls of "`+tt.fn+`"`) {
				t.Errorf("error %v", err)
			}
			if got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	r, _ := Callers(f, "foo", nil, nil)
	var b bytes.Buffer
	if err := WriteCallersText(&b, r, 0); err != nil {
		t.Fatal(err)
	}
	want := "  CALLS   TOTAL  CALLERS / FUNCTION / CALLEES\n" +
		"      1  400 ns    <- main\n" +
		"      1  400 ns  foo (self 300 ns)\n" +
		"      1  100 ns    -> bar\n"
	if b.String() != want {
		t.Errorf("text:\n%q\nwant:\n%q", b.String(), want)
	}
	// --limit 1: main's biggest callee, and a line for the one left out
	r, _ = Callers(f, "main", nil, nil)
	b.Reset()
	if err := WriteCallersText(&b, r, 1); err != nil {
		t.Fatal(err)
	}
	want = "  CALLS    TOTAL  CALLERS / FUNCTION / CALLEES\n" +
		"      1  1000 ns    <- (root)\n" +
		"      1  1000 ns  main (self 550 ns)\n" +
		"      1   400 ns    -> foo\n" +
		"                    ... 1 more callees\n"
	if b.String() != want {
		t.Errorf("limit 1:\n%q\nwant:\n%q", b.String(), want)
	}
}
