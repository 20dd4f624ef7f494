package pprof

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/calltree"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
	"github.com/google/pprof/profile"
)

func stacks(p *profile.Profile) string {
	var out []string
	for _, s := range p.Sample {
		var names []string
		for _, l := range s.Location {
			names = append(names, l.Line[0].Function.Name)
		}
		vals := []string{}
		for _, v := range s.Value {
			vals = append(vals, itoa(uint64(v)))
		}
		out = append(out, strings.Join(names, "<")+"="+strings.Join(vals, ","))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestBuild(t *testing.T) {
	f := tracetest.Forest(t, tracetest.Sample)
	var b bytes.Buffer
	if err := Write(&b, f); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	want := "bar<foo<main=1,100 bar<main=1,50 fib<fib<work=1,20 fib<work=1,80 foo<main=1,300 main=1,550 work=1,600"
	if got := stacks(p); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if p.SampleType[1].Type != "time" || p.SampleType[1].Unit != "nanoseconds" || p.DefaultSampleType != "time" {
		t.Errorf("sample types %v", p.SampleType)
	}
}

func TestFunctionTrace(t *testing.T) {
	f := tracetest.Forest(t, "tracer function\nthread 1\nc 1 a main\nc 2 a main\nc 3 b\n")
	p := Build(f)
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if got := stacks(p); got != "a<main=2 b=1" {
		t.Errorf("got %s", got)
	}
}

// TestGoToolPprof checks that `go tool pprof -top` reads the profile and shows the
// functions with their self times.
func TestGoToolPprof(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	f := tracetest.Forest(t, tracetest.Sample)
	path := filepath.Join(t.TempDir(), "p.pb.gz")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(out, f); err != nil {
		t.Fatal(err)
	}
	out.Close()
	cmd := exec.Command(goBin, "tool", "pprof", "-top", "-nodecount=10", path)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, res)
	}
	text := string(res)
	for _, w := range []string{"Type: time", "work", "main", "foo", "bar", "fib"} {
		if !strings.Contains(text, w) {
			t.Errorf("pprof -top output lacks %q:\n%s", w, text)
		}
	}
	// work has the most self time (600 of 1700 ns).
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.Contains(l, "flat%") {
			if i+1 >= len(lines) || !strings.HasSuffix(strings.TrimSpace(lines[i+1]), "work") || !strings.Contains(lines[i+1], "600ns") {
				t.Errorf("first row is not work with 600ns:\n%s", text)
			}
		}
	}
}

func TestMixedTracers(t *testing.T) {
	f := tracetest.Forest(t, "tracer function\nthread 1\nc 1 a main\n> 10 b\n< 30 b\n")
	p := Build(f)
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if got := stacks(p); got != "a<main=1,0 b=1,20" {
		t.Errorf("got %s", got)
	}
}

// The executable is the profile's first mapping (pprof names the profile after it), even
// when a library's function comes first.
func TestMainMappingFirst(t *testing.T) {
	f := tracetest.Forest(t, "map 0x3000 0x4000 0 /lib/libx.so\nmap 0x1000 0x2000 0 /bin/prog main\nthread 1\n> 10 0x3010\n< 20 0x3010\n")
	p := Build(f)
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	if len(p.Mapping) == 0 || p.Mapping[0].File != "/bin/prog" {
		t.Errorf("mappings %v, want /bin/prog first", p.Mapping)
	}
}

// A caller of many functions (more than a node finds by scanning its children), each
// called twice from two callers, interleaved: one sample per distinct stack, with both
// calls summed.
func TestBuildManyChildren(t *testing.T) {
	var src strings.Builder
	src.WriteString("tracer function_graph\nthread 1 main\n> 0 main\n")
	ts := 10
	var want []string
	for round := 0; round < 2; round++ {
		for i := 0; i < 20; i++ {
			for _, caller := range []string{"a", "b"} {
				fn := "f" + itoa(uint64(i))
				src.WriteString("> " + itoa(uint64(ts)) + " " + caller + "\n> " + itoa(uint64(ts+1)) + " " + fn + "\n< " + itoa(uint64(ts+4)) + " " + fn + "\n< " + itoa(uint64(ts+5)) + " " + caller + "\n")
				ts += 10
				if round == 0 {
					want = append(want, fn+"<"+caller+"<main=2,6")
				}
			}
		}
	}
	src.WriteString("< " + itoa(uint64(ts)) + " main\n")
	want = append(want, "a<main=40,80", "b<main=40,80", "main="+"1,"+itoa(uint64(ts-80*5)))
	sort.Strings(want)
	p := Build(tracetest.Forest(t, src.String()))
	if got := stacks(p); got != strings.Join(want, " ") {
		t.Errorf("samples:\n%s\nwant:\n%s", got, strings.Join(want, " "))
	}
}

// WritePaths writes, sample by sample from its trie of stacks, the profile BuildPaths
// makes whole: read back, the same profile (samples in the same order).
func TestWritePathsSame(t *testing.T) {
	for _, src := range []string{tracetest.Sample,
		"tracer function\nthread 1\nc 1 a main\n> 10 b\n> 12 c\n< 20 c\n< 30 b\n> 31 c\n< 40 c\n",
		"map 0x3000 0x4000 0 /lib/libx.so\nmap 0x1000 0x2000 0 /bin/prog main\nthread 1\n> 10 0x3010\n< 20 0x3010\n"} {
		f := tracetest.Forest(t, src)
		want := BuildPaths(f, calltree.PathsOf(f))
		var b bytes.Buffer
		if err := WritePaths(&b, f, calltree.PathsOf(f)); err != nil {
			t.Fatal(err)
		}
		got, err := profile.Parse(&b)
		if err != nil {
			t.Fatal(err)
		}
		if err := got.CheckValid(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("written:\n%s\nbuilt:\n%s", got, want)
		}
	}
}
