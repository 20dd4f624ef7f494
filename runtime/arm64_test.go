package ftrt_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// The arm64 runtime, cross-built and run under qemu-user: the function and function_graph
// tracers on real programs built with -fpatchable-function-entry=2 (the only aarch64
// build mode: gcc has no -mfentry there), checked with this package's trace reader.

const (
	a64CC   = "aarch64-linux-gnu-gcc"
	a64CXX  = "aarch64-linux-gnu-g++"
	a64QEMU = "qemu-aarch64"
	a64Root = "/usr/aarch64-linux-gnu" // qemu-aarch64 -L: the cross C library
)

// a64Need skips the test when the cross compiler or qemu-user is missing.
func a64Need(t *testing.T) {
	t.Helper()
	for _, p := range []string{a64CC, a64QEMU} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed: the arm64 runtime is cross-built with %s and run under %s -L %s",
				p, a64CC, a64QEMU, a64Root)
		}
	}
	if _, err := os.Stat(a64Root); err != nil {
		t.Skipf("%s missing (the aarch64 C library qemu-aarch64 -L needs): %v", a64Root, err)
	}
}

// a64Runtime is the aarch64 runtime's BUILD directory (testenv.AArch64Runtime).
func a64Runtime(t *testing.T) string {
	t.Helper()
	a64Need(t)
	return testenv.AArch64Runtime(t)
}

// a64Build builds a C program for aarch64 through the real flow: -fpatchable-function-entry=2,
// recordmcount, link with libftrt.a (-Wl,-u,__fentry__ pulls it in, as ftcc does: nothing
// else references it), ftlink. src is a file of runtime/tests, or the text of a program
// when it holds a newline.
func a64Build(t *testing.T, dir, name, src string, cflags ...string) string {
	t.Helper()
	return a64BuildCC(t, dir, name, src, nil, cflags...)
}

// a64BuildCC is a64Build with the objects compiled by compile (a command and its first
// arguments, e.g. clang --target=aarch64-linux-gnu) instead of the cross gcc, which links.
func a64BuildCC(t *testing.T, dir, name, src string, compile []string, cflags ...string) string {
	t.Helper()
	b := a64Runtime(t)
	path := filepath.Join(testenv.Root(), "runtime", "tests", src)
	if strings.Contains(src, "\n") {
		path = filepath.Join(dir, name+".c")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	obj := filepath.Join(dir, name+".o")
	prog := filepath.Join(dir, name)
	cc := a64CC
	if strings.HasSuffix(src, ".cc") {
		cc = a64CXX
	}
	args := append([]string{"-O2", "-g", "-fpatchable-function-entry=2", "-I", filepath.Join(b, "include")}, cflags...)
	if len(compile) > 0 {
		testenv.Need(t, compile[0])
		testenv.Run(t, dir, compile[0], append(append(append([]string{}, compile[1:]...), args...), "-c", path, "-o", obj)...)
	} else {
		testenv.Run(t, dir, cc, append(args, "-c", path, "-o", obj)...)
	}
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
	testenv.Run(t, dir, cc, append(cflags, obj, "-rdynamic", "-Wl,-u,__fentry__",
		"-L"+filepath.Join(b, "lib"), "-lftrt", "-lpthread", "-ldl", "-o", prog)...)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)
	return prog
}

// a64Run runs prog under qemu-aarch64 with the environment additions (as trRun does).
func a64Run(t *testing.T, dir, prog string, env []string, args ...string) (string, syscall.WaitStatus) {
	t.Helper()
	q := testenv.QEMUAArch64(prog, args...)
	return trRunCmd(t, dir, prog, exec.Command(q[0], q[1:]...), env)
}

// a64CheckComplete is trCheckComplete for the generic timer (cntvct_el0): its frequency is
// the system's, often 24 to 100 MHz (62.5 MHz under qemu), so a tick may be up to 100 ns.
func a64CheckComplete(t *testing.T, tr *trTrace) {
	t.Helper()
	if tr.Flags&1 == 0 || tr.Reason != 1 {
		t.Errorf("flags %#x reason %d, want COMPLETE and reason 1 (exit)", tr.Flags, tr.Reason)
	}
	if tr.NsPerTick <= 0 || tr.NsPerTick > 100 {
		t.Errorf("ns_per_tick %v", tr.NsPerTick)
	}
}

// ftrace_notrace keeps callbacks out of -fpatchable-function-entry's sites
// (runtime/tests/notrace_cb.c): an ops of every function calls its callback exactly once
// per call (no_instrument_function alone: the callback traced itself until the stack ran
// out).
func TestArm64NotraceCallback(t *testing.T) {
	dir := t.TempDir()
	out, ws := a64Run(t, dir, a64Build(t, dir, "notrace_cb", "notrace_cb.c"), nil)
	if ws.ExitStatus() != 0 || out != "ok\n" {
		t.Fatalf("status %v:\n%s", ws, out)
	}
}

// fib(15) makes 1973 calls of fib.
const a64FibCalls = 1973

func TestArm64FunctionFib(t *testing.T) {
	dir := t.TempDir()
	a64FunctionFib(t, dir, a64Build(t, dir, "trace_fib", "trace_fib.c"))
}

// a64FunctionFib checks a function trace of fib(15): exact counts, fib called from fib or
// main only.
func a64FunctionFib(t *testing.T, dir, prog string) {
	t.Helper()
	plain, _ := a64Run(t, dir, prog, nil, "15")
	out, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=function"}, "15")
	if out != plain || ws.ExitStatus() != 0 || plain != "fib(15) = 610\n" {
		t.Fatalf("traced output %q (status %v), plain %q", out, ws, plain)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	a64CheckComplete(t, tr)
	s := trSymbols(t, tr, prog)
	if len(tr.Threads) != 1 {
		t.Fatalf("%d threads", len(tr.Threads))
	}
	// the program's name, not the emulator's (its comm under qemu-user)
	if name, want := tr.Threads[0].Name, filepath.Base(prog); name != want[:min(len(want), 15)] {
		t.Errorf("thread named %q, want %q", name, want)
	}
	counts := map[string]int{}
	for _, r := range tr.Threads[0].Recs {
		if r.Type != 1 {
			t.Fatalf("record type %d in a function trace", r.Type)
		}
		name := s.name(r.IP)
		counts[name]++
		// ip is the site's bl (the function's entry + 4: no bti c here)
		if name == "fib" {
			if caller := s.name(r.Aux); caller != "fib" && caller != "main" {
				t.Errorf("fib called from %s", caller)
			}
		}
	}
	if counts["fib"] != a64FibCalls || counts["main"] != 1 || len(counts) != 2 {
		t.Errorf("counts %v, want fib %d and main 1", counts, a64FibCalls)
	}
}

// a64GraphFib checks a function_graph trace of fib(15): exact entries, nesting (every exit
// closes the latest entry), nothing unwound or left open, and the depth of the deepest fib.
func a64GraphFib(t *testing.T, dir, prog string) {
	t.Helper()
	plain, _ := a64Run(t, dir, prog, nil, "15")
	out, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=" + filepath.Join(dir, "g.dat")}, "15")
	if out != plain || ws.ExitStatus() != 0 || plain != "fib(15) = 610\n" {
		t.Fatalf("traced output %q (status %v), plain %q", out, ws, plain)
	}
	tr := trRead(t, filepath.Join(dir, "g.dat"))
	a64CheckComplete(t, tr)
	s := trSymbols(t, tr, prog)
	if len(tr.Threads) != 1 {
		t.Fatalf("%d threads", len(tr.Threads))
	}
	entries, unwound, open := trGraph(t, tr.Threads[0], s)
	if entries["fib"] != a64FibCalls || entries["main"] != 1 || len(entries) != 2 {
		t.Errorf("entries %v, want fib %d and main 1", entries, a64FibCalls)
	}
	if len(unwound) != 0 || open != 0 {
		t.Errorf("unwound %v, %d left open", unwound, open)
	}
	maxDepth := uint32(0)
	for _, r := range tr.Threads[0].Recs {
		if r.Type == 2 && r.Depth > maxDepth {
			maxDepth = r.Depth
		}
	}
	if maxDepth != 15 { // main at 0, fib(15) at 1 ... fib(1) at 15
		t.Errorf("deepest entry at depth %d, want 15", maxDepth)
	}
}

// Fatal signals on aarch64 under qemu-user: the trace is finalised (flags, signal number)
// and the process still dies of the signal, a brk of the program's own included.
func TestArm64AbnormalExit(t *testing.T) {
	dir := t.TempDir()
	prog := a64Build(t, dir, "trace_misc", "trace_misc.c")
	for _, tc := range []struct {
		how string
		sig syscall.Signal
	}{{"segv", syscall.SIGSEGV}, {"abort", syscall.SIGABRT}, {"int3", syscall.SIGTRAP},
		{"sigtrap", syscall.SIGTRAP}, {"sigsys", syscall.SIGSYS}} {
		out := filepath.Join(dir, "t-"+tc.how+".dat")
		_, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=" + out}, tc.how, "100")
		if !ws.Signaled() || ws.Signal() != tc.sig {
			t.Errorf("%s: status %v, want death by %v", tc.how, ws, tc.sig)
		}
		tr := trRead(t, out)
		if tr.Flags&3 != 3 || tr.Signal != uint32(tc.sig) || tr.Reason != 2 {
			t.Errorf("%s: flags %#x signal %d reason %d", tc.how, tr.Flags, tr.Signal, tr.Reason)
		}
		s := trSymbols(t, tr, prog)
		ent, _, open := trGraph(t, tr.Threads[0], s)
		if open != 2 || ent["crash"] != 1 || ent["recurse"] != 101 {
			t.Errorf("%s: entries %v open %d", tc.how, ent, open)
		}
	}
}

func TestArm64GraphFib(t *testing.T) {
	dir := t.TempDir()
	a64GraphFib(t, dir, a64Build(t, dir, "trace_fib", "trace_fib.c"))
}

// The graph tracer's fused path with a depth limit and time filters on aarch64: the calls
// kept are those of the full trace within the depth; with a filter of one tick (62.5 MHz
// under qemu: 16 ns), the calls that lasted a tick (their entries held back, then written),
// nested, and most of them; none with a filter no call lasts.
func TestArm64GraphDepthTimeFilter(t *testing.T) {
	dir := t.TempDir()
	prog := a64Build(t, dir, "trace_fib", "trace_fib.c")
	entries := func(env ...string) (map[string]int, int, int) {
		t.Helper()
		out, ws := a64Run(t, dir, prog, append(env, "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT="+filepath.Join(dir, "g.dat")), "15")
		if out != "fib(15) = 610\n" || ws.ExitStatus() != 0 {
			t.Fatalf("%v: output %q, status %v", env, out, ws)
		}
		tr := trRead(t, filepath.Join(dir, "g.dat"))
		s := trSymbols(t, tr, prog)
		n := map[string]int{}
		shallow, tickless := 0, 0
		for _, r := range tr.Threads[0].Recs {
			if r.Type == 2 {
				n[s.name(r.IP)]++
				if r.Depth < 5 {
					shallow++
				}
			}
			if r.Type == 3 && r.TS == r.Aux { // an exit carries its entry's time
				tickless++
			}
		}
		if _, _, open := trGraph(t, tr.Threads[0], s); open != 0 {
			t.Errorf("%v: %d frames left open", env, open)
		}
		return n, shallow, tickless
	}
	full, shallow, _ := entries()
	if full["fib"] != a64FibCalls {
		t.Fatalf("full trace: %v", full)
	}
	if got, _, _ := entries("FTRACE_GRAPH_DEPTH=5"); got["fib"]+got["main"] != shallow {
		t.Errorf("depth 5: %v, want %d calls above depth 5", got, shallow)
	}
	if got, _, tickless := entries("FTRACE_TIME_FILTER=1ns"); got["main"] != 1 || got["fib"] > full["fib"] ||
		got["fib"] < full["fib"]*3/4 || tickless != 0 {
		t.Errorf("time filter 1ns: %v (%d calls shorter than a tick), want most of %v", got, tickless, full)
	}
	if got, _, _ := entries("FTRACE_TIME_FILTER=1h"); len(got) != 0 {
		t.Errorf("time filter 1h: %v, want none", got)
	}
}

// BTI and PAC: -mbranch-protection=standard puts bti c before the two nops and paciasp
// after them. The site is found past bti c, and the graph tracer's changed return address
// is what paciasp signs and autiasp checks (qemu's default CPU implements pointer
// authentication, so a wrong signature would fault).
func TestArm64GraphFibBTIPAC(t *testing.T) {
	dir := t.TempDir()
	prog := a64Build(t, dir, "trace_fib", "trace_fib.c", "-mbranch-protection=standard")
	dis, err := exec.Command("aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", prog).Output()
	if err != nil {
		t.Skipf("aarch64-linux-gnu-objdump: %v", err)
	}
	i := strings.Index(string(dis), "<fib>:\n")
	if i < 0 {
		t.Fatalf("no fib in the disassembly")
	}
	var ins []string
	for _, l := range strings.Split(string(dis[i:]), "\n")[1:5] {
		if f := strings.Fields(l); len(f) >= 2 {
			ins = append(ins, strings.Join(f[1:], " "))
		}
	}
	if len(ins) < 4 || ins[0] != "bti c" || ins[1] != "nop" || ins[2] != "nop" || ins[3] != "paciasp" {
		t.Fatalf("fib starts %q, want bti c, nop, nop, paciasp", ins)
	}
	a64GraphFib(t, dir, prog)
}

// a64BTIStart is a program entry with a BTI landing pad (Debian 12's crt1.o and crti.o have
// none, so no program built here is BTI-enforced otherwise) and __dso_handle (crtbegin's).
const a64BTIStart = `	.text
	.globl _start
	.type _start, %function
_start:
	bti jc			// reached by br from the dynamic loader
	mov x29, #0
	mov x30, #0
	mov x5, x0		// rtld_fini
	ldr x1, [sp]		// argc
	add x2, sp, #8		// argv
	mov x6, sp
	adrp x0, :got:main
	ldr x0, [x0, :got_lo12:main]
	mov x3, #0
	mov x4, #0
	bl __libc_start_main
	brk #0
	.size _start, .-_start
	.data
	.p2align 3
	.globl __dso_handle
	.hidden __dso_handle
__dso_handle:
	.quad __dso_handle
	.pushsection .note.gnu.property, "a"
	.p2align 3
	.word 4, 16, 5
	.asciz "GNU"
	.word 0xc0000000, 4, 3, 0	// AARCH64_FEATURE_1_AND: BTI, PAC
	.popsection
	.section .note.GNU-stack,"",%progbits
`

// fib, dlopen and dlclose (the runtime's hooks, which libraries reach through their PLT)
// called through function pointers (blr): each needs a landing pad once BTI is enforced.
const a64BTIProg = `#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline, optimize("no-optimize-sibling-calls"))) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
int (*volatile fp)(int) = fib;
void *(*volatile dlo)(const char *, int) = dlopen;
int (*volatile dlc)(void *) = dlclose;
__attribute__((noinline)) int probe(void) { return 42; }
int main(int argc, char **argv)
{
	void *h = dlo("libm.so.6", RTLD_NOW);

	if (!h || dlc(h))
		return 3;
	printf("fib(15) = %d\n", fp(argc > 1 ? atoi(argv[1]) : 15));
	if (argc > 2) {	/* past probe's landing pad: SIGILL where its page is guarded */
		fflush(stdout);
		printf("unguarded %d\n", ((int (*)(void))((char *)probe + 4))());
	}
	return 0;
}
`

// a64BuildBTI builds src (a path) for aarch64 with BTI enforced under qemu: every object
// with the BTI property note (its own _start, a64BTIStart, instead of Debian's crt files,
// which have none), linked with -z force-bti, ftlink'ed; it fails the test when an input
// of the program or the runtime lacks the note or the program is not marked.
func a64BuildBTI(t *testing.T, dir, name, src string) string {
	t.Helper()
	b := a64Runtime(t)
	start := filepath.Join(dir, "start.S")
	if err := os.WriteFile(start, []byte(a64BTIStart), 0o644); err != nil {
		t.Fatal(err)
	}
	prot := "-mbranch-protection=standard"
	obj := filepath.Join(dir, name+".o")
	testenv.Run(t, dir, a64CC, "-c", start, "-o", filepath.Join(dir, "start.o"))
	// -mno-outline-atomics: libgcc's outline atomics bring a constructor without a landing
	// pad (Debian 12's libgcc has no BTI), as for the runtime itself
	testenv.Run(t, dir, a64CC, "-O2", "-g", "-fpatchable-function-entry=2", prot, "-mno-outline-atomics",
		"-I", filepath.Join(b, "include"), "-c", src, "-o", obj)
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
	prog := filepath.Join(dir, name)
	out, err := exec.Command(a64CC, prot, "-nostartfiles", filepath.Join(dir, "start.o"), obj,
		"-rdynamic", "-Wl,-u,__fentry__", "-L"+filepath.Join(b, "lib"), "-lftrt", "-lpthread", "-ldl",
		"-Wl,-z,force-bti", "-o", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("link: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "BTI") && (strings.Contains(l, "libftrt") || strings.Contains(l, dir)) {
			t.Errorf("an input without the BTI note: %s", l)
		}
	}
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)
	notes, err := exec.Command("aarch64-linux-gnu-readelf", "-n", prog).Output()
	if err != nil {
		t.Skipf("aarch64-linux-gnu-readelf: %v", err)
	}
	if !strings.Contains(string(notes), "AArch64 feature: BTI") {
		t.Fatalf("the program is not marked for BTI:\n%s", notes)
	}
	return prog
}

// BTI enforced: a program whose every object has the BTI property note keeps it when it
// links the runtime (the runtime's C code has landing pads and its assembly the note and
// a bti c at each target of an indirect branch), and runs traced and not under qemu, which
// enforces BTI on such a program: a missing landing pad is a SIGILL. Linked with -z
// force-bti because Debian 12's libgcc.a and libc_nonshared.a (the cache flush, the fork
// handlers: reached by bl only) have no note; the linker names each such input, and none
// may be the runtime.
func TestArm64BTIEnforced(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bti.c")
	if err := os.WriteFile(src, []byte(a64BTIProg), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := a64BuildBTI(t, dir, "bti", src)
	a64FunctionFib(t, dir, prog)
	a64GraphFib(t, dir, prog)
	// the code pages stay guarded after the sites on them were written, by either method
	// (mprotect must give PROT_BTI back)
	for _, env := range [][]string{nil, {"FTRACE_TRACER=function", "FTRT_POKE=procmem"},
		{"FTRACE_TRACER=function", "FTRT_POKE=mprotect"}} {
		out, ws := a64Run(t, dir, prog, env, "15", "probe")
		if !ws.Signaled() || ws.Signal() != syscall.SIGILL || strings.Contains(out, "unguarded") {
			t.Errorf("%v: a branch past a landing pad: %q (status %v), want SIGILL", env, out, ws)
		}
	}
}

// Arguments in x0-x7 and on the stack, the indirect result in x8, float and HFA results in
// q0-q3 and 128-bit integers: the same output traced (both tracers) and not.
const a64ArgsC = `#include <stdio.h>
#define N __attribute__((noinline))
struct big { long a, b, c, d, e; };
struct hfa { double x, y, z, w; };
N long many(long a, long b, long c, long d, long e, long f, long g, long h, long i, long j)
{ return a + 2*b + 3*c + 4*d + 5*e + 6*f + 7*g + 8*h + 9*i + 10*j; }
N double fmany(double a, double b, double c, double d, double e, double f, double g, double h, double i)
{ return a - b + c * d - e / f + g * h - i; }
N struct big mkbig(long x) { struct big r = { x, x + 1, x * 2, x * 3, -x }; return r; }
N struct hfa mkhfa(double x) { struct hfa r = { x, x / 2, x * 3, -x }; return r; }
N __int128 wide(__int128 a, __int128 b) { return a * b + (a >> 3); }
N float mixed(int a, float b, long c, double d) { return a * b + c - (float)d; }
int main(void)
{
	double s = 0;
	for (int k = 0; k < 50; k++) {
		struct big b = mkbig(k);
		struct hfa h = mkhfa(k + 0.5);
		__int128 w = wide((__int128)k << 70 | 7, k + 3);
		s += many(k, 2, 3, 4, 5, 6, 7, 8, 9, 10) + fmany(k, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5)
		   + b.a + b.b + b.c + b.d + b.e + h.x + h.y + h.z + h.w + (double)(long)(w >> 64) + (double)(long)w
		   + mixed(k, 0.25f, 3, 1.5);
	}
	printf("%.6f\n", s);
	return 0;
}
`

func TestArm64Registers(t *testing.T) {
	dir := t.TempDir()
	prog := a64Build(t, dir, "args", a64ArgsC)
	plain, _ := a64Run(t, dir, prog, nil)
	if plain == "" {
		t.Fatal("no output")
	}
	for _, tracer := range []string{"function", "function_graph"} {
		out, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + filepath.Join(dir, tracer+".dat")})
		if out != plain || ws.ExitStatus() != 0 {
			t.Errorf("%s: traced output %q (status %v), plain %q", tracer, out, ws, plain)
			continue
		}
		tr := trRead(t, filepath.Join(dir, tracer+".dat"))
		s := trSymbols(t, tr, prog)
		n := map[string]int{}
		for _, r := range tr.Threads[0].Recs {
			if r.Type == 1 || r.Type == 2 {
				n[s.name(r.IP)]++
			}
		}
		for _, f := range []string{"many", "fmany", "mkbig", "mkhfa", "wide", "mixed"} {
			if n[f] != 50 {
				t.Errorf("%s: %s traced %d times, want 50 (%v)", tracer, f, n[f], n)
			}
		}
	}
}

// Arguments and return values on arm64 (FTRACE_ARGS, FTRACE_RETVAL with the registers of
// AAPCS64: x0-x7, d0-d7, the result in x0 or d0): what graph shows is what the program
// says it was called with, as on x86-64 (checkSpecCalls), but for strings: qemu-user does
// not emulate process_vm_readv, so the runtime does not read them there (<unread>).
func TestArm64Args(t *testing.T) {
	dir := t.TempDir()
	prog := a64Build(t, dir, "trace_args", "trace_args.c")
	plain, _ := a64Run(t, dir, prog, nil)
	out, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_ARGS=" + specArgs, "FTRACE_RETVAL=" + specRets})
	if out != plain || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v, untraced %q", out, ws, plain)
	}
	checkSpecCalls(t, argsCalls(t, testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "graph", "ftrace.dat"), "function_graph"), plain, true)
	// the header's cycle counter is arm64's, named so
	if info := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "info", "ftrace.dat"); !regexp.MustCompile(`(?m)^clock: +cntvct_el0 \(\d+ Hz\)$`).MatchString(info) {
		t.Errorf("info:\n%s", info)
	}
}

// --auto-args on arm64: the AAPCS64 plans `ftrace args --spec` writes from the program's
// DWARF (x0-x7, d0-d7, HFAs, composites in register pairs or by reference, the stack)
// record what each function says it was called with and returned, for C and C++ (as
// TestTracerArgsAuto on x86-64; strings are <unread> under qemu-user).
func TestArm64ArgsAuto(t *testing.T) {
	a64Need(t)
	if _, err := exec.LookPath(a64CXX); err != nil {
		t.Skipf("%s not installed", a64CXX)
	}
	dir := t.TempDir()
	ftrace := testenv.Tool(t, "ftrace")
	for _, src := range []string{"trace_args.c", "trace_args_cxx.cc"} {
		name := strings.TrimSuffix(src, filepath.Ext(src))
		prog := a64Build(t, dir, name, src)
		var env []string
		for _, which := range []string{"args", "retval"} {
			spec := filepath.Join(dir, name+"."+which)
			if err := os.WriteFile(spec, []byte(testenv.Run(t, dir, ftrace, "args", "--spec", which, prog)), 0o644); err != nil {
				t.Fatal(err)
			}
			env = append(env, "FTRACE_"+strings.ToUpper(which)+"=@"+spec)
		}
		if strings.HasSuffix(src, ".cc") {
			env = append(env, "FTRACE_NOTRACE="+libstdcxxString)
		}
		plain, _ := a64Run(t, dir, prog, nil)
		out, ws := a64Run(t, dir, prog, append(env, "FTRACE_TRACER=function_graph"))
		if hexAddr.ReplaceAllString(out, "0x?") != hexAddr.ReplaceAllString(plain, "0x?") || ws.ExitStatus() != 0 {
			t.Fatalf("%s: output traced\n%s\nuntraced\n%s", src, out, plain)
		}
		want := strings.Split(strings.TrimSpace(out), "\n")
		got := argsCalls(t, testenv.Run(t, dir, ftrace, "graph", "ftrace.dat"), "function_graph")
		if len(got) != len(want) {
			t.Fatalf("%s: %d calls shown, the program made %d:\n%s", src, len(got), len(want), strings.Join(got, "\n"))
		}
		// a composite of over 16 bytes is passed as the address of a copy (ftrace args
		// marks it "@*x0"): that address is what is recorded and shown
		byRef := regexp.MustCompile(`(\w+) @\*x\d`)
		plans := testenv.Run(t, dir, ftrace, "args", prog)
		for i, w := range want {
			w = cString.ReplaceAllString(w, "<unread>")
			fn, _, _ := strings.Cut(w, "(")
			for _, l := range strings.Split(plans, "\n") {
				if strings.Contains(l, "  "+fn+"(") {
					// a result that cannot be recorded (ftrace args: "@-"): the
					// call shows no value
					if k := strings.LastIndex(w, " = "); strings.HasSuffix(l, " @-") && k > 0 {
						w = w[:k]
					}
					for _, m := range byRef.FindAllStringSubmatch(l, -1) {
						w = regexp.MustCompile(`\b`+m[1]+`=\{[^=]*(=\{[^}]*\})?[^}]*\}`).ReplaceAllString(w, m[1]+"=0x?")
					}
				}
			}
			if strings.Contains(w, "0x?") {
				got[i] = hexAddr.ReplaceAllString(got[i], "0x?")
			}
			// an empty std::string_view is shown as it is: nothing had to be read
			got[i] = strings.ReplaceAll(got[i], `""`, "<unread>")
			if !strings.HasSuffix(got[i], w) || len(got[i]) > len(w) && got[i][len(got[i])-len(w)-1] != ' ' {
				t.Errorf("%s: call %d shown as %q, the program says %q", src, i, got[i], w)
			}
		}
	}
}

// A result returned in memory (a struct of over 16 bytes; a std::string) is written where
// the caller's x8 pointed, and the callee need not keep x8: the runtime keeps the entry's
// x8 in the call's frame and reads the result there at exit (the spec's %x8). The address
// shown is the one the caller gave: the program prints where its result landed.
const a64IndirectC = `#include <stdio.h>
#include <stdlib.h>
struct big { long a, b, c, d, e; };
__attribute__((noinline)) struct big mkbig(long x)
{
	struct big r = { x, x + 1, x * 2, x * 3, -x };
	return r;
}
/* clobbers x8 before it returns, as a callee may */
__attribute__((noinline)) struct big mkbig2(long x)
{
	struct big r = mkbig(x * 5);
	r.a += mkbig(x).e;
	return r;
}
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3;
	for (long i = 0; i < n; i++) {
		struct big b = mkbig2(i);
		printf("mkbig2(x=%ld) = %p %ld\n", i, (void *)&b, b.a);
	}
	return 0;
}
`

func TestArm64IndirectResult(t *testing.T) {
	dir := t.TempDir()
	prog := a64Build(t, dir, "indirect", a64IndirectC, "-fno-inline")
	ftrace := testenv.Tool(t, "ftrace")
	spec := testenv.Run(t, dir, ftrace, "args", "--spec", "retval", prog, "mkbig2")
	if !strings.Contains(spec, "@retval/a%x8") {
		t.Fatalf("ftrace args --spec retval: %q, want the result at the entry's x8", spec)
	}
	out, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_RETVAL=" + strings.TrimSpace(spec)}, "4")
	if ws.ExitStatus() != 0 {
		t.Fatalf("status %v, output %q", ws, out)
	}
	// the result shows at the closing brace of the call (mkbig2 calls mkbig)
	var want, got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) == 4 {
			want = append(want, "} = "+f[2]+" /* mkbig2 */")
		}
	}
	for _, l := range strings.Split(testenv.Run(t, dir, ftrace, "graph", "ftrace.dat"), "\n") {
		if _, c, ok := strings.Cut(l, "|  "); ok && strings.HasSuffix(c, "/* mkbig2 */") {
			got = append(got, strings.TrimSpace(c))
		}
	}
	if len(want) != 4 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("graph shows %q, the program says %q", got, want)
	}
}

// A real program on arm64: Debian's zlib and its test/example.c, built the ftkit way
// (every file with -fpatchable-function-entry=2 and recordmcount, ftlink on the program),
// run under qemu traced by each tracer: the output is the untraced one, the traces are
// complete, and both tracers see the same calls of the same functions (every graph entry
// with its exit).
func TestArm64Zlib(t *testing.T) {
	if testing.Short() {
		t.Skip("real-world build")
	}
	b := a64Runtime(t)
	src := testenv.DebianSource(t, "zlib")
	dir := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(src, "*.c"))
	files = append(files, filepath.Join(src, "test", "example.c"))
	var objs []string
	for _, f := range files {
		obj := filepath.Join(dir, strings.TrimSuffix(filepath.Base(f), ".c")+".o")
		testenv.Run(t, dir, a64CC, "-O2", "-g", "-fpatchable-function-entry=2", "-DHAVE_UNISTD_H", "-DHAVE_STDARG_H",
			"-I", src, "-c", f, "-o", obj)
		testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
		objs = append(objs, obj)
	}
	prog := filepath.Join(dir, "example")
	testenv.Run(t, dir, a64CC, append(objs, "-rdynamic", "-Wl,-u,__fentry__", "-L"+filepath.Join(b, "lib"),
		"-lftrt", "-lpthread", "-ldl", "-o", prog)...)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)
	plain, pws := a64Run(t, dir, prog, nil)
	if pws.ExitStatus() != 0 || !strings.Contains(plain, "inflate with dictionary: hello, hello!") {
		t.Fatalf("untraced example: %v\n%s", pws, plain)
	}
	calls := map[string]map[string]int{}
	for _, tracer := range []string{"function", "function_graph"} {
		dat := filepath.Join(dir, tracer+".dat")
		out, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + dat, "FTRACE_NO_LOSS=1"})
		if out != plain || ws != pws {
			t.Fatalf("%s: output or status changed (%v):\n%s", tracer, ws, out)
		}
		tr := trRead(t, dat)
		a64CheckComplete(t, tr)
		s := trSymbols(t, tr, prog)
		calls[tracer] = map[string]int{}
		for _, th := range tr.Threads {
			if th.Lost != 0 {
				t.Errorf("%s: %d events lost", tracer, th.Lost)
			}
			if tracer == "function" {
				for _, r := range th.Recs {
					calls[tracer][s.name(r.IP)]++
				}
				continue
			}
			entries, unwound, open := trGraph(t, th, s)
			if len(unwound) != 0 || open != 0 {
				t.Errorf("graph: unwound %v, %d frames open", unwound, open)
			}
			calls[tracer] = entries
		}
	}
	fn, fg := calls["function"], calls["function_graph"]
	if fmt.Sprint(fn) != fmt.Sprint(fg) {
		t.Errorf("calls per function differ:\nfunction       %v\nfunction_graph %v", fn, fg)
	}
	total := 0
	for _, n := range fn {
		total += n
	}
	t.Logf("%d calls of %d functions, the same under both tracers", total, len(fn))
	for _, f := range []string{"deflate", "inflate", "crc32", "adler32"} {
		if fn[f] == 0 {
			t.Errorf("%s never traced (%d functions seen)", f, len(fn))
		}
	}
}

// a64BuildCxx is a64Build for a C++ file of runtime/tests.
func a64BuildCxx(t *testing.T, dir, name, src string, cflags ...string) string {
	t.Helper()
	b := a64Runtime(t)
	cxx := strings.Replace(a64CC, "gcc", "g++", 1)
	testenv.Need(t, cxx)
	obj, prog := filepath.Join(dir, name+".o"), filepath.Join(dir, name)
	testenv.Run(t, dir, cxx, append(append([]string{"-O2", "-g", "-fpatchable-function-entry=2", "-I", filepath.Join(b, "include")},
		cflags...), "-c", filepath.Join(testenv.Root(), "runtime", "tests", src), "-o", obj)...)
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
	testenv.Run(t, dir, cxx, obj, "-rdynamic", "-Wl,-u,__fentry__", "-L"+filepath.Join(b, "lib"), "-lftrt",
		"-lpthread", "-ldl", "-o", prog)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)
	return prog
}

// Unwinders, C++ exceptions and context switches through graph-hooked frames on arm64: the
// hooked functions saved return_to_handler in their frame records, where the runtime puts
// the real return addresses back (found on the frame-pointer chain) before
// _Unwind_Backtrace, backtrace() and a throw walk them, and before swapcontext leaves the
// frames to return untraced. The programs print what the unwinders saw, what was caught,
// what the coroutines computed: the same traced and untraced; the graph closes the frames
// left by the exceptions as unwound and the others normally. With pointer authentication
// (-mbranch-protection=standard, Debian's default on arm64) the frame records hold
// return_to_handler signed, and the real addresses go back signed: the fmt trial's tests
// died at their first throw, backtrace() and pthread_exit likewise.
func TestArm64UnwindAndExceptions(t *testing.T) {
	dir := t.TempDir()
	type prog struct {
		name, src string
		args      []string
		cflags    []string
	}
	var progs []prog
	for _, bp := range [][]string{nil, {"-mbranch-protection=standard"}} {
		progs = append(progs, prog{"trace_unwind", "trace_unwind.c", nil, bp}, prog{"trace_cxx", "trace_cxx.cc", nil, bp},
			prog{"trace_tailthrow", "trace_tailthrow.cc", nil, bp},
			prog{"trace_ucontext", "trace_ucontext.c", []string{"2000"}, bp},
			// raw: libc's own swapcontext, unseen by the runtime: frames return on other stacks
			prog{"trace_ucontext", "trace_ucontext.c", []string{"raw"}, bp})
	}
	for k, p := range progs {
		prog := ""
		name := fmt.Sprintf("%s-%d", p.name, k)
		if strings.HasSuffix(p.src, ".cc") {
			prog = a64BuildCxx(t, dir, name, p.src, p.cflags...)
		} else {
			prog = a64Build(t, dir, name, p.src, p.cflags...)
		}
		plain, pws := a64Run(t, dir, prog, nil, p.args...)
		dat := filepath.Join(dir, name+".dat")
		out, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=" + dat}, p.args...)
		if out != plain || ws != pws || pws.ExitStatus() != 0 {
			t.Fatalf("%s %v: traced %q (%v), untraced %q (%v)", p.name, p.cflags, out, ws, plain, pws)
		}
		tr := trRead(t, dat)
		a64CheckComplete(t, tr)
		entries, unwound, open := trGraph(t, tr.Threads[0], trSymbols(t, tr, prog))
		if p.name == "trace_ucontext" {
			// leaf and between never switch: each call is graphed with its own exit
			var steps, jumps, nleaf, nbetween int
			var sum uint64
			fmt.Sscanf(out, "steps %d\njumps %d sum %d leaf %d between %d", &steps, &jumps, &sum, &nleaf, &nbetween)
			if nleaf == 0 || entries["leaf"] != nleaf || unwound["leaf"] != 0 || entries["between"] != nbetween || unwound["between"] != 0 {
				t.Errorf("leaf %d (%d unwound), between %d (%d unwound); the program made %d and %d",
					entries["leaf"], unwound["leaf"], entries["between"], unwound["between"], nleaf, nbetween)
			}
		}
		if open != 0 || len(entries) < 3 {
			t.Errorf("%s: %d frames open, entries %v", p.name, open, entries)
		}
		if p.name == "trace_cxx" && unwound["thrower(int)"] == 0 && unwound["_Z7throweri"] == 0 {
			t.Errorf("%s: no thrower frame closed as unwound: %v", p.name, unwound)
		}
		if p.name == "trace_tailthrow" && (plain != "caught 42\ncaught 43\ncaught 44\n" || unwound["_Z5inneri"] != 3 || unwound["_Z5outeri"] != 3) {
			t.Errorf("%s: output %q, unwound %v: want three throws, inner and outer unwound each time", p.name, plain, unwound)
		}
	}
	// a CPU without pointer authentication runs the same code (its hints do nothing): what
	// the frames saved is taken as it is, orphans included (raw switches)
	uc := a64Build(t, dir, "uc-nopac", "trace_ucontext.c", "-mbranch-protection=standard")
	for _, args := range [][]string{{"2000"}, {"raw", "2000"}} {
		plain, _ := a64Run(t, dir, uc, []string{"QEMU_CPU=cortex-a57"}, args...)
		out, ws := a64Run(t, dir, uc, []string{"QEMU_CPU=cortex-a57", "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=" + filepath.Join(dir, "nopac.dat")}, args...)
		if out != plain || ws.ExitStatus() != 0 {
			t.Errorf("no pointer authentication, %v: traced %q (%v), untraced %q", args, out, ws, plain)
		}
	}
	// pthread_exit unwinds the thread's hooked frames (their real addresses put back, signed)
	pexit := a64Build(t, dir, "pexit", a64PexitSrc, "-mbranch-protection=standard")
	plain, _ := a64Run(t, dir, pexit, nil)
	for i := 0; i < 5; i++ { // the signatures change with each process's keys
		out, ws := a64Run(t, dir, pexit, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=" + filepath.Join(dir, "pexit.dat")})
		if out != plain || plain != "ret=7\n" || ws.ExitStatus() != 0 {
			t.Fatalf("pthread_exit: traced %q (%v), untraced %q", out, ws, plain)
		}
	}
}

const a64PexitSrc = `#include <stdio.h>
#include <pthread.h>
__attribute__((noinline)) void texit(void) { pthread_exit((void *)7); }
__attribute__((noinline)) void *thr(void *a) { texit(); return a; }
int main(void)
{
	pthread_t t;
	void *r;

	pthread_create(&t, 0, thr, 0);
	pthread_join(t, &r);
	printf("ret=%ld\n", (long)r);
	return 0;
}
`

// a64SiteState reads what trace_fib_state.c wrote of fib's site: state, the bl's offset
// from fib's entry, the number of ops.
func a64SiteState(t *testing.T, dir string) (state, off, nops int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(string(b), &state, &off, &nops); err != nil {
		t.Fatalf("state.txt %q: %v", b, err)
	}
	return state, off, nops
}

const a64SiteCallops = 7 // FTRACE_SITE_CALLOPS

// CALL_OPS on arm64: -fpatchable-function-entry=4,2 puts the 8-byte slot before each
// function; the tracers' ops runs from the site's cell through ftrace_callops_caller.
// fib(15) under both tracers (exact counts, nesting and depth), with and without bti c
// (which moves the site by 4); fib's site is a CALL_OPS site while traced, and an
// ordinary one with FTRT_CALLOPS=0.
func TestArm64CallopsFib(t *testing.T) {
	for _, v := range []struct {
		name  string
		flags []string
		off   int // the bl from fib's entry
	}{
		{"plain", nil, 4},
		{"bti-pac", []string{"-mbranch-protection=standard"}, 8},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			prog := a64Build(t, dir, "fib", "trace_fib_state.c", append([]string{"-fpatchable-function-entry=4,2"}, v.flags...)...)
			a64FunctionFib(t, dir, prog)
			if st, off, n := a64SiteState(t, dir); st != a64SiteCallops || off != v.off || n != 1 {
				t.Errorf("function: fib's site: state %d at +%d with %d ops, want CALL_OPS (%d) at +%d with 1", st, off, n, a64SiteCallops, v.off)
			}
			a64GraphFib(t, dir, prog)
			if st, off, n := a64SiteState(t, dir); st != a64SiteCallops || off != v.off || n != 1 {
				t.Errorf("function_graph: fib's site: state %d at +%d with %d ops, want CALL_OPS (%d) at +%d with 1", st, off, n, a64SiteCallops, v.off)
			}
			out, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRT_CALLOPS=0"}, "15")
			if st, _, _ := a64SiteState(t, dir); ws.ExitStatus() != 0 || out != "fib(15) = 610\n" || st == a64SiteCallops || st == 0 {
				t.Errorf("FTRT_CALLOPS=0: %q (%v), fib's site state %d, want traced without CALL_OPS", out, ws, st)
			}
		})
	}
}

// CALL_OPS sites on arm64 decoded from memory (runtime/tests/callops_arm64.c): the site's bl
// reaches a copy of ftrace_callops_caller, the slot before the function points at a cell
// holding the one ops, or the set of two ops (each called once per call); a plain
// (=2) site in the same program gets a trampoline; a cell flipped 400 times while 3
// threads call the site (each call reaches exactly one ops); all off and on again. Under
// qemu-user the runtime's probe must choose guest stores by itself (see the program).
func TestArm64Callops(t *testing.T) {
	clang := []string{"clang", "--target=aarch64-linux-gnu"}
	for _, v := range []struct {
		name    string
		compile []string
		flags   []string
	}{
		{"plain", nil, nil},
		{"bti-pac", nil, []string{"-mbranch-protection=standard"}},
		// clang aligns functions to 4 only: -falign-functions=8 puts the area where the
		// CALL_OPS caller looks (docs/runtime.md, "arm64")
		{"clang", clang, []string{"-falign-functions=8"}},
		{"clang-bti-pac", clang, []string{"-falign-functions=8", "-mbranch-protection=standard"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			prog := a64BuildCC(t, dir, "callops", "callops_arm64.c", v.compile, append([]string{"-fpatchable-function-entry=4,2"}, v.flags...)...)
			out, ws := a64Run(t, dir, prog, nil)
			if ws.ExitStatus() != 0 || out != "ok\n" {
				t.Fatalf("status %v:\n%s", ws, out)
			}
		})
	}
}

// Multi-ops trampolines on arm64 (runtime/tests/multi_arm64.c): a site served by two ops
// calls a clone of exactly their set (decoded from memory), each callback once per call
// with the site's ip, the real parent after a callback swapped the return slot, and the
// argument; 64 ops elsewhere; the regs multi caller; one ops switched on and off 200 times
// under 3 calling threads while the other sees every call once. With and without BTI and
// PAC, and with FTRT_MULTI=0 (the list caller: the same counts).
func TestArm64Multi(t *testing.T) {
	for _, v := range []struct {
		name  string
		flags []string
		env   []string
	}{
		{"plain", nil, nil},
		{"bti-pac", []string{"-mbranch-protection=standard"}, nil},
		{"list", nil, []string{"FTRT_MULTI=0"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			prog := a64Build(t, dir, "multi", "multi_arm64.c", v.flags...)
			out, ws := a64Run(t, dir, prog, v.env)
			if ws.ExitStatus() != 0 || out != "ok\n" {
				t.Fatalf("status %v:\n%s", ws, out)
			}
		})
	}
}

// Direct calls on arm64 (runtime/tests/direct_arm64.c): the site's own bl to a direct
// trampoline, the regs caller entering it behind a tracer and when it is beyond bl's reach,
// ftrace_direct_count, ftrace_direct_fexit clones; with and without BTI and PAC, and with
// BTI enforced (the fexit clone enters the function's body, which is no landing pad).
func TestArm64Direct(t *testing.T) {
	for _, v := range []struct {
		name  string
		flags []string
	}{{"plain", nil}, {"bti-pac", []string{"-mbranch-protection=standard"}}, {"bti-enforced", nil}} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			var prog string
			if v.name == "bti-enforced" {
				prog = a64BuildBTI(t, dir, "direct", filepath.Join(testenv.Root(), "runtime", "tests", "direct_arm64.c"))
			} else {
				prog = a64Build(t, dir, "direct", "direct_arm64.c", v.flags...)
			}
			out, ws := a64Run(t, dir, prog, nil)
			if ws.ExitStatus() != 0 || out != "ok\n" {
				t.Fatalf("status %v:\n%s", ws, out)
			}
		})
	}
}

// A =4,2 function that is not 8-aligned (-Os -falign-functions=4, aligned(4)) has its area
// where the CALL_OPS caller does not look: its site is served as a =2 one (a trampoline),
// and traced all the same.
const a64UnalignedC = `#include <stdio.h>
#include <ftrace.h>
#define F(n) __attribute__((noinline, aligned(4))) int f##n(int x) { __asm__ volatile(""); return x + n; }
F(1) F(2) F(3)
int main(void)
{
	struct ftrace_func_info fi;
	int (*fs[])(int) = { f1, f2, f3 };
	volatile int s = 0;
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 10; k++)
			s += fs[i](k);
	for (int i = 0; i < 3; i++) {
		if (ftrace_lookup_function((unsigned long)fs[i], &fi))
			return 3;
		printf("f%d %lu %d\n", i + 1, (unsigned long)fs[i] % 8, (int)fi.state);
	}
	return 0;
}
`

func TestArm64CallopsUnaligned(t *testing.T) {
	dir := t.TempDir()
	prog := a64Build(t, dir, "unaligned", a64UnalignedC, "-Os", "-falign-functions=4", "-fpatchable-function-entry=4,2")
	out, ws := a64Run(t, dir, prog, []string{"FTRACE_TRACER=function"})
	if ws.ExitStatus() != 0 {
		t.Fatalf("status %v:\n%s", ws, out)
	}
	unaligned := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var name string
		var mod, state int
		if _, err := fmt.Sscan(l, &name, &mod, &state); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		switch {
		case mod == 4 && state == a64SiteCallops:
			t.Errorf("%s (entry 4 mod 8) is a CALL_OPS site", name)
		case mod == 0 && state != a64SiteCallops:
			t.Errorf("%s (entry 8-aligned) in state %d, want CALL_OPS", name, state)
		case state == 0:
			t.Errorf("%s not traced", name)
		}
		if mod == 4 {
			unaligned++
		}
	}
	if unaligned == 0 {
		t.Skipf("gcc aligned every function to 8 bytes:\n%s", out)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	s := trSymbols(t, tr, prog)
	n := map[string]int{}
	for _, r := range tr.Threads[0].Recs {
		n[s.name(r.IP)]++
	}
	if n["f1"] != 10 || n["f2"] != 10 || n["f3"] != 10 {
		t.Errorf("calls %v, want 10 of each f", n)
	}
}

// Live control under qemu-user. qemu keeps its translations of code the guest has run
// and does not see writes through /proc/self/mem, so the runtime's probe (poke.c,
// procmem_runs) must choose guest stores by itself: tick has run before the live switch,
// and its calls after it are traced. Attaching is refused with the reason (qemu gives the
// attach signal another number, which would end the program) and the program runs on.
func TestArm64LiveSwitch(t *testing.T) {
	a64Need(t)
	dir := t.TempDir()
	prog := a64Build(t, dir, "trace_live", "trace_live.c")
	ftrace := testenv.Tool(t, "ftrace")
	run := t.TempDir()
	os.Chmod(run, 0o700)
	live := func(pid int, args ...string) testenv.Result {
		return ftraceIn(ftrace, run, append([]string{"live", fmt.Sprint(pid)}, args...)...)
	}
	qemu := func() *exec.Cmd { q := testenv.QEMUAArch64(prog); return exec.Command(q[0], q[1:]...) }

	p := trStartLiveCmd(t, dir, qemu(), run)
	if r := live(p.cmd.Process.Pid, "status"); r.Code == 0 || !strings.Contains(r.Stderr, "qemu-user") ||
		!strings.Contains(r.Stderr, "FTRACE_CONTROL=1") {
		t.Errorf("attach under qemu: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	fmt.Fprintln(p.stdin, "call 3")
	p.expect("done")

	p = trStartLiveCmd(t, dir, qemu(), run, "FTRACE_CONTROL=1", "FTRT_POKE=")
	pid := p.cmd.Process.Pid
	fmt.Fprintln(p.stdin, "call 5")
	p.expect("done")
	out := filepath.Join(dir, "live.dat")
	liveTicks(t, p, func(args ...string) testenv.Result { return live(pid, args...) }, "function", 7, out)
	rep := testenv.Run(t, dir, ftrace, "report", out)
	if !regexp.MustCompile(`(?m)^\s+7\s+tick\b`).MatchString(rep) {
		t.Errorf("report after a live switch under qemu, want 7 calls of tick:\n%s", rep)
	}
	// args auto reads the guest's DWARF, not qemu's
	if r := live(pid, "args", "auto"); r.Code != 0 {
		t.Fatalf("live args auto: %q", r.Stderr)
	}
	fmt.Fprintln(p.stdin, "call 2")
	p.expect("done")
	if r := live(pid, "snapshot", out); r.Code != 0 {
		t.Fatalf("live snapshot: %q", r.Stderr)
	}
	if d := testenv.Run(t, dir, ftrace, "dump", out); !strings.Contains(d, "tick (i=0) <- calls") || !strings.Contains(d, "tick (i=1) <- calls") {
		t.Errorf("dump after live args auto under qemu, want tick (i=0) and tick (i=1):\n%s", d)
	}
}
