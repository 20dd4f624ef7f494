// Command ftcc is a compiler wrapper that builds programs the ftkit way:
//
//	make CC="ftcc gcc" CXX="ftcc g++"
//	./configure CC="ftcc gcc"; cmake -DCMAKE_C_COMPILER_LAUNCHER=ftcc …
//
// It runs the compiler it is given with the same arguments, and adds the ftkit steps:
// C and C++ sources compiled to objects get -pg -mfentry (aarch64 targets:
// -fpatchable-function-entry=2; target.go) and their objects go through recordmcount;
// executables are linked with the runtime built for the target (-rdynamic,
// -Wl,-u,__fentry__, libftrt.a); linked programs and shared libraries with call-site tables go through
// ftlink. Everything else (preprocessing, -S, probes such as --version, assembler
// sources, depfiles) passes through unchanged. See docs/ftcc.md.
package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// stepError names the step that failed; the message is already complete.
type stepError struct{ msg string }

func (e *stepError) Error() string { return e.msg }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	w := &wrapper{stdin: stdin, stdout: stdout, stderr: stderr}
	code, err := w.main(args)
	if err != nil {
		fmt.Fprintf(stderr, "ftcc: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

type wrapper struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	verbose        bool
	callops        bool     // --ftrace-callops: an 8-byte slot before each function
	off            []string // --ftrace-off globs
	prefix         string   // where lib/libftrt.a and the tools are
	toolDir        string
	gcc            *bool   // the compiler is gcc (asked once: instrumentFor)
	tgt            *target // what it builds for (asked once)
}

func (w *wrapper) main(argv []string) (int, error) {
	if len(argv) == 1 && argv[0] == "--man" {
		fmt.Fprint(w.stdout, manPage())
		return 0, nil
	}
	if len(argv) == 0 || argv[0] == "--help" || argv[0] == "-h" {
		fmt.Fprint(w.stderr, usage)
		if len(argv) == 0 {
			return 2, nil
		}
		return 0, nil
	}
	// ftcc's own options, wherever they are (before the compiler too: ftcc --ftrace-off=x
	// g++ ... ran cc with g++ as an input file)
	var rest []string
	for _, a := range argv {
		switch {
		case strings.HasPrefix(a, "--ftrace-off="):
			w.off = append(w.off, splitGlobs(strings.TrimPrefix(a, "--ftrace-off="))...)
		case a == "--ftrace-verbose":
			w.verbose = true
		case a == "--ftrace-callops":
			w.callops = true
		default:
			rest = append(rest, a)
		}
	}
	if len(rest) == 0 {
		fmt.Fprint(w.stderr, usage)
		return 2, nil
	}
	// ftcc COMPILER ARGS..., or ftcc ARGS... (CC=ftcc) with $FTCC_CC, else cc
	cc, args := rest[0], rest[1:]
	if strings.HasPrefix(cc, "-") || byExtension(cc) != langLinkInput || strings.HasSuffix(cc, ".o") {
		cc, args = os.Getenv("FTCC_CC"), rest
		if cc == "" {
			cc = "cc"
		}
	}
	w.off = append(w.off, splitGlobs(os.Getenv("FTCC_OFF"))...)
	w.verbose = w.verbose || os.Getenv("FTCC_VERBOSE") == "1"
	w.callops = w.callops || os.Getenv("FTCC_CALLOPS") == "1"
	w.locate()

	inv, err := parse(args)
	if err != nil {
		return 1, err
	}
	switch {
	case inv.passThrough():
		return w.compiler(cc, args)
	case inv.compileOnly:
		return w.compile(cc, args, inv)
	default:
		return w.link(cc, args, inv)
	}
}

const usage = `usage: ftcc COMPILER [ARGS...]    e.g. make CC="ftcc gcc" CXX="ftcc g++"
       ftcc [ARGS...]             the compiler is $FTCC_CC, else cc (make CC=ftcc)
ftcc's own options (--ftrace-*) may go anywhere, before COMPILER too.

Compiles C/C++ sources with -pg -mfentry (x86-64; aarch64: -fpatchable-function-entry=2,
after COMPILER -dumpmachine) and records their call sites (recordmcount), links executables
with the ftkit runtime built for that target and runs ftlink on what it links; everything
else passes through to COMPILER unchanged.

  --ftrace-off=GLOB[,GLOB]  leave matching sources uninstrumented (also FTCC_OFF)
  --ftrace-verbose          say each ftkit step on stderr (also FTCC_VERBOSE=1)
  --ftrace-callops          per-call-site ops: also -fpatchable-function-entry=8,8
                            -falign-functions=16 (aarch64: =4,2 -falign-functions=8)
                            (also FTCC_CALLOPS=1; docs/runtime.md)
  FTCC_PREFIX               where lib/libftrt.a (lib/<triple>/libftrt.a for another
                            target), include/ and bin/ are (default: the directory
                            above ftcc's own)
`

// manPage is the usage as a troff page (make install writes it; the other tools generate
// theirs from their urfave/cli help).
func manPage() string {
	var b strings.Builder
	b.WriteString(".TH ftcc 1\n.SH NAME\nftcc \\- compiler wrapper that builds programs for ftkit tracing\n.SH SYNOPSIS\n.nf\n")
	for _, l := range strings.Split(strings.TrimRight(usage, "\n"), "\n") {
		b.WriteString(strings.ReplaceAll(l, "\\", "\\\\") + "\n")
	}
	b.WriteString(".fi\n.SH SEE ALSO\nrecordmcount(1), ftlink(1), ftrace(1)\n")
	return b.String()
}

func splitGlobs(s string) []string {
	var out []string
	for _, g := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, g)
	}
	return out
}

// locate finds the runtime and the tools: FTCC_PREFIX, else ftcc's own prefix.
func (w *wrapper) locate() {
	exe, err := os.Executable()
	if err == nil {
		exe, _ = filepath.EvalSymlinks(exe)
		w.toolDir = filepath.Dir(exe)
		w.prefix = filepath.Dir(w.toolDir)
	}
	if p := os.Getenv("FTCC_PREFIX"); p != "" {
		w.prefix = p
		w.toolDir = filepath.Join(p, "bin")
	}
}

func (w *wrapper) tool(name string) string {
	if w.toolDir != "" {
		if p := filepath.Join(w.toolDir, name); isFile(p) {
			return p
		}
	}
	return name // from PATH
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func (w *wrapper) say(format string, a ...any) {
	if w.verbose {
		fmt.Fprintf(w.stderr, "ftcc: "+format+"\n", a...)
	}
}

// compiler runs the compiler with args as they are, its status returned as ours.
func (w *wrapper) compiler(cc string, args []string) (int, error) {
	cmd := exec.Command(cc, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = w.stdin, w.stdout, w.stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil // the compiler said why
	}
	if err != nil {
		return 1, fmt.Errorf("running %s: %w", cc, err)
	}
	return 0, nil
}

// step runs one ftkit tool; its failure names the step and the file.
func (w *wrapper) step(tool string, file string, extra ...string) error {
	w.say("%s %s", tool, file)
	cmd := exec.Command(w.tool(tool), append(extra, file)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = err.Error()
		}
		return &stepError{fmt.Sprintf("%s %s failed: %s", tool, file, msg)}
	}
	return nil
}

// instrumented reports whether src is to be compiled with the instrumentation flags.
func (w *wrapper) instrumented(src source) bool {
	if !src.lang.instrumentable() {
		return false
	}
	for _, g := range w.off {
		if ok, _ := filepath.Match(g, src.path); ok {
			return false
		}
		if ok, _ := filepath.Match(g, filepath.Base(src.path)); ok {
			return false
		}
	}
	return true
}

// instrumentFor is the flags that make cc's functions traceable (target.instrument), for
// the target of args. gcc gets -fno-ipa-ra too: it turns interprocedural register
// allocation back on for functions with an optimize attribute even under -pg, and its
// callers then rely on registers the tracers' code may use. (clang has no such option and
// no such allocation across instrumented functions.)
func (w *wrapper) instrumentFor(cc string, args []string) ([]string, error) {
	if w.gcc == nil {
		out, err := exec.Command(cc, "--version").Output()
		gcc := err == nil && !strings.Contains(strings.ToLower(string(out)), "clang")
		w.gcc = &gcc
	}
	flags, err := w.target(cc, args).instrument(w.callops)
	if err != nil {
		return nil, err
	}
	if *w.gcc {
		flags = append(flags, "-fno-ipa-ra")
	}
	// the runtime's headers (ftrace_trace.h: markers, live control from the program),
	// searched after the program's own
	if inc := filepath.Join(w.prefix, "include"); fileExists(filepath.Join(inc, "ftrace_trace.h")) {
		flags = append(flags, "-idirafter", inc)
	}
	return flags, nil
}

func (w *wrapper) target(cc string, args []string) target {
	if w.tgt == nil {
		t := targetOf(cc, args)
		w.tgt = &t
	}
	return *w.tgt
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// compile handles -c: instrumented sources get the flags and their objects are recorded;
// a command mixing instrumented and --ftrace-off sources is run once for each kind.
func (w *wrapper) compile(cc string, args []string, inv *invocation) (int, error) {
	var on, off []source
	for _, s := range inv.sources {
		if w.instrumented(s) {
			on = append(on, s)
		} else {
			off = append(off, s)
		}
	}
	if len(on) == 0 {
		return w.compiler(cc, args)
	}
	if len(off) > 0 {
		// one run per kind: the other kind's sources left out of the arguments
		if code, err := w.compiler(cc, inv.without(on)); code != 0 || err != nil {
			return code, err
		}
		args = inv.without(off)
	}
	iflags, err := w.instrumentFor(cc, args)
	if err != nil {
		return 1, err
	}
	if code, err := w.compiler(cc, append(append([]string{}, args...), iflags...)); code != 0 || err != nil {
		return code, err
	}
	for _, obj := range inv.objects(on) {
		if obj == "-" {
			continue // written to stdout: nothing to record
		}
		if err := w.step("recordmcount", obj); err != nil {
			return 1, err
		}
	}
	return 0, nil
}

// link handles a link, with or without sources to compile first.
func (w *wrapper) link(cc string, args []string, inv *invocation) (int, error) {
	linkArgs := append([]string{}, args...)
	if len(inv.sources) > 0 {
		tmp, err := os.MkdirTemp("", "ftcc-")
		if err != nil {
			return 1, err
		}
		defer os.RemoveAll(tmp)
		cflags := inv.compileFlags()
		objs := map[int]string{}
		for i, s := range inv.sources {
			if !w.instrumented(s) {
				continue // compiled by the link command itself, as it was
			}
			obj := filepath.Join(tmp, fmt.Sprintf("%d-%s.o", i, strings.TrimSuffix(filepath.Base(s.path), filepath.Ext(s.path))))
			iflags, err := w.instrumentFor(cc, args)
			if err != nil {
				return 1, err
			}
			cargs := append(append(append([]string{}, cflags...), iflags...), s.langArgs()...)
			cargs = append(cargs, "-c", s.path, "-o", obj)
			if code, err := w.compiler(cc, cargs); code != 0 || err != nil {
				return code, err
			}
			if err := w.step("recordmcount", obj); err != nil {
				return 1, err
			}
			objs[s.index] = obj
		}
		if len(objs) > 0 {
			linkArgs = inv.linkWith(objs)
		}
	}
	if why, instead := inv.noRuntime(); why != "" {
		// still linked, its sites made nops by ftlink: the program runs as it would untraced.
		// Said only when asked: configure probes read any stderr as a failure (libtool's
		// "static flag -static works" answered no, and libtool dropped -all-static).
		// ftrace record says it when the program runs.
		w.say("%s: linked without the ftkit runtime (%s); it runs untraced, its call sites nops (%s)",
			inv.output(), why, instead)
	} else if inv.executable() {
		lib, err := w.target(cc, args).runtimeLib(w.prefix)
		if err != nil {
			return 1, fmt.Errorf("linking %s: %w", inv.output(), err)
		}
		// -rdynamic: instrumented libraries find __fentry__ and names resolve;
		// -u __fentry__: the runtime is linked even when only libraries are instrumented;
		// -x none: a language still in force (-x c -) must not make the archive a source
		linkArgs = append(linkArgs, "-x", "none", "-rdynamic", "-Wl,-u,__fentry__", lib, "-lpthread", "-ldl")
	}
	if code, err := w.compiler(cc, linkArgs); code != 0 || err != nil {
		return code, err
	}
	// a relocatable link (-r) makes an object: ftlink runs on the program it goes into
	if out := inv.output(); out != "-" && !inv.relocatable && hasTable(out) {
		if err := w.step("ftlink", out); err != nil {
			return 1, err
		}
	}
	return 0, nil
}

// hasTable reports whether a linked file has a call-site table for ftlink.
func hasTable(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Section("__mcount_loc") != nil
}
