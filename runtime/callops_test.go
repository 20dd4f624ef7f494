package ftrt

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// callopsVariants: the C program built for CALL_OPS (-fpatchable-function-entry=8,8: an
// 8-byte slot before each function), with plain sources (-pg -mfentry only) mixed in: PIE
// and non-PIE through ftlink, without ftlink (the runtime nops the sites at load), under
// the sanitizers; and built by clang (the same flags). gcc's own tables (-mrecord-mcount)
// say nothing of the slot.
func callopsVariants(srcs []string, plain ...string) []variant {
	return []variant{
		{"pie", prog{srcs: srcs, plain: plain, pie: true, ftlink: true, callops: true}},
		{"clang-pie", prog{srcs: srcs, plain: plain, pie: true, ftlink: true, callops: true, clang: true}},
		{"clang-nopie-unlinked", prog{srcs: srcs, plain: plain, callops: true, clang: true}},
		{"nopie", prog{srcs: srcs, plain: plain, ftlink: true, callops: true}},
		{"pie-unlinked", prog{srcs: srcs, plain: plain, pie: true, callops: true}},
		{"pie-asan-ubsan", prog{srcs: srcs, plain: plain, pie: true, ftlink: true, san: true, callops: true}},
	}
}

// The kernel's self-test (probe1/2/3, global, dynamic ops) on CALL_OPS sites: exact counts
// after each call; the programs decode each site's CALL_OPS caller and its cell (one ops:
// the ops itself; several: the set, in list order). Also with FTRT_CALLOPS=0 (the same
// program served by own and multi-ops trampolines).
func TestSelftestCallops(t *testing.T) {
	for _, v := range callopsVariants([]string{"selftest.c"}) {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			runOK(t, dir, build(t, dir, "prog", v.p))
		})
	}
	t.Run("off", func(t *testing.T) {
		dir := t.TempDir()
		exe := build(t, dir, "prog", prog{srcs: []string{"selftest.c"}, pie: true, ftlink: true, callops: true})
		r := execEnv(t, dir, []string{"FTRT_CALLOPS=0"}, exe)
		if r.Code != 0 || !strings.Contains(r.Stdout, "ok\n") {
			t.Fatalf("FTRT_CALLOPS=0: exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

// CALL_OPS: a site with one ops among 64 unrelated ones calls only it; a site with two ops
// runs exactly both; a RECURSION ops; regs ops fall back to trampolines; plain sites
// (callops_plain.c) in the same process keep their own trampolines; 4-8 threads call a site
// whose cell flips between two ops 10,000 times: every call reaches exactly one of them.
func TestCallops(t *testing.T) {
	for _, v := range callopsVariants([]string{"callops.c"}, "callops_plain.c") {
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

// A CALL_OPS library loaded and unloaded 20 times while an ops traces everything: every
// load's calls are counted, and an unloaded library's cells are released (they were kept
// for good: 8 bytes per site per load).
func TestCallopsDlclose(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	lib, inc := testenv.Runtime(t)
	src := filepath.Join(testenv.Root(), "runtime", "tests", "callops_dl.c")
	testenv.Run(t, dir, "gcc", append([]string{"-O2", "-pg", "-mfentry", "-fPIC", "-DLIB", "-I", inc, "-c", src, "-o", "dl.o"}, callopsFlags...)...)
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), "dl.o")
	testenv.Run(t, dir, "gcc", "-shared", "dl.o", "-o", "libdl.so")
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), "libdl.so")
	testenv.Run(t, dir, "gcc", "-O2", "-I", inc, src, "-rdynamic", "-L"+lib, "-lftrt", "-lpthread", "-ldl", "-o", "prog")
	out := runOK(t, dir, filepath.Join(dir, "prog"), "./libdl.so")
	if !strings.Contains(out, "cells 8\n") {
		t.Errorf("the library's 8 sites did not get cells:\n%s", out)
	}
}
