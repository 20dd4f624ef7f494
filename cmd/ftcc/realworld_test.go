package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// Real projects of the corpora built unchanged through ftcc, the recipes of README.md and
// docs/ftcc.md: zlib with ./configure (its own test), lz4 with its Makefile (a round trip),
// tinyxml2 with CMake and C++ (its own test suite). Each result is the plain build's and
// its programs trace with ftrace record. Skipped with -short.
func TestRealProjects(t *testing.T) {
	if testing.Short() {
		t.Skip("real-world builds")
	}
	testenv.Need(t, "gcc", "g++", "make")
	build := testenv.BuildDir()
	if build == "" {
		t.Skip("FTKIT_BUILD not set (run through make test)")
	}
	ftcc, ftrace := filepath.Join(build, "bin", "ftcc"), filepath.Join(build, "bin", "ftrace")
	sh := func(t *testing.T, dir, script string) string {
		t.Helper()
		cmd := exec.Command("sh", "-ec", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FTCC="+ftcc, "FTRACE="+ftrace)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return string(out)
	}
	traced := func(t *testing.T, dir string, fns []string, prog ...string) {
		t.Helper()
		testenv.Run(t, dir, ftrace, append([]string{"record", "-q", "-o", "t.dat", "--"}, prog...)...)
		rep := testenv.Run(t, dir, ftrace, "report", "t.dat")
		for _, fn := range fns {
			if !strings.Contains(rep, "  "+fn) {
				t.Errorf("%s: the report does not name %s", prog[0], fn)
			}
		}
	}

	t.Run("zlib-configure", func(t *testing.T) {
		dir := t.TempDir()
		testenv.CopyTree(t, testenv.DebianSource(t, "zlib"), dir)
		out := sh(t, dir, `CC="$FTCC gcc" CFLAGS=-O2 ./configure >/dev/null && make -j2 >/dev/null && make test`)
		if !strings.Contains(out, "*** zlib test OK ***") {
			t.Errorf("zlib's own test:\n%s", out)
		}
		traced(t, dir, []string{"deflate", "inflate"}, "./example")
	})

	t.Run("lz4-make", func(t *testing.T) {
		dir := t.TempDir()
		testenv.CopyTree(t, testenv.DebianSource(t, "lz4"), dir)
		// Debian's lz4 links its programs with the shared liblz4: both instrumented
		sh(t, dir, `make -j2 lib-release lz4-release CC="$FTCC gcc" >/dev/null`)
		t.Setenv("LD_LIBRARY_PATH", filepath.Join(dir, "lib"))
		sh(t, dir, `head -c 300000 /dev/urandom | od -An > in.txt && programs/lz4 -q -f in.txt in.lz4 && programs/lz4 -q -d -f in.lz4 out.txt && cmp in.txt out.txt`)
		traced(t, dir, []string{"LZ4_compress_fast_extState", "main"}, "programs/lz4", "-q", "-f", "in.txt", "again.lz4")
	})

	t.Run("tinyxml2-cmake", func(t *testing.T) {
		testenv.Need(t, "cmake")
		dir := t.TempDir()
		testenv.CopyTree(t, testenv.DebianSource(t, "tinyxml2"), dir)
		sh(t, dir, `cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -Dtinyxml2_BUILD_TESTING=ON -DBUILD_TESTING=ON \
			-DCMAKE_CXX_COMPILER_LAUNCHER="$FTCC" -DCMAKE_CXX_LINKER_LAUNCHER="$FTCC" >/dev/null && cmake --build b -j2 >/dev/null`)
		prog := filepath.Join(dir, "b", "xmltest")
		out := testenv.Run(t, dir, prog)
		if !strings.Contains(out, "Fail 0") {
			t.Errorf("xmltest:\n%s", out[max(0, len(out)-300):])
		}
		traced(t, dir, []string{"tinyxml2::XMLDocument::Parse", "main"}, prog)
	})
}
