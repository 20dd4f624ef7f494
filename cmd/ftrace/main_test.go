package main

import (
	"bufio"
	"debug/elf"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/chrome"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/symbolize"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracetest"
	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testenv.PeakRSSMain()
	testscript.Main(m, map[string]func(){
		"ftrace":  func() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) },
		"fakectl": fakeControl,
	})
}

// TestScripts runs testdata/script/*.txtar. Extra commands:
//
//	mktrace [-elf PROG] [-bias N] [-partial] [-lost] IN.txt OUT.dat
//	    writes the trace described by IN.txt (tracetest language) in the real file
//	    format; with -elf, names are PROG's symbols (site = symbol + 4 after an endbr64)
//	    and PROG is mapped at bias N (default 0x555555554000) with its build-id.
//	fakectl SOCKET LOG (a program, run with exec ... &)
//	    a stand-in for the runtime's control socket: answers the protocol of
//	    docs/trace-format.md, logs each request to LOG, exits after "finish".
//	chromeok FILE
//	    FILE is valid Chrome trace-event JSON.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			// `go tool pprof` needs the Go caches (testscript hides $HOME).
			for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
				out, err := exec.Command("go", "env", v).Output()
				if err == nil {
					e.Setenv(v, strings.TrimSpace(string(out)))
				}
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mktrace":  cmdMktrace,
			"chromeok": cmdChromeOK,
			"waitsock": cmdWaitSock,
		},
	})
}

// cmdWaitSock waits (up to 10 s) for a unix socket to appear.
func cmdWaitSock(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitsock PATH")
	}
	p := ts.MkAbs(args[0])
	for i := 0; i < 1000; i++ {
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeSocket != 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("no socket %s", p)
}

func cmdChromeOK(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: chromeok FILE")
	}
	c, err := chrome.Validate([]byte(ts.ReadFile(args[0])))
	if neg {
		if err == nil {
			ts.Fatalf("%s is valid", args[0])
		}
		return
	}
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	ts.Logf("events per phase: %v", c)
}

func cmdMktrace(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! mktrace")
	}
	fs := flag.NewFlagSet("mktrace", flag.ContinueOnError)
	elfPath := fs.String("elf", "", "program whose symbols name the functions")
	biasStr := fs.String("bias", "0x555555554000", "load bias of the program")
	partial := fs.Bool("partial", false, "leave the trace not finalised")
	lostFlag := fs.Bool("lost", false, "set the header's lost flag whatever the counts (a full disk)")
	block := fs.Int("block", 0, "write format version 2, blocks of this many events")
	blockLost := fs.Uint64("blocklost", 0, "with -block: events lost before each block but the first")
	dropFrom := fs.Int("dropfrom", 0, "with -block: the first block the writer could not write")
	drop := fs.Int("drop", 0, "with -block: how many blocks from -dropfrom the writer could not write")
	snapshot := fs.Bool("snapshot", false, "mark the trace a snapshot (FlagSnapshot)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		ts.Fatalf("usage: mktrace [-elf PROG] [-bias N] [-partial] [-lost] [-snapshot] [-block N [-blocklost N] [-dropfrom N -drop N]] IN.txt OUT.dat")
	}
	bias, err := strconv.ParseUint(*biasStr, 0, 64)
	ts.Check(err)
	var resolve tracetest.Resolver
	var maps []tracefile.Mapping
	if *elfPath != "" {
		var m tracefile.Mapping
		resolve, m, err = elfResolver(ts.MkAbs(*elfPath), bias)
		ts.Check(err)
		maps = append(maps, m)
	} else {
		resolve = tracetest.NewNames().Resolve
	}
	tr, err := tracetest.Parse(ts.ReadFile(fs.Arg(0)), resolve)
	ts.Check(err)
	tr.Maps = append(maps, tr.Maps...)
	if !*partial {
		tr.Header.Flags |= tracefile.FlagComplete
	}
	if *snapshot {
		tr.Header.Flags |= tracefile.FlagSnapshot
	}
	for _, th := range tr.Threads {
		if th.Lost+th.LostDepth > 0 || *lostFlag {
			tr.Header.Flags |= tracefile.FlagLost
		}
	}
	f, err := os.Create(ts.MkAbs(fs.Arg(1)))
	ts.Check(err)
	if *block > 0 {
		if *blockLost > 0 || *drop > 0 {
			tr.Header.Flags |= tracefile.FlagLost
		}
		ts.Check(tracefile.WriteV2(f, tr, tracefile.WriteOptions{BlockEvents: *block, BlockLost: *blockLost,
			DropFrom: *dropFrom, Drop: *drop}))
	} else {
		ts.Check(tracefile.Write(f, tr))
	}
	ts.Check(f.Close())
}

// elfResolver maps function names of prog to run-time call-site addresses at bias.
func elfResolver(prog string, bias uint64) (tracetest.Resolver, tracefile.Mapping, error) {
	f, err := elf.Open(prog)
	if err != nil {
		return nil, tracefile.Mapping{}, err
	}
	defer f.Close()
	id, err := symbolize.BuildID(f)
	if err != nil {
		return nil, tracefile.Mapping{}, err
	}
	m := tracefile.Mapping{Path: prog, Bias: bias, BuildID: id, Start: ^uint64(0), Flags: tracefile.MapMain}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			m.Start = min(m.Start, bias+p.Vaddr)
			m.End = max(m.End, bias+p.Vaddr+p.Memsz)
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, m, err
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			site := s.Value
			if b := readAt(f, s.Value, 4); len(b) == 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa {
				site += 4
			}
			addr[s.Name] = bias + site
		}
	}
	return func(name string) (uint64, error) {
		if a, ok := addr[name]; ok {
			return a, nil
		}
		return 0, fmt.Errorf("%s: no function %s", prog, name)
	}, m, nil
}

func readAt(f *elf.File, vaddr uint64, n int) []byte {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && vaddr >= p.Vaddr && vaddr+uint64(n) <= p.Vaddr+p.Filesz {
			b := make([]byte, n)
			if _, err := p.ReadAt(b, int64(vaddr-p.Vaddr)); err == nil {
				return b
			}
		}
	}
	return nil
}

func fakeControl() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fakectl SOCKET LOG")
		os.Exit(2)
	}
	l, err := net.Listen("unix", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer l.Close()
	log, err := os.Create(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer log.Close()
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		r := bufio.NewScanner(c)
		done := false
		for r.Scan() {
			req := r.Text()
			fmt.Fprintln(log, req)
			f := strings.Fields(req)
			var resp string
			switch {
			case len(f) == 0:
				resp = "error empty request"
			case f[0] == "status":
				resp = "ok tracer=function_graph enabled=1 recording=1 pid=4242 output=ftrace.dat mode=stream threads=1 lost=0 lost_depth=0"
			case f[0] == "snapshot":
				resp = "ok ftrace.dat.snap.1"
				if len(f) > 1 {
					resp = "ok " + f[1]
				}
			case f[0] == "tracer" && (len(f) < 2 || f[1] == "bogus"):
				resp = "error unknown tracer"
			case f[0] == "finish":
				resp, done = "ok", true
			default:
				resp = "ok"
			}
			fmt.Fprintln(c, resp)
			if done {
				c.Close()
				return
			}
		}
		c.Close()
	}
}

func TestShellJoin(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"./prog", "-n", "3"}, "./prog -n 3"},
		{[]string{"lessecho", "a", "c d", "e$f", ""}, `lessecho a 'c d' 'e$f' ''`},
		{[]string{"sh", "-c", "echo 'x'"}, `sh -c 'echo '\''x'\'''`},
	} {
		if got := shellJoin(c.args); got != c.want {
			t.Errorf("shellJoin(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}

// bigOutput says once, when the output passes its limit, that it is too big to open;
// everything written still goes through.
func TestBigOutput(t *testing.T) {
	for _, c := range []struct {
		writes []int
		warned bool
	}{
		{[]int{10, 6}, false},
		{[]int{10, 7}, true},
		{[]int{20, 1, 50}, true},
	} {
		var out, warn strings.Builder
		b := &bigOutput{w: &out, warn: &warn, limit: 16}
		total := 0
		for _, n := range c.writes {
			if k, err := b.Write([]byte(strings.Repeat("x", n))); k != n || err != nil {
				t.Fatalf("%v: wrote %d, %v", c.writes, k, err)
			}
			total += n
		}
		if out.Len() != total || (warn.Len() > 0) != c.warned || strings.Count(warn.String(), "\n") > 1 {
			t.Errorf("%v: %d bytes out, warning %q", c.writes, out.Len(), warn.String())
		}
	}
}

// A program record cannot start exits 127 (not found) or 126 (not runnable), as with a
// shell or env(1): the zstd trial's missing program exited 1, as if it had run and failed.
func TestRecordNotRunnable(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prog string
		code int
	}{
		{filepath.Join(dir, "missing"), 127},
		{"ftkit-no-such-program", 127},
		{noexec, 126},
		{dir, 126},
	} {
		var out, errb strings.Builder
		if code := run([]string{"ftrace", "record", "-o", filepath.Join(dir, "t.dat"), "--", c.prog}, &out, &errb); code != c.code || !strings.HasPrefix(errb.String(), "ftrace: record: ") {
			t.Errorf("%s: exit %d, stderr %q; want %d", c.prog, code, errb.String(), c.code)
		}
	}
}

// The program a qemu-user command line runs, past qemu's options (with and without values).
func TestQemuGuest(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "./prog", "-x"}, "./prog"},
		{[]string{"/usr/bin/qemu-aarch64-static", "-strace", "-cpu", "max", "prog"}, "prog"},
		{[]string{"qemu-aarch64", "-E", "A=1", "--", "-odd"}, "-odd"},
		{[]string{"qemu-aarch64", "-L"}, ""},
		{[]string{"./prog", "-L", "x"}, ""},
	} {
		if got := qemuGuest(c.args); got != c.want {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
	// env's command, and qemu's guest through env (the xz trial's -a read env's DWARF)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"env", "LD_LIBRARY_PATH=/x", "qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "./xz", "-T2"}, "./xz"},
		{[]string{"/usr/bin/env", "-i", "-u", "HOME", "A=1", "prog", "B=2"}, "prog"},
		{[]string{"env", "--", "prog"}, "prog"},
		{[]string{"env", "env", "A=1", "prog"}, "prog"},
		{[]string{"env", "A=1"}, ""},
		{[]string{"./prog", "env"}, ""},
	} {
		if got := wrapped(c.args); got != c.want {
			t.Errorf("wrapped(%q): %q, want %q", c.args, got, c.want)
		}
	}
}

// An aarch64 program not built for ftkit, run through qemu-user: the hint names the guest
// program, not qemu (it said "/usr/bin/qemu-aarch64 was not built for ftkit"); run
// directly on a host that cannot exec it, record says to use qemu-user.
func TestRecordAArch64Hints(t *testing.T) {
	testenv.Need(t, "aarch64-linux-gnu-gcc")
	testenv.Need(t, "qemu-aarch64")
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, dir, "aarch64-linux-gnu-gcc", "-O1", "-o", "plain64", src)
	ftrace := testenv.Tool(t, "ftrace")
	r := testenv.Exec(t, dir, ftrace, "record", "-o", "r.dat", "--", "qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "./plain64")
	if r.Code != 0 || r.Stdout != "hi\n" || !strings.Contains(r.Stderr, "./plain64 was not built for ftkit") || strings.Contains(r.Stderr, "qemu-aarch64 was not") {
		t.Errorf("through qemu: exit %d, stdout %q\n%s", r.Code, r.Stdout, r.Stderr)
	}
	r = testenv.Exec(t, dir, ftrace, "record", "-o", "r.dat", "--", "./plain64")
	if r.Stdout == "hi\n" {
		t.Skip("this host runs aarch64 programs itself (binfmt)")
	}
	if r.Code != 126 || !strings.Contains(r.Stderr, "./plain64 is a program for aarch64; run it through qemu-user: ftrace record -- qemu-aarch64 -L /usr/aarch64-linux-gnu ./plain64") {
		t.Errorf("directly: exit %d\n%s", r.Code, r.Stderr)
	}
}

// /dev/null is a character device but not a terminal: a warning that info says on stderr
// only when its output is not on a terminal must reach stderr when stdout goes there.
func TestIsTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(null) || isTerminal(w) || isTerminal(&strings.Builder{}) {
		t.Errorf("/dev/null %v, pipe %v, builder %v: none is a terminal", isTerminal(null), isTerminal(w), isTerminal(&strings.Builder{}))
	}
}
