package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

const dlLibSrc = `__attribute__((noinline)) int plugin_square(int x) { return x * x; }
int plugin_run(int n) { int s = 0; for (int i = 0; i < n; i++) s += plugin_square(i); return s; }
`

const dlProgSrc = `#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	int total = 0;
	for (int round = 0; round < 3; round++) {
		void *h = dlopen(argv[1], RTLD_NOW);
		if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
		int (*run)(int) = (int (*)(int))dlsym(h, "plugin_run");
		total += run(4);
		dlclose(h);
	}
	printf("total=%d\n", total);
	return argc == 2 ? 0 : 1;
}
`

// TestDlcloseNamed: a traced library dlopen'ed, called and dlclose'd (three times) before
// the program ends: every reader names its functions, not raw 0x7f… addresses.
func TestDlcloseNamed(t *testing.T) {
	testenv.Need(t, "gcc")
	lib, _ := testenv.Runtime(t)
	dir := t.TempDir()
	writeSrc(t, dir, "plugin.c", dlLibSrc)
	writeSrc(t, dir, "prog.c", dlProgSrc)
	testenv.Run(t, dir, "gcc", "-O2", "-fPIC", "-pg", "-mfentry", "-c", "plugin.c", "-o", "plugin.o")
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), "plugin.o")
	testenv.Run(t, dir, "gcc", "-shared", "-o", "libplugin.so", "plugin.o")
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), "libplugin.so")
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-c", "prog.c", "-o", "prog.o")
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), "prog.o")
	prog := filepath.Join(dir, "prog")
	testenv.Run(t, dir, "gcc", "-rdynamic", "-o", prog, "prog.o", "-L"+lib, "-lftrt", "-lpthread", "-ldl")
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)
	plugin := filepath.Join(dir, "libplugin.so")
	for _, tracer := range []string{"function", "function_graph"} {
		t.Run(tracer, func(t *testing.T) {
			out := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "record", "-q", "-t", tracer, "-o", tracer+".dat", "--", prog, plugin)
			if out != "total=42\n" {
				t.Fatalf("output %q", out)
			}
			_, calls := reportCalls(t, dir, tracer+".dat")
			want := map[string]uint64{"main": 1, "plugin_run": 3, "plugin_square": 12}
			for name, n := range want {
				if calls[name] != n {
					t.Errorf("%s: %d calls, want %d", name, calls[name], n)
				}
			}
			for name := range calls {
				if strings.HasPrefix(name, "0x") {
					t.Errorf("unnamed function %s in %v", name, calls)
				}
			}
			info := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "info", tracer+".dat")
			if !strings.Contains(info, plugin) {
				t.Errorf("the memory map does not name %s:\n%s", plugin, info)
			}
		})
	}
}
