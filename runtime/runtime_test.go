package ftrt

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

// prog describes how to build one test program.
type prog struct {
	srcs     []string // under testdata/runtime
	cxx      bool
	pie      bool
	ftlink   bool     // run ftlink on the result (else the runtime nops the sites at load)
	gccTable bool     // gcc -mrecord-mcount tables instead of recordmcount (non-PIE only)
	san      bool     // ASan + UBSan, runtime included
	extraLD  []string // extra link arguments
	callops  bool     // CALL_OPS build: an 8-byte slot before each function (docs/runtime.md)
	clang    bool     // built by clang instead of gcc (C only)
	plain    []string // with callops: sources built the usual way (-pg -mfentry only)
}

// The flags of a CALL_OPS build (docs/runtime.md, "Per-call-site ops").
var callopsFlags = []string{"-fpatchable-function-entry=8,8", "-falign-functions=16", "-DFTRT_TEST_CALLOPS"}

func srcDir() string { return filepath.Join(testenv.Root(), "testdata", "runtime") }

var (
	sanOnce sync.Once
	sanLib  string
	sanErr  string
)

// sanitizedRuntime builds libftrt.a with ASan and UBSan into a temporary build directory.
func sanitizedRuntime(t *testing.T) string {
	t.Helper()
	sanOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ftrt-san-")
		if err != nil {
			sanErr = err.Error()
			return
		}
		r := testenv.Exec(t, filepath.Join(testenv.Root(), "runtime"), "make", "-s", "BUILD="+dir,
			"CFLAGS=-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all")
		if r.Code != 0 {
			sanErr = r.Stdout + r.Stderr
			return
		}
		sanLib = filepath.Join(dir, "lib")
	})
	if sanErr != "" {
		t.Fatalf("building the sanitized runtime: %s", sanErr)
	}
	return sanLib
}

// build compiles, records, links and ftlinks a test program into dir; returns its path.
func build(t *testing.T, dir, name string, p prog) string {
	t.Helper()
	testenv.Need(t, "gcc")
	lib, inc := testenv.Runtime(t)
	cc := "gcc"
	if p.cxx {
		testenv.Need(t, "g++")
		cc = "g++"
	}
	if p.clang {
		testenv.Need(t, "clang")
		cc = "clang"
	}
	cflags := []string{"-O2", "-g", "-pg", "-mfentry", "-Wall", "-Wextra", "-Werror", "-I" + inc, "-I" + srcDir()}
	if !p.cxx {
		cflags = append(cflags, "-std=gnu11")
	}
	var ldflags []string
	if !p.pie {
		cflags = append(cflags, "-fno-pie")
		ldflags = append(ldflags, "-no-pie")
	}
	if p.gccTable {
		cflags = append(cflags, "-mrecord-mcount")
	}
	if p.san {
		san := []string{"-fsanitize=address,undefined", "-fno-sanitize-recover=all"}
		cflags = append(cflags, san...)
		ldflags = append(ldflags, san...)
		lib = sanitizedRuntime(t)
	}
	var objs []string
	for _, s := range append(append([]string{}, p.srcs...), p.plain...) {
		obj := filepath.Join(dir, name+"-"+strings.TrimSuffix(s, filepath.Ext(s))+".o")
		args := append([]string{}, cflags...)
		if p.callops && !slices.Contains(p.plain, s) {
			args = append(args, callopsFlags...)
		}
		args = append(args, "-c", filepath.Join(srcDir(), s), "-o", obj)
		testenv.Run(t, dir, cc, args...)
		if !p.gccTable {
			testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
		}
		objs = append(objs, obj)
	}
	out := filepath.Join(dir, name)
	args := append(append(append([]string{}, ldflags...), objs...), "-o", out, "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	args = append(args, p.extraLD...)
	testenv.Run(t, dir, cc, args...)
	if p.ftlink {
		testenv.Run(t, dir, testenv.Tool(t, "ftlink"), out)
	}
	return out
}

// runOK runs a self-checking test program and requires "ok" and exit 0.
func runOK(t *testing.T, dir, path string, args ...string) string {
	t.Helper()
	r := testenv.Exec(t, dir, path, args...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "ok\n") {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", filepath.Base(path), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

type variant struct {
	name string
	p    prog
}

// variants of a C program: PIE and non-PIE through the full flow, without ftlink (sites
// nopped at load), with gcc's own tables, and under the sanitizers.
func variants(srcs ...string) []variant {
	return []variant{
		{"pie", prog{srcs: srcs, pie: true, ftlink: true}},
		{"nopie", prog{srcs: srcs, ftlink: true}},
		{"pie-unlinked", prog{srcs: srcs, pie: true}},
		{"nopie-gcc-table", prog{srcs: srcs, gccTable: true}},
		{"pie-asan-ubsan", prog{srcs: srcs, pie: true, ftlink: true, san: true}},
	}
}

func runVariants(t *testing.T, srcs ...string) {
	for _, v := range variants(srcs...) {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			runOK(t, dir, build(t, dir, "prog", v.p))
		})
	}
}

// The kernel's self-test scenario and the trampoline transitions.
func TestSelftest(t *testing.T) { runVariants(t, "selftest.c") }

// Glob, notrace and by-address filters, errors, filter changes while registered, listing.
func TestFilters(t *testing.T) { runVariants(t, "filters.c") }

// SAVE_REGS frames, argument changes, IP modification, IPMODIFY rules, vector registers.
func TestRegs(t *testing.T) { runVariants(t, "regs.c") }

// Unregister while threads are created all the time and no signal is left for the runtime
// (as in Go programs): the grace period reads new threads' counters once they publish them.
func TestNoSignalChurn(t *testing.T) { runVariants(t, "nosig.c") }

// Threads waiting in epoll_wait, poll, ppoll, select, nanosleep and sigtimedwait (calls a
// signal handler ends with EINTR whatever SA_RESTART says) see no EINTR while functions on
// 80 fresh pages are enabled, trampolines are released and ftrace_synchronize() runs: the
// rounds judge them from /proc and nothing is parked while they wait. FTRT_PRECOW=test
// would park for every batch.
func TestSleepers(t *testing.T) {
	runVariants(t, "sleepers.c")
	t.Run("precow-test", func(t *testing.T) {
		dir := t.TempDir()
		exe := build(t, dir, "prog", prog{srcs: []string{"sleepers.c"}, pie: true, ftlink: true})
		r := execEnv(t, dir, []string{"FTRT_PRECOW=test"}, exe)
		if r.Code != 0 || !strings.Contains(r.Stdout, "ok\n") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

// The RECURSION flag through own trampolines and the list function.
func TestRecursion(t *testing.T) { runVariants(t, "recursion.c") }

// Sites served by several ops run a trampoline of exactly their set (the C programs decode
// it); with FTRT_MULTI=0 they run the list function instead, which the same programs then
// check: both dispatch paths give the same counts, frames, redirections and listings.
func TestListFunctionPath(t *testing.T) {
	for _, src := range []string{"selftest.c", "regs.c", "listing.c", "recursion.c", "forks.c", "wx.c", "direct.c"} {
		t.Run(src, func(t *testing.T) {
			dir := t.TempDir()
			exe := build(t, dir, "prog", prog{srcs: []string{src}, pie: true, ftlink: true})
			r := execEnv(t, dir, []string{"FTRT_MULTI=0"}, exe, "1000")
			if r.Code != 0 || !strings.Contains(r.Stdout, "ok\n") {
				t.Fatalf("FTRT_MULTI=0: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}

// Direct calls: the kernel's matrix of a direct call and a tracer on one function in every
// order (exact counts, site bytes decoded in each state), a second direct user, IPMODIFY and
// filter rules, a direct trampoline out of rel32 reach; then 8 threads call the site while
// modify_ftrace_direct flips it between two trampolines 10,000 times (2,000 in the other
// variants), half of them with a tracer sharing the site: every call enters exactly one.
func TestDirect(t *testing.T) {
	for _, v := range variants("direct.c") {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			flips := "2000"
			if v.name == "pie" {
				flips = "10000"
			}
			out := runOK(t, dir, build(t, dir, "prog", v.p), flips)
			t.Log(strings.TrimSpace(out))
		})
	}
}

// The ready direct trampolines: ftrace_direct_count's exact per-site counts from several
// threads, ftrace_direct_fexit clones' entry/exit callbacks (arguments in registers and on
// the stack, vector and two-register results, recursion, an argument changed by entry),
// alone and behind a tracer on the same site, switched, freed only when unused.
func TestDirectReady(t *testing.T) { runVariants(t, "direct_ready.c") }

// sharedLib builds a shared library of testdata/runtime through the flow (ftlink'ed).
func sharedLib(t *testing.T, dir, name, src string) string {
	t.Helper()
	_, inc := testenv.Runtime(t)
	obj := filepath.Join(dir, name+".o")
	testenv.Run(t, dir, "gcc", "-O2", "-g", "-fPIC", "-pg", "-mfentry", "-Wall", "-Werror", "-I"+inc,
		"-c", filepath.Join(srcDir(), src), "-o", obj)
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
	so := filepath.Join(dir, name)
	testenv.Run(t, dir, "gcc", "-shared", obj, "-o", so)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), so)
	return so
}

// A DT_NEEDED library and a dlopen'ed one, PIE and non-PIE.
func TestSharedLibraries(t *testing.T) {
	for _, v := range []struct {
		name string
		pie  bool
		san  bool
	}{{"pie", true, false}, {"nopie", false, false}, {"pie-asan-ubsan", true, true}} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			sharedLib(t, dir, "libneeded.so", "libneeded.c")
			dyn := sharedLib(t, dir, "libdyn.so", "libdyn.c")
			// -rdynamic: the libraries' __fentry__ references resolve to the runtime's.
			// -z now: a non-PIE program's address of needed_func is its PLT entry, which
			// the runtime follows through the GOT, resolved only after binding.
			exe := build(t, dir, "dlopen", prog{srcs: []string{"dlopen.c"}, pie: v.pie, ftlink: true, san: v.san,
				extraLD: []string{"-L" + dir, "-lneeded", "-Wl,-rpath," + dir, "-rdynamic", "-Wl,-z,now"}})
			runOK(t, dir, exe, dyn)
		})
	}
}

// C++: demangled and mangled filters, templates, overloads, exceptions.
func TestCXX(t *testing.T) {
	for _, v := range []variant{
		{"pie", prog{srcs: []string{"cxx.cc"}, cxx: true, pie: true, ftlink: true}},
		{"nopie", prog{srcs: []string{"cxx.cc"}, cxx: true, ftlink: true}},
		{"pie-asan-ubsan", prog{srcs: []string{"cxx.cc"}, cxx: true, pie: true, ftlink: true, san: true}},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			runOK(t, dir, build(t, dir, "prog", v.p))
		})
	}
}

// printed reads the "site NAME ADDRESS" and "KEY VALUE..." lines a test program prints.
func printed(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "site":
			m[f[1]] = f[2]
		case len(f) >= 1:
			m[f[0]] = strings.Join(f[1:], " ")
		}
	}
	return m
}

// wantReports checks that stderr holds each report; %[1]s in a report is replaced by the
// address the program printed for the named site ("site NAME ADDRESS").
func wantReports(t *testing.T, r testenv.Result, reports map[string]string) {
	t.Helper()
	addrs := printed(r.Stdout)
	for name, format := range reports {
		want := format
		if strings.Contains(format, "%[1]s") {
			a, ok := addrs[name]
			if !ok {
				t.Errorf("the program did not print the address of %s:\n%s", name, r.Stdout)
				continue
			}
			want = strings.ReplaceAll(format, "%[1]s", a)
		}
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("%s: no report %q on stderr:\n%s", name, want, r.Stderr)
		}
	}
}

func runWantOK(t *testing.T, r testenv.Result) {
	t.Helper()
	if r.Code != 0 || !strings.Contains(r.Stdout, "ok\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// Sites with unexpected bytes are refused, reported (naming the site, the bytes found and
// the bytes expected) and never patched.
func TestRefusedSite(t *testing.T) {
	for _, v := range variants("refuse.c")[:2] {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := build(t, dir, "prog", v.p)
			r := testenv.Exec(t, dir, exe)
			runWantOK(t, r)
			p := printed(r.Stdout)
			wantReports(t, r, map[string]string{
				"victim": "ftkit: refusing to patch site %[1]s: found bytes [" + p["found"] + "], expected [" + p["expected"] + "]",
			})
			if p["found"] == "" || p["found"] == p["expected"] {
				t.Errorf("bad found/expected lines:\n%s", r.Stdout)
			}
		})
	}
}

// A program not processed by ftlink whose table points at bytes that are not a call to
// __fentry__ (a prologue, a call to another function, a call of the wrong length), outside
// code, or holds an unknown entry: refused at load, reported, never written.
func TestLoadRefusal(t *testing.T) {
	for _, v := range []variant{
		{"nopie-gcc-table", prog{srcs: []string{"loadrefuse.c"}, gccTable: true}},
		{"nopie-gcc-table-asan-ubsan", prog{srcs: []string{"loadrefuse.c"}, gccTable: true, san: true}},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			r := testenv.Exec(t, dir, build(t, dir, "prog", v.p))
			runWantOK(t, r)
			const not = "refused (not a call to __fentry__ nor a nop): bytes "
			wantReports(t, r, map[string]string{
				"lr_bad_bytes":  "ftkit: /proc/self/exe: site %[1]s " + not + "55 48 89 e5 5d",
				"lr_wrong_len":  "ftkit: /proc/self/exe: site %[1]s " + not + "e8 ",
				"lr_other_site": "ftkit: /proc/self/exe: site %[1]s " + not + "e8 ",
				"lr_data":       "ftkit: /proc/self/exe: site %[1]s refused (not in executable code)",
				"unknown":       "is not a known format",
			})
		})
	}
}

// The other side of TestLoadRefusal: sites of an unlinked library reaching __fentry__
// through its PLT or GOT are calls to __fentry__ (the runtime's with -rdynamic, else the C
// library's), nopped at load and traceable.
func TestLoadPLTGOT(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	lib, inc := testenv.Runtime(t)
	testenv.Run(t, dir, "gcc", "-shared", filepath.Join(srcDir(), "pltcall.S"), "-o", filepath.Join(dir, "libplt.so"))
	for _, v := range []struct {
		name string
		ld   []string
	}{
		{"libc-fentry", nil}, {"rdynamic", []string{"-rdynamic"}}, {"rdynamic-now", []string{"-rdynamic", "-Wl,-z,now"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			exe := filepath.Join(dir, "pltmain-"+v.name)
			args := []string{"-O2", "-g", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-I" + inc, "-I" + srcDir(),
				filepath.Join(srcDir(), "pltmain.c"), "-o", exe, "-L" + dir, "-lplt", "-Wl,-rpath," + dir,
				"-L" + lib, "-lftrt", "-lpthread", "-ldl"}
			testenv.Run(t, dir, "gcc", append(args, v.ld...)...)
			r := testenv.Exec(t, dir, exe)
			runWantOK(t, r)
			if strings.Contains(r.Stderr, "refused") {
				t.Errorf("unexpected refusal:\n%s", r.Stderr)
			}
		})
	}
}

// Bad entries of an ftlink-format table: refused at load or at the first patch, reported.
func TestBadTable(t *testing.T) {
	for _, san := range []bool{false, true} {
		name := "pie"
		if san {
			name = "pie-asan-ubsan"
		}
		t.Run(name, func(t *testing.T) {
			testenv.Need(t, "gcc")
			dir := t.TempDir()
			lib, inc := testenv.Runtime(t)
			args := []string{"-O2", "-g", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-I" + inc, "-I" + srcDir()}
			if san {
				args = append(args, "-fsanitize=address,undefined", "-fno-sanitize-recover=all")
				lib = sanitizedRuntime(t)
			}
			exe := filepath.Join(dir, "badtable")
			args = append(args, filepath.Join(srcDir(), "badtable.c"), filepath.Join(srcDir(), "badtable.S"),
				"-o", exe, "-L"+lib, "-lftrt", "-lpthread", "-ldl")
			testenv.Run(t, dir, "gcc", args...)
			r := testenv.Exec(t, dir, exe)
			runWantOK(t, r)
			wantReports(t, r, map[string]string{
				"bt_len7":  "ftkit: /proc/self/exe: site %[1]s refused (bad table entry)",
				"bt_ro":    "ftkit: /proc/self/exe: site %[1]s refused (bad table entry)",
				"bt_wrong": "ftkit: refusing to patch site %[1]s: found bytes [55 48 89 e5 5d], expected [0f 1f 44 00 00]",
			})
		})
	}
}

// The listing: every state (nop, own trampoline + owner, caller, regs caller), counts,
// names, order, ftrace_print_functions' lines.
func TestListing(t *testing.T) { runVariants(t, "listing.c") }

// The lean trampoline (no vector registers, no %rcx, no frame) for callbacks proven to need
// none of them, the full one for the others (and for every callback with FTRT_NOVEC=0);
// floating-point and integer arguments intact and ip / parent ip right either way; the
// decoder's verdicts on hand-written code.
func TestNovec(t *testing.T) {
	for _, v := range variants("novec.c") {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := build(t, dir, "prog", v.p)
			for _, off := range []bool{false, true} {
				var env, args []string
				want := "count novec=1"
				if off {
					env, args, want = []string{"FTRT_NOVEC=0"}, []string{"off"}, "count novec=0"
				}
				r := execEnv(t, dir, env, exe, args...)
				if r.Code != 0 || !strings.Contains(r.Stdout, "ok\n") || !strings.Contains(r.Stdout, want) {
					t.Fatalf("FTRT_NOVEC off=%v: exit %d\nstdout:\n%s\nstderr:\n%s", off, r.Code, r.Stdout, r.Stderr)
				}
			}
		})
	}
}

// W^X after every kind of patching, with both ways of writing code.
func TestWX(t *testing.T) {
	for _, poke := range []string{"", "mprotect"} {
		for _, v := range variants("wx.c") {
			name := v.name
			if poke != "" {
				name += "-" + poke
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				exe := build(t, dir, "prog", v.p)
				r := execEnv(t, dir, []string{"FTRT_POKE=" + poke}, exe)
				if r.Code != 0 || !strings.Contains(r.Stdout, "ok\n") {
					t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
				}
			})
		}
	}
}

// execEnv runs a test program with extra environment and a time limit (a hang fails the
// test instead of blocking it); a signal is reported as exit code -1.
func execEnv(t *testing.T, dir string, env []string, path string, args ...string) testenv.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: no result within 2 minutes (hang?)\nstdout:\n%s\nstderr:\n%s", filepath.Base(path), args, so.String(), se.String())
	}
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s: %v", path, err)
		}
		code = ee.ExitCode()
	}
	return testenv.Result{Stdout: so.String(), Stderr: se.String(), Code: code}
}

// -ENOMEM when no executable memory can be reserved (RLIMIT_AS in a child): nothing changes,
// and the same ops registers once the limit is lifted.
func TestENOMEM(t *testing.T) { runVariants(t, "enomem.c") }

// Systems that forbid writing code (forbid.c): /proc/self/mem unusable → automatic
// fallback to transient rwx; MDWE (no executable memory gain) with and without the fallback
// → clear errors, the program runs on untraced.
func TestForbidden(t *testing.T) {
	const nowrite = "ftkit: cannot make code writable (mprotect rwx "
	const forbids = "the system forbids writable executable memory"
	for _, v := range variants("forbid.c") {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := build(t, dir, "prog", v.p)
			unlinked := !v.p.ftlink
			for _, mode := range []string{"procmem-denied", "mdwe", "mdwe-mprotect", "both"} {
				t.Run(mode, func(t *testing.T) {
					r := execEnv(t, dir, nil, exe, mode)
					runWantOK(t, r)
					if strings.Contains(r.Stdout, "skip ") {
						t.Skip(strings.TrimSpace(r.Stdout))
					}
					p := printed(r.Stdout)
					switch {
					case mode == "procmem-denied":
						if p["method"] != "mprotect" || p["register"] != "0" {
							t.Errorf("no fallback to mprotect:\n%s", r.Stdout)
						}
					case mode == "mdwe":
						// Sites can still be written through /proc/self/mem, but
						// no trampoline can become executable.
						if p["register"] != "-12" {
							t.Errorf("register under MDWE: want -ENOMEM:\n%s", r.Stdout)
						}
						if w := "ftkit: cannot make a trampoline page executable (Permission denied)"; !strings.Contains(r.Stderr, w) {
							t.Errorf("stderr lacks %q:\n%s", w, r.Stderr)
						}
					case unlinked:
						// The load-time nops need writable code: refused, reported,
						// the program runs untraced.
						if _, ok := p["untraced"]; !ok {
							t.Errorf("want the program untraced:\n%s", r.Stdout)
						}
						for _, w := range []string{nowrite, forbids, "ftkit: /proc/self/exe: cannot nop the call sites (Permission denied): tracing disabled for it"} {
							if !strings.Contains(r.Stderr, w) {
								t.Errorf("stderr lacks %q:\n%s", w, r.Stderr)
							}
						}
					default:
						if p["register"] != "-12" {
							t.Errorf("register: want -ENOMEM:\n%s", r.Stdout)
						}
					}
				})
			}
		})
	}
}

// fork while another thread switches ops, from inside a callback, and from inside a
// callback that an unregister on another thread waits for: children are consistent and can
// use the API.
func TestFork(t *testing.T) { runVariants(t, "forks.c") }
