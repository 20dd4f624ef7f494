package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

func TestMerge(t *testing.T) {
	// two processes of one run: work and foo in both, fib in the first only
	a := "thread 1\n> 0 work\n> 100 foo\n< 500 foo\n> 500 fib\n< 600 fib\n> 600 fib\n< 650 fib\n< 700 work\n"
	b := "thread 2\n> 0 work\n> 100 foo\n< 1100 foo\n< 1200 work\n"
	stats := func(tr string, o Options) []*Stat {
		s, err := Compute(tracetest.Forest(t, tr), o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rows := func(ss []*Stat) string {
		var out []string
		for _, s := range ss {
			out = append(out, fmt.Sprintf("%d:%s:%d/%d/%d/%d/%d", s.TID, s.Name, s.Calls, s.Total, s.Avg, s.Min, s.Max))
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		o    Options
		want string // tid:name:calls/total/avg/min/max
	}{
		{Options{}, "0:work:2/1900/950/700/1200 0:foo:2/1400/700/400/1000 0:fib:2/150/75/50/100"},
		{Options{Sort: "max", Limit: 1}, "0:work:2/1900/950/700/1200"},
		{Options{PerThread: true}, "2:work:1/1200/1200/1200/1200 2:foo:1/1000/1000/1000/1000 " +
			"1:work:1/700/700/700/700 1:foo:1/400/400/400/400 1:fib:2/150/75/50/100"},
	} {
		o := tt.o
		o.Limit = 0
		got, err := Merge([][]*Stat{stats(a, o), stats(b, o)}, tt.o)
		if err != nil {
			t.Fatal(err)
		}
		if g := rows(got); g != tt.want {
			t.Errorf("%+v:\n got %s\nwant %s", tt.o, g, tt.want)
		}
	}
	// a static function of one name in two files stays two rows; the same file in
	// another process's path is one
	one := []*Stat{{Name: "helper", File: "/a/x.c", Calls: 1}, {Name: "helper", File: "/a/y.c", Calls: 2}}
	two := []*Stat{{Name: "helper", File: "/b/x.c", Calls: 5}}
	got, err := Merge([][]*Stat{one, two}, Options{Sort: "calls"})
	if err != nil || len(got) != 2 || got[0].Calls != 6 || got[1].Calls != 2 {
		t.Errorf("static functions: %s %v", rows(got), err)
	}
	if _, err := Merge(nil, Options{Sort: "nope"}); err == nil {
		t.Error("an unknown sort key was taken")
	}
}
