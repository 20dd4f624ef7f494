package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// ftcc with a compiler for aarch64 (Debian's cross gcc, clang --target=aarch64-linux-gnu):
// the objects get the arm64 flags, the program links the aarch64 runtime from
// lib/aarch64-linux-gnu/ (make runtime-aarch64) and runs traced under qemu-user, by both
// tracers, with the output it has untraced; the CALL_OPS build too.
func TestAArch64(t *testing.T) {
	if testing.Short() {
		t.Skip("cross build and qemu")
	}
	testenv.Need(t, "aarch64-linux-gnu-gcc", "qemu-aarch64", "make")
	build, ftcc := builtFtcc(t)
	// a prefix with the built tools and headers, and the aarch64 runtime where ftcc looks
	prefix := t.TempDir()
	for _, d := range []string{"bin", "include"} {
		if err := os.Symlink(filepath.Join(build, d), filepath.Join(prefix, d)); err != nil {
			t.Fatal(err)
		}
	}
	cross := testenv.AArch64Runtime(t)
	lib := filepath.Join(prefix, "lib", "aarch64-linux-gnu")
	os.MkdirAll(lib, 0o755)
	if b, err := os.ReadFile(filepath.Join(cross, "lib", "libftrt.a")); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(filepath.Join(lib, "libftrt.a"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// the host's runtime beside it must not be taken
	os.Symlink(filepath.Join(build, "lib", "libftrt.a"), filepath.Join(prefix, "lib", "libftrt.a"))
	t.Setenv("FTCC_PREFIX", prefix)

	src := `#include <stdio.h>
__attribute__((noinline)) int leaf(int n) { __asm__ volatile(""); return n + 1; }
__attribute__((noinline)) int mid(int n) { return leaf(n) * 2; }
int main(void) { int s = 0; for (int i = 0; i < 100; i++) s += mid(i); printf("s=%d\n", s); return 0; }
`
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.c"), []byte(src), 0o644)
	ftrace := filepath.Join(build, "bin", "ftrace")
	clang := []string{"clang", "--target=aarch64-linux-gnu"}
	for _, c := range []struct {
		name    string
		compile []string // the compiler of p.c (the cross gcc links)
		flags   []string
	}{
		{"gcc", []string{"aarch64-linux-gnu-gcc"}, nil},
		{"gcc-callops", []string{"aarch64-linux-gnu-gcc"}, []string{"--ftrace-callops"}},
		{"clang", clang, nil},
		{"clang-callops", clang, []string{"--ftrace-callops"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testenv.Need(t, c.compile[0])
			obj, prog := filepath.Join(dir, c.name+".o"), filepath.Join(dir, c.name)
			testenv.Run(t, dir, ftcc, append(append(append([]string{}, c.compile...), c.flags...), "-O2", "-c", "p.c", "-o", obj)...)
			testenv.Run(t, dir, ftcc, "aarch64-linux-gnu-gcc", obj, "-o", prog)
			qemu := func(env ...string) string {
				q := testenv.QEMUAArch64(prog)
				cmd := exec.Command(q[0], q[1:]...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), env...)
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s %v: %v", prog, env, err)
				}
				return string(out)
			}
			plain := qemu()
			if plain != "s=10100\n" {
				t.Fatalf("untraced: %q", plain)
			}
			for _, tracer := range []string{"function_graph", "function"} {
				out := filepath.Join(dir, c.name+"-"+tracer+".dat")
				if got := qemu("FTRACE_TRACER="+tracer, "FTRACE_OUTPUT="+out); got != plain {
					t.Errorf("%s: output %q, untraced %q", tracer, got, plain)
				}
				rep := testenv.Run(t, dir, ftrace, "report", out)
				for _, fn := range []string{"leaf", "mid"} {
					found := false
					for _, l := range strings.Split(rep, "\n") {
						f := strings.Fields(l)
						if len(f) > 0 && f[0] == "100" && f[len(f)-1] == fn {
							found = true
						}
					}
					if !found {
						t.Errorf("%s: %s not called 100 times:\n%s", tracer, fn, rep)
					}
				}
			}
		})
	}
}
