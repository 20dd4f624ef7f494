package fnargs

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rec mirrors struct rec of testdata/harness.c.
type rec struct {
	Kind, Fn, Anchor uint64
	Regs             [6]uint64
	XMM              [8]uint64
	Stack            [8]uint64
	SLen             [7]int64
	Str              [7][64]byte
}

// buildHarnessed compiles src (testdata file) with -pg -mfentry and opts, links it with
// the test __fentry__ of testdata/harness.[cS], runs it and returns its stdout, its
// records and the program's path.
func buildHarnessed(t *testing.T, compiler, src string, opts ...string) (string, []rec, string) {
	t.Helper()
	if _, err := exec.LookPath(compiler); err != nil {
		t.Skipf("needs %s", compiler)
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	abs := func(f string) string { p, _ := filepath.Abs(filepath.Join("testdata", f)); return p }
	run(compiler, append([]string{"-g", "-pg", "-mfentry", "-c", abs(src), "-o", prog + ".o"}, opts...)...)
	run("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-c", abs("harness.c"), "-o", filepath.Join(dir, "h.o"))
	run("gcc", "-c", abs("harness.S"), "-o", filepath.Join(dir, "hs.o"))
	run(compiler, "-o", prog, prog+".o", filepath.Join(dir, "h.o"), filepath.Join(dir, "hs.o"))
	dump := filepath.Join(dir, "dump.bin")
	cmd := exec.Command(prog)
	cmd.Env = append(os.Environ(), "FNARGS_DUMP="+dump)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", prog, err)
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	var recs []rec
	r := bytes.NewReader(b)
	for r.Len() > 0 {
		var x rec
		if err := binary.Read(r, binary.LittleEndian, &x); err != nil {
			t.Fatalf("records: %v", err)
		}
		recs = append(recs, x)
	}
	return string(out), recs, prog
}

// entryValues gathers what a runtime would record of f's arguments from an entry record.
func entryValues(t *testing.T, f *Func, r rec) []Value {
	var vals []Value
	for _, a := range f.Args {
		var v Value
		for _, p := range a.Parts {
			switch {
			case p.Stack:
				if p.Off/8 >= len(r.Stack) {
					t.Fatalf("%s: %s beyond the recorded stack", f.Name, p)
				}
				v.Words = append(v.Words, r.Stack[p.Off/8])
			case p.Reg.IsSSE():
				v.Words = append(v.Words, r.XMM[p.Reg-XMM0])
			default:
				i := -1
				for j, ir := range IntArgRegs {
					if ir == p.Reg {
						i = j
					}
				}
				if i < 0 {
					t.Fatalf("%s: argument in %s", f.Name, p)
				}
				v.Words = append(v.Words, r.Regs[i])
				if a.isString() {
					v = withStr(v, r, i)
				}
			}
		}
		vals = append(vals, v)
	}
	return vals
}

func withStr(v Value, r rec, i int) Value {
	switch n := r.SLen[i]; {
	case n < 0:
		v.StrBad = true
	case n >= 64:
		v.Str, v.StrTrunc = r.Str[i][:], true
	default:
		v.Str = r.Str[i][:n]
	}
	return v
}

func exitValue(t *testing.T, f *Func, r rec) Value {
	var v Value
	for _, p := range f.Ret.Parts {
		switch p.Reg {
		case RAX:
			v.Words = append(v.Words, r.Regs[0])
		case RDX:
			v.Words = append(v.Words, r.Regs[1])
		case XMM0, XMM0 + 1:
			v.Words = append(v.Words, r.XMM[p.Reg-XMM0])
		default:
			t.Fatalf("%s: return value in %s", f.Name, p)
		}
	}
	if f.Ret.isString() {
		v = withStr(v, r, 6)
	}
	return v
}

// harnessLines formats every recorded call (but main's) as `name(args) = ret`, in the
// order the calls were entered: the order in which the test programs print them.
// Only the functions in printers are formatted (at -O0 the C++ program's inline
// members are calls too, and they print nothing).
func harnessLines(t *testing.T, prog string, recs []rec, tab *Table, printers map[string]bool) []string {
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ss, _ := f.Symbols()
	var anchor uint64
	for _, s := range ss {
		if s.Name == "harness_anchor" {
			anchor = s.Value
		}
	}
	type open struct {
		fn    *Func
		line  int
		entry rec
	}
	var stack []open
	var lines []string
	for _, r := range recs {
		fn := tab.ByEntry(r.Fn - (r.Anchor - anchor))
		if r.Kind == 1 {
			if fn == nil {
				t.Fatalf("no plan for the function at %#x", r.Fn-(r.Anchor-anchor))
			}
			stack = append(stack, open{fn, -1, r})
			if printers[fn.Name] {
				stack[len(stack)-1].line = len(lines)
				lines = append(lines, FormatCall(fn, entryValues(t, fn, r), nil))
			}
			continue
		}
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if o.line < 0 || fn.Ret == nil {
			continue
		}
		v := exitValue(t, fn, r)
		ret := FormatValue(fn.Ret, v)
		if fn.Ret.Indirect {
			// a value returned in memory: %rax holds the buffer the caller passed in %rdi
			if v.Words[0] != o.entry.Regs[0] {
				t.Errorf("%s: returned %#x, the hidden buffer was %#x", fn.Name, v.Words[0], o.entry.Regs[0])
			}
			ret = "<memory>"
		}
		lines[o.line] += " = " + ret
	}
	return lines
}

// TestHarness runs C and C++ programs whose functions print the arguments they
// received, under a test __fentry__ that records the registers and entry stack, and
// checks that the plans and the formatter turn the records into the same text.
func TestHarness(t *testing.T) {
	for _, tt := range []struct{ compiler, src, opt, extra string }{
		{"gcc", "args.c", "-O0", ""}, {"gcc", "args.c", "-O2", ""},
		{"gcc", "args.c", "-O2", "-fcf-protection"}, {"gcc", "args.c", "-O1", ""},
		{"g++", "args.cc", "-O0", ""}, {"g++", "args.cc", "-O2", ""}, {"g++", "args.cc", "-O3", ""},
	} {
		opt := tt.opt
		t.Run(tt.src+tt.opt+tt.extra, func(t *testing.T) {
			opts := []string{opt}
			if tt.extra != "" {
				opts = append(opts, tt.extra)
			}
			out, recs, prog := buildHarnessed(t, tt.compiler, tt.src, opts...)
			tab, err := Load(prog)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			printers := map[string]bool{}
			for _, l := range want {
				i := strings.IndexByte(l, '(')
				if i < 0 {
					t.Fatalf("unexpected program output %q", l)
				}
				printers[l[:i]] = true
			}
			got := harnessLines(t, prog, recs, tab, printers)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("from the recorded registers:\n%s\nthe program printed:\n%s", strings.Join(got, "\n"), out)
			}
			confirmed := 0
			for _, fn := range tab.Funcs {
				if fn.Unsure != "" {
					t.Errorf("%s: %s", fn.Name, fn.Unsure)
				}
				for _, a := range fn.Args {
					if a.Confirmed {
						confirmed++
					}
				}
			}
			// -O2: gcc's location lists name the entry registers; -O0 keeps
			// parameters in the frame (no register location to compare)
			if opt != "-O0" && confirmed < 8 {
				t.Errorf("only %d parameters' DWARF entry locations confirm the ABI's", confirmed)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "notelf")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(notELF); err == nil || !strings.Contains(err.Error(), notELF) {
		t.Errorf("not an ELF file: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("needs gcc")
	}
	src := filepath.Join(dir, "s.c")
	os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644)
	prog := filepath.Join(dir, "nodebug")
	if out, err := exec.Command("gcc", "-g0", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	before, _ := os.ReadFile(prog)
	if _, err := Load(prog); err == nil || !strings.Contains(err.Error(), prog) || !strings.Contains(err.Error(), "no DWARF") {
		t.Errorf("no DWARF: %v", err)
	}
	if after, _ := os.ReadFile(prog); !bytes.Equal(before, after) {
		t.Errorf("%s changed", prog)
	}
}
