package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
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

// Functions shown alike — one name, object and source line: a template's per-object
// copies ([clone .isra.0]) — are one row of a report and of a diff, their figures added
// up (the ninja trial: 26 identical rows in report, and --diff kept the last one alone).
func TestSameNameFunctionsAddUp(t *testing.T) {
	fn := func() *symbolize.Func {
		return &symbolize.Func{Name: "f [clone .isra.0]", Module: "/bin/p", File: "/s/x.h", Line: 3}
	}
	other := &symbolize.Func{Name: "f [clone .isra.0]", Module: "/bin/p", File: "/s/y.h", Line: 3}
	a := newAgg(1)
	for i, f := range []*symbolize.Func{fn(), fn(), other} {
		s := a.get(f)
		s.Calls, s.Total, s.Self, s.sum, s.timed, s.whole = uint64(i+1), 100, 100, 100, uint64(i+1), uint64(i+1)
		s.Min, s.Max = 10*uint64(i+1), 50
	}
	for _, perThread := range []bool{false, true} {
		less, _ := lessFunc("calls")
		got := finish([]*agg{a}, Options{PerThread: perThread}, less)
		if len(got) != 2 || got[0].Calls != 3 || got[0].Total != 200 || got[0].Min != 10 || got[0].File != "/s/x.h" ||
			got[1].Calls != 3 || got[1].File != "/s/y.h" {
			t.Errorf("per thread %v: %d rows: %+v", perThread, len(got), got)
		}
	}
	old := []*Stat{{Name: "g", File: "/a/x.c", Calls: 2, Total: 20}, {Name: "g", File: "/a/x.c", Calls: 3, Total: 30}}
	rows, err := Diff(old, old[:1], "calls", 0)
	if err != nil || len(rows) != 1 || rows[0].Old.Calls != 5 || rows[0].Old.Total != 50 || rows[0].New.Calls != 2 || old[0].Calls != 2 {
		t.Errorf("diff: %+v %v (the input changed: %v)", rows, err, old[0].Calls != 2)
	}
}

// Merge adds up lists as a reader of several traces does (Merger).
func Merge(lists [][]*Stat, o Options) ([]*Stat, error) {
	m := NewMerger(o.PerThread)
	for _, stats := range lists {
		m.Add(stats)
	}
	return m.Stats(o)
}
