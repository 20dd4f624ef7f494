package graph

import (
	"bytes"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
)

func TestWrite(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample+"thread 102 late\n> 3000 a\n> 3010 b\n< 4000 a\nlost 2\n")
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"all", Options{TIDs: []int{100, 101}}, `# thread 100 (main)
#   TID       DURATION |  FUNCTION CALLS
   100)                |  main() {
   100)                |    foo() {
   100)       0.100 us |      bar();
   100)       0.400 us |    } /* foo */
   100)       0.050 us |    bar();
   100)       1.000 us |  } /* main */

# thread 101 (worker)
#   TID       DURATION |  FUNCTION CALLS
   101)                |  work() {
   101)                |    fib() {
   101)       0.020 us |      fib();
   101)       0.100 us |    } /* fib */
   101)       0.700 us |  } /* work */
`},
		{"depth and limit", Options{TIDs: []int{100}, Depth: 2, Limit: 3}, `# thread 100 (main)
#   TID       DURATION |  FUNCTION CALLS
   100)                |  main() {
   100)       0.400 us |    foo();
   100)       0.050 us |    bar();
# ... output limited to 3 lines
`},
		{"unwound, lost, time", Options{TIDs: []int{102}, Time: true}, `# thread 102 (late)
# thread 102: 2 events lost (40.0% of 5), 0 calls not graphed (depth limit, or made inside the tracer), 0 returns without entry
#   TIME (us)     TID       DURATION |  FUNCTION CALLS
        2.000     102)                |  a() {
        2.010     102)       0.990 us |    b(); /* unfinished */
        3.000     102)       1.000 us |  } /* a */
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, f, tt.o); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestWriteCalls(t *testing.T) {
	f := tracetest.Forest(t, "tracer function\nstart 0\nthread 5 t\nc 1000 foo main\nc 2500 bar foo\nc 3000 baz\n")
	var b bytes.Buffer
	if err := Write(&b, f, Options{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	want := `# thread 5 (t)
#   TIME (us)   FUNCTION <- CALLER
        0.000   foo <- main
        1.500   bar <- foo
# ... output limited to 2 calls
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestMarker(t *testing.T) {
	for ns, want := range map[uint64]byte{10_000: ' ', 10_001: '+', 100_001: '!', 1_000_001: '#', 10_000_001: '*', 100_000_001: '@', 1_000_000_001: '$'} {
		if got := Marker(ns); got != want {
			t.Errorf("Marker(%d) = %q, want %q", ns, got, want)
		}
	}
}

func TestCXXNames(t *testing.T) {
	f := tracetest.Forest(t, "thread 1\n> 0 main\n> 10 ns::f(int)\n< 20 ns::f(int)\n< 30 main\n")
	var b bytes.Buffer
	if err := Write(&b, f, Options{}); err != nil {
		t.Fatal(err)
	}
	want := `# thread 1
#   TID       DURATION |  FUNCTION CALLS
     1)                |  main() {
     1)       0.010 us |    ns::f(int);
     1)       0.030 us |  } /* main */
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestEmptyThread(t *testing.T) {
	f := tracetest.Forest(t, "thread 9 idle\nlost 3\n")
	var b bytes.Buffer
	if err := Write(&b, f, Options{}); err != nil {
		t.Fatal(err)
	}
	want := "# thread 9 (idle)\n# thread 9: 3 events lost (100.0% of 3), 0 calls not graphed (depth limit, or made inside the tracer), 0 returns without entry\n# no calls recorded\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// The DURATION column keeps its 14 characters from 100 ms on: fewer decimals, as the
// kernel cuts them (the redis trial: a 516 ms call pushed the | out of line).
func TestDurationWidth(t *testing.T) {
	for _, tt := range []struct {
		ns   uint64
		want string
	}{
		{100, "    0.100 us"},
		{99_999_123, "99999.123 us"},
		{516_408_809, "516408.81 us"},
		{5_164_088_090, "5164088.1 us"},
		{51_640_880_900, " 51640881 us"},
		{999_999_999_000, "999999999 us"},
	} {
		got := duration(tt.ns)
		if got[2:] != tt.want || len(got) != 14 {
			t.Errorf("duration(%d) = %q, want %q after the marker (14 characters)", tt.ns, got, tt.want)
		}
	}
}
