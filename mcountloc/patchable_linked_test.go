package mcountloc_test

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
)

// TestLinkedPatchable links -fpatchable-function-entry objects run through recordmcount
// (C, and C++ with COMDAT templates) as PIE, non-PIE and shared library, with and without
// -ffunction-sections + --gc-sections, and runs ftlink's library on them: every entry is
// good, the functions with an entry are exactly the recorded functions that survived the
// link, no TEXTREL, the rewrite is idempotent and --check-clean, and the program behaves as
// before (aarch64 under qemu-aarch64 when installed).
func TestLinkedPatchable(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, cxxFiles)
	writeFiles(t, dir, map[string]string{"t.c": oracleC + patchLoopC})
	type config struct {
		c     patchCompiler
		flags string
	}
	var cfgs []config
	for _, c := range patchCompilers {
		if len(c.target) > 0 || !c.usable(t, dir) {
			continue // clang --target: no cross linker set up for it
		}
		if c.unit == 4 {
			cfgs = append(cfgs, config{c, "-fpatchable-function-entry=2"}, config{c, "-fpatchable-function-entry=4,2 " + c.padFlag})
		} else {
			cfgs = append(cfgs, config{c, "-fpatchable-function-entry=5"}, config{c, "-fpatchable-function-entry=9,4 " + c.padFlag})
		}
	}
	if len(cfgs) == 0 {
		t.Skip("no compiler for -fpatchable-function-entry")
	}
	n := 0
	for _, cfg := range cfgs {
		for _, lang := range []string{"c", "c++"} {
			if lang == "c++" && cfg.c.cxx == "" {
				continue
			}
			for _, link := range []string{"-pie", "-no-pie", "-shared"} {
				for _, gc := range []bool{false, true} {
					if gc && link != "-pie" {
						continue
					}
					n++
					base := fmt.Sprintf("p%d", n)
					name := fmt.Sprintf("%s/%s/%s/%s", cfg.c.name, strings.ReplaceAll(cfg.flags, " ", ""), lang, link)
					if gc {
						name += "/gc"
					}
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						linkedPatchableCase(t, dir, base, cfg.c, lang, cfg.flags, link, gc)
					})
				}
			}
		}
	}
}

func linkedPatchableCase(t *testing.T, dir, base string, c patchCompiler, lang, flags, link string, gc bool) {
	cc, srcs := c.cc, []string{"t.c"}
	if lang == "c++" {
		cc, srcs = c.cxx, []string{"a.cc", "b.cc", "c.cc", "main.cc"}
	}
	cflags := append([]string{"-O2"}, strings.Fields(flags)...)
	switch link {
	case "-shared":
		cflags = append(cflags, "-fPIC")
	case "-no-pie":
		cflags = append(cflags, "-fno-pie")
	default:
		cflags = append(cflags, "-fPIE")
	}
	if gc {
		cflags = append(cflags, "-ffunction-sections")
	}
	var objs []string
	recorded := map[string]bool{}
	for _, src := range srcs {
		obj := filepath.Join(dir, base+"-"+strings.TrimSuffix(src, filepath.Ext(src))+".o")
		testenv.Run(t, dir, cc, append(append([]string{}, cflags...), "-c", src, "-o", obj)...)
		for _, s := range record(t, obj).Sites {
			recorded[s.Func] = true
		}
		objs = append(objs, obj)
	}
	out := filepath.Join(dir, base+"-out")
	largs := append(append([]string{link}, objs...), "-o", out)
	if gc {
		largs = append(largs, "-Wl,--gc-sections")
	}
	if r := testenv.Exec(t, dir, cc, largs...); r.Code != 0 || r.Stderr != "" {
		t.Fatalf("link %v: exit %d\n%s", largs, r.Code, r.Stderr)
	}
	checkNoTextrel(t, out)
	before := runProg(t, c, out, link)

	data := mustRead(t, out)
	l, err := mcountloc.OpenLinked(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bad, dups := l.Problems(); bad+dups > 0 {
		for _, s := range l.Sites {
			if !s.Good() {
				t.Errorf("slot %d (%s): %v dup %v", s.Slot, s.Func, s.Err, s.Dup)
			}
		}
		t.FailNow()
	}
	// The functions with an entry are the recorded ones that are still in the file (by
	// address: aliases such as C++ D1/D2 destructors name one function).
	var got, want []uint64
	for _, s := range l.Sites {
		got = append(got, s.FuncAt)
		if s.Kind != mcountloc.KindNops {
			t.Errorf("site %#x (%s): kind %v", s.Addr, s.Func, s.Kind)
		}
	}
	f := openELF(t, data)
	syms, _ := f.Symbols()
	seen := map[string]bool{}
	at := map[uint64]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF && recorded[s.Name] {
			seen[s.Name] = true
			if !at[s.Value] {
				at[s.Value] = true
				want = append(want, s.Value)
			}
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(got) < 6 {
		t.Fatalf("functions with an entry\n%#x\nwant\n%#x", got, want)
	}
	if gc && lang == "c" && link != "-shared" && seen["ext"] {
		t.Error("--gc-sections kept the unused ext")
	}

	nb, err := l.Rewrite()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, nb, 0o755); err != nil {
		t.Fatal(err)
	}
	l2, err := mcountloc.OpenLinked(nb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !l2.Processed || len(l2.Sites) != len(l.Sites) {
		t.Fatalf("after the rewrite: processed %v, %d sites (had %d)", l2.Processed, len(l2.Sites), len(l.Sites))
	}
	if p := l2.CheckProcessed(); len(p) > 0 {
		t.Fatalf("check after the rewrite: %q", p)
	}
	if again, _ := l2.Rewrite(); !bytes.Equal(again, nb) {
		t.Error("second rewrite changed the file")
	}
	for _, s := range l2.Sites {
		if s.Pre != 0 && !strings.Contains(flags, ",") || s.Pad && !strings.Contains(flags, c.padFlag) {
			t.Errorf("site %#x (%s): pad %v pre %d with %s", s.Addr, s.Func, s.Pad, s.Pre, flags)
		}
	}
	if after := runProg(t, c, out, link); after != before {
		t.Errorf("the program behaves differently after ftlink:\n%s\nbefore:\n%s", after, before)
	}
}

// runProg runs a linked program (natively, or aarch64 under qemu-aarch64) and returns its
// exit status and output; "" for a shared library or when it cannot be run here.
func runProg(t *testing.T, c patchCompiler, path, link string) string {
	if link == "-shared" {
		return ""
	}
	var cmd *exec.Cmd
	if c.unit == 4 {
		if _, err := exec.LookPath("qemu-aarch64"); err != nil {
			return ""
		}
		q := testenv.QEMUAArch64(path)
		cmd = exec.Command(q[0], q[1:]...)
	} else {
		cmd = exec.Command(path)
	}
	var o bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &o
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if strings.Contains(o.String(), "Invalid ELF") || code == 127 {
		t.Fatalf("%s cannot run: %s", path, o.String())
	}
	return fmt.Sprintf("exit %d\n%s", code, o.String())
}
