package filter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{
		{"main", "main", true},
		{"main", "main2", false},
		{"ma*", "main", true},
		{"*in", "main", true},
		{"*", "", true},
		{"*a*b*", "xaxxbx", true},
		{"*a*b", "xaxxbx", false},
		{"m?in", "main", true},
		{"m?in", "min", false},
		{"f[0-3]", "f2", true},
		{"f[0-3]", "f4", false},
		{"f[!0-3]", "f4", true},
		{"f[^0-3]", "f2", false},
		{"f[]x]", "f]", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"ns::*", "ns::f(int)", true}, // '*' crosses ':' and '('
		{"lib/*", "lib/x/y", true},    // and '/', as fnmatch without flags
		{"é?", "éü", true},            // characters, not bytes
		{"**x", "abx", true},
		// a [ that no ] closes is a [ itself, as fnmatch takes it (C++ operator[])
		{"f[", "f[", true},
		{"f[a-", "f[a-", true},
		{"f[!]", "f[!]", true},
		{"*operator[]*", "a::operator[](int)", true},
		{"*operator[]*", "a::operator()(int)", false},
		{"m<int>::operator[](int&&)", "m<int>::operator[](int&&)", true},
	} {
		g, err := Compile(tc.pat)
		if err != nil {
			t.Fatalf("%q: %v", tc.pat, err)
		}
		if got := g.Match(tc.name); got != tc.want {
			t.Errorf("%q matching %q: %v, want %v", tc.pat, tc.name, got, tc.want)
		}
	}
}

func TestGlobErrors(t *testing.T) {
	for _, pat := range []string{"", `f\`, "f[z-a]", "f[z-a"} {
		if _, err := Compile(pat); err == nil {
			t.Errorf("%q compiled", pat)
		}
	}
}

func TestMatchFunc(t *testing.T) {
	box := &symbolize.Func{Name: "ns::Box<int>::put(int, char const*) const", Raw: "_ZNK2ns3BoxIiE3putEiPKc"}
	tmpl := &symbolize.Func{Name: "bool XMLTest<double>(char const*, double) [clone .isra.0]", Raw: "_Z7XMLTestIdEbPKcd.isra.0"}
	clone := &symbolize.Func{Name: "ltputs.constprop.0", Raw: "ltputs.constprop.0"}
	op := &symbolize.Func{Name: "bool ns::operator< <int>(ns::Box<int> const&, ns::Box<int> const&)"}
	coop := &symbolize.Func{Name: "int cooperator<int, long>::run(int)"}
	opt := &symbolize.Func{Name: "ns::V ns::operator+<long, int>(ns::V, int)"}
	shl := &symbolize.Func{Name: "std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> >&, char const*)"}
	abi := &symbolize.Func{Name: "fmt::v9::vformat[abi:cxx11](fmt::v9::basic_string_view<char>)"}
	dtor := &symbolize.Func{Name: "testing::TestFactoryImpl::~TestFactoryImpl() [deleting]"}
	for _, tc := range []struct {
		fn   *symbolize.Func
		pat  string
		want bool
	}{
		{box, "ns::Box<int>::put", true}, // without its parameters
		// a name pasted from a report: its brackets are no classes, its tags may go
		{abi, "fmt::v9::vformat[abi:cxx11](fmt::v9::basic_string_view<char>)", true},
		{abi, "fmt::v9::vformat\\[abi:cxx11\\]*", true},
		{abi, "fmt::v9::vformat[abi:cxx11]", true},
		{abi, "fmt::v9::vformat", true}, // without its ABI tag too
		{abi, "fmt::v9::vformat*", true},
		{abi, "fmt::v9::vforma", false},
		{dtor, "testing::TestFactoryImpl::~TestFactoryImpl() [deleting]", true},
		{dtor, "testing::TestFactoryImpl::~TestFactoryImpl()", true},
		{dtor, "testing::TestFactoryImpl::~TestFactoryImpl", true},
		{box, "_ZNK2ns3Box*", true}, // the symbol
		{box, "*put(int, char const*) const", true},
		{box, "put", false},
		{box, "ns::Box<int>::put(int)", false},
		// a template instance without its return type, as the runtime matches
		{tmpl, "XMLTest<double>*", true},
		{tmpl, "XMLTest<double>", true},
		{tmpl, "bool XMLTest<double>*", true},
		{tmpl, "XMLTest*", true},
		{tmpl, "XMLTest", false},
		{tmpl, "_Z7XMLTestIdEbPKcd", true},
		// clones: a name without wildcards matches the compiler's copies of it
		{tmpl, "XMLTest<double>(char const*, double)", true},
		{tmpl, "XMLTest<double>(int)", false},
		{clone, "ltputs", true},
		{clone, "ltput", false},
		{clone, "ltputs.constprop.1", false},
		{clone, "ltpu?s", true},
		{clone, "ltputs.c*", true},
		{op, "ns::operator< <int>", true},
		{coop, "cooperator<int, long>::run", true}, // "operator" inside a name is no operator
		{coop, "long>::run*", false},
		{op, "ns::operator<*", true},
		// an operator template's arguments are brackets, its comma no separator (the
		// leveldb trial: "operator+<" was taken for the operator, and "int>" matched)
		{opt, "ns::operator+<*", true},
		{opt, "ns::operator+<long, int>", true},
		{opt, "ns::operator+<long, int>(ns::V, int)", true},
		{opt, "int>", false},
		{opt, "int>*", false},
		{shl, "std::operator<< <std::char_traits<char> >", true},
		{shl, "std::operator<<*", true},
	} {
		g, err := Compile(tc.pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.MatchFunc(tc.fn); got != tc.want {
			t.Errorf("%q on %q: %v, want %v", tc.pat, tc.fn.Name, got, tc.want)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Filter: []string{`f\`}}, "--filter"},
		{Options{Notrace: []string{""}}, "--notrace"},
		{Options{Hide: []string{"[z-a]"}}, "--hide"},
		{Options{Callers: []string{`x\`}}, "--caller-filter"},
		{Options{Depth: -1}, "--depth"},
		{Options{MinDur: -time.Microsecond}, "--time-filter"},
		{Options{Since: -1}, "--since"},
		{Options{Until: -1}, "--until"},
		{Options{Since: time.Second, Until: time.Second}, "after --since"},
		{Options{Since: 2 * time.Second, Until: time.Second}, "after --since"},
		{Options{TIDs: []int{0}}, "--tid"},
	} {
		_, err := New(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %s", tc.o, err, tc.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want time.Duration
		bad  bool
	}{
		{"10us", 10 * time.Microsecond, false},
		{"10µs", 10 * time.Microsecond, false},
		{"1.5ms", 1500 * time.Microsecond, false},
		{"200ms", 200 * time.Millisecond, false},
		{"0", 0, false},
		{"10", 0, true}, // a unit is needed
		{"abc", 0, true},
		{"-5us", 0, true},
	} {
		got, err := ParseDuration(tc.s)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%q: %v, %v; want %v (error: %v)", tc.s, got, err, tc.want, tc.bad)
		}
	}
}

func TestActive(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want bool
	}{
		{Options{}, false},
		{Options{TIDs: []int{5}}, false}, // threads are selected by the walk
		{Options{Filter: []string{"x"}}, true},
		{Options{Notrace: []string{"x"}}, true},
		{Options{Depth: 1}, true},
		{Options{MinDur: 1}, true},
		{Options{Since: 1}, true},
		{Options{Until: 1}, true},
	} {
		f, err := New(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if f.Active() != tc.want {
			t.Errorf("%+v: active %v", tc.o, f.Active())
		}
	}
}

// sample: main calls a (which calls b, then c), then b, then c; times are ns from the
// start (0).
const sample = `
start 0
thread 1 t
> 0 main
> 10 a
> 20 b
< 30 b
> 40 c
< 90 c
< 100 a
> 110 b
> 120 c
< 125 c
< 200 b
> 300 c
< 301 c
< 400 main
c 50 x a
c 150 y b
`

// render prints a filtered thread: one line per call, indented, with duration and self
// time, then the function-tracer calls.
func render(t *calltree.Thread) string {
	var b strings.Builder
	var walk func(ns []*calltree.Node, ind string)
	walk = func(ns []*calltree.Node, ind string) {
		for _, n := range ns {
			fmt.Fprintf(&b, "%s%s %d/%d\n", ind, n.Func.Name, n.Duration(), n.Self())
			walk(n.Children, ind+"  ")
		}
	}
	walk(t.Roots, "")
	for _, c := range t.Calls {
		fmt.Fprintf(&b, "call %s<-%s\n", c.Func.Name, c.Caller.Name)
	}
	return b.String()
}

func TestFilterTrees(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"none", Options{}, "main 400/219\n  a 90/30\n    b 10/10\n    c 50/50\n  b 90/85\n    c 5/5\n  c 1/1\ncall x<-a\ncall y<-b\n"},
		// -F: the subtrees of b, wherever it is called (depth counts from them)
		{"F", Options{Filter: []string{"b"}}, "b 10/10\nb 90/85\n  c 5/5\ncall y<-b\n"},
		{"F-D", Options{Filter: []string{"b"}, Depth: 1}, "b 10/10\nb 90/90\ncall y<-b\n"},
		{"F-nested", Options{Filter: []string{"a", "c"}}, "a 90/30\n  b 10/10\n  c 50/50\nc 5/5\nc 1/1\ncall x<-a\n"},
		// -N: b and what it calls are gone; their time is their caller's self time
		{"N", Options{Notrace: []string{"b"}}, "main 400/309\n  a 90/40\n    c 50/50\n  c 1/1\ncall x<-a\n"},
		{"N-wins", Options{Filter: []string{"c"}, Notrace: []string{"b"}}, "c 50/50\nc 1/1\n"},
		{"D", Options{Depth: 2}, "main 400/219\n  a 90/90\n  b 90/90\n  c 1/1\ncall x<-a\ncall y<-b\n"},
		// -H: b alone is gone, what it calls hangs from its caller; its own time is its
		// caller's self time; a function-tracer call is dropped by its function only
		{"H", Options{Hide: []string{"b"}}, "main 400/304\n  a 90/40\n    c 50/50\n  c 5/5\n  c 1/1\ncall x<-a\ncall y<-b\n"},
		{"H-D", Options{Hide: []string{"main"}, Depth: 1}, "a 90/90\nb 90/90\nc 1/1\ncall x<-a\ncall y<-b\n"},
		// -C: the calls of c as leaves, and the calls that lead to them
		{"C", Options{Callers: []string{"c"}}, "main 400/219\n  a 90/40\n    c 50/50\n  b 90/85\n    c 5/5\n  c 1/1\n"},
		{"C-leaf", Options{Callers: []string{"a", "y"}}, "main 400/310\n  a 90/90\ncall y<-b\n"},
		{"C-t", Options{Callers: []string{"c"}, MinDur: 5}, "main 400/220\n  a 90/40\n    c 50/50\n  b 90/85\n    c 5/5\n"},
		// -t: shorter calls go with what they call
		{"t", Options{MinDur: 50}, "main 400/220\n  a 90/40\n    c 50/50\n  b 90/90\ncall x<-a\ncall y<-b\n"},
		// entries in [since, until): a call entered before is hidden (its callees in
		// range take its place), one entered after is gone
		{"since", Options{Since: 40}, "c 50/50\nb 90/85\n  c 5/5\nc 1/1\ncall x<-a\ncall y<-b\n"},
		{"until", Options{Until: 110}, "main 400/310\n  a 90/30\n    b 10/10\n    c 50/50\ncall x<-a\n"},
		{"range", Options{Since: 110, Until: 300}, "b 90/85\n  c 5/5\ncall y<-b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			forest := tracetest.Forest(t, sample)
			got := render(filtered(f.At(forest.Start), forest.Threads[0]))
			if got != tc.want {
				t.Errorf("got\n%swant\n%s", got, tc.want)
			}
		})
	}
}

func TestEventKept(t *testing.T) {
	fa, fb := &symbolize.Func{Name: "a"}, &symbolize.Func{Name: "b"}
	for _, tc := range []struct {
		o      Options
		ev     tracefile.Event
		fn, cl *symbolize.Func
		want   bool
	}{
		{Options{Filter: []string{"a"}}, tracefile.Event{Kind: tracefile.Entry, TS: 5}, fa, nil, true},
		{Options{Filter: []string{"a"}}, tracefile.Event{Kind: tracefile.Exit, TS: 5}, fb, nil, false},
		{Options{Filter: []string{"a"}}, tracefile.Event{Kind: tracefile.Call, TS: 5}, fb, fa, true}, // called from a
		{Options{Notrace: []string{"a"}}, tracefile.Event{Kind: tracefile.Call, TS: 5}, fb, fa, false},
		{Options{Notrace: []string{"a"}}, tracefile.Event{Kind: tracefile.Entry, TS: 5}, fb, nil, true},
		{Options{Since: 10}, tracefile.Event{Kind: tracefile.Entry, TS: 1009}, fa, nil, false},
		{Options{Since: 10}, tracefile.Event{Kind: tracefile.Entry, TS: 1010}, fa, nil, true},
		{Options{Until: 10}, tracefile.Event{Kind: tracefile.Exit, TS: 1010}, fa, nil, false},
		{Options{Until: 10}, tracefile.Event{Kind: tracefile.Exit, TS: 1009}, fa, nil, true},
		{Options{Hide: []string{"a"}}, tracefile.Event{Kind: tracefile.Entry, TS: 5}, fa, nil, false},
		{Options{Hide: []string{"a"}}, tracefile.Event{Kind: tracefile.Call, TS: 5}, fb, fa, true}, // its caller is hidden only
		{Options{Hide: []string{"a"}}, tracefile.Event{Kind: tracefile.Call, TS: 5}, fa, fb, false},
	} {
		f, err := New(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.At(1000).EventKept(&tc.ev, tc.fn, tc.cl); got != tc.want {
			t.Errorf("%+v %v %s: %v", tc.o, tc.ev.Kind, tc.fn.Name, got)
		}
	}
}

// filtered is the thread's calls told through the filter into a calltree.Builder: the
// tree the filter leaves.
func filtered(f *Filter, t *calltree.Thread) *calltree.Thread {
	b := &calltree.Builder{}
	t.Frames(f.Wrap(b))
	nt := *t
	nt.Roots, nt.Calls = b.Roots, b.Calls
	return &nt
}

// Markers pass a filter when they are in its time range and it selects no calls.
func TestMarkerKept(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		ts   uint64
		want bool
	}{
		{Options{}, 5, true},
		{Options{TIDs: []int{1}}, 5, true},
		{Options{Since: 10}, 1009, false},
		{Options{Since: 10}, 1010, true},
		{Options{Until: 10}, 1010, false},
		{Options{Filter: []string{"a"}}, 1005, false},
		{Options{Notrace: []string{"a"}}, 1005, false},
		{Options{Depth: 2}, 1005, false},
		{Options{MinDur: 5}, 1005, false},
		{Options{Hide: []string{"a"}}, 1005, false},
		{Options{Callers: []string{"a"}}, 1005, false},
	} {
		f, err := New(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.At(1000).MarkerKept(tc.ts); got != tc.want {
			t.Errorf("%+v at %d: %v", tc.o, tc.ts, got)
		}
	}
}

// valueLog records what a filter tells it, values included.
type valueLog struct{ out []string }

func (l *valueLog) Enter(fn *symbolize.Func, _ int, _ uint64) { l.out = append(l.out, "> "+fn.Name) }
func (l *valueLog) Close(f *calltree.Frame)                   { l.out = append(l.out, "< "+f.Func.Name) }
func (l *valueLog) Call(c *calltree.Call, _ int)              { l.out = append(l.out, "call "+c.Func.Name) }
func (l *valueLog) Values(v *tracefile.Values) {
	kind := "args"
	if v.Ret {
		kind = "ret"
	}
	l.out = append(l.out, fmt.Sprintf("%s %d", kind, v.Items[0].Word))
}

// The recorded arguments and return values of a call are told with it when the filter
// shows it (also when -t decides only at its end) and dropped with it otherwise.
func TestFilterValues(t *testing.T) {
	fns := map[string]*symbolize.Func{}
	fn := func(n string) *symbolize.Func {
		if fns[n] == nil {
			fns[n] = &symbolize.Func{Name: n}
		}
		return fns[n]
	}
	val := func(ret bool, w uint64) *tracefile.Values {
		return &tracefile.Values{Ret: ret, Items: []tracefile.Value{{Word: w}}}
	}
	// main(1) { a(2) { b(3) = 30 (5 ns) } = 20 (50 ns); call c(4) } = 10
	drive := func(o calltree.Observer) {
		v := o.(calltree.ValueObserver)
		e := o.(calltree.Enterer)
		v.Values(val(false, 1))
		e.Enter(fn("main"), -1, 0)
		v.Values(val(false, 2))
		e.Enter(fn("a"), -1, 10)
		v.Values(val(false, 3))
		e.Enter(fn("b"), -1, 20)
		v.Values(val(true, 30))
		o.Close(&calltree.Frame{Func: fn("b"), ID: -1, Start: 20, End: 25})
		v.Values(val(true, 20))
		o.Close(&calltree.Frame{Func: fn("a"), ID: -1, Start: 10, End: 60})
		v.Values(val(false, 4))
		o.Call(&calltree.Call{Func: fn("c"), TS: 70}, -1)
		v.Values(val(true, 10))
		o.Close(&calltree.Frame{Func: fn("main"), ID: -1, Start: 0, End: 100})
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Notrace: []string{"a"}}, "args 1,> main,args 4,call c,ret 10,< main"},
		{Options{Filter: []string{"a"}}, "args 2,> a,args 3,> b,ret 30,< b,ret 20,< a"},
		{Options{MinDur: 10}, "args 1,> main,args 2,> a,ret 20,< a,args 4,call c,ret 10,< main"},
		{Options{Depth: 2}, "args 1,> main,args 2,> a,ret 20,< a,args 4,call c,ret 10,< main"},
	} {
		f, err := New(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		l := &valueLog{}
		drive(f.Wrap(l))
		if got := strings.Join(l.out, ","); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.o, got, tc.want)
		}
	}
}
