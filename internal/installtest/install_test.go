// Package installtest checks `make install`: a fresh C program builds against the
// installed prefix with pkg-config only, a CMake project with find_package only, and both
// run traced.
package installtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// install runs `make install` into a fresh prefix and returns it.
func install(t *testing.T) string {
	t.Helper()
	testenv.Need(t, "make", "gcc")
	prefix := filepath.Join(t.TempDir(), "usr")
	args := []string{"-s", "-C", testenv.Root(), "install", "PREFIX=" + prefix}
	if b := testenv.BuildDir(); b != "" {
		args = append(args, "BUILD="+b)
	}
	testenv.Run(t, "", "make", args...)
	for _, f := range []string{"bin/ftrace", "bin/ftlink", "bin/recordmcount", "bin/ftkit-launch", "lib/libftrt.a",
		"include/ftrace.h", "lib/pkgconfig/ftrt.pc", "lib/cmake/ftkit/ftkitConfig.cmake", "share/man/man1/ftrace.1"} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	return prefix
}

// traced records prog under the installed ftrace and returns the report.
func traced(t *testing.T, prefix, dir string, prog ...string) string {
	t.Helper()
	ftrace := filepath.Join(prefix, "bin", "ftrace")
	testenv.Run(t, dir, ftrace, append([]string{"record", "-q", "-o", "t.dat", "--"}, prog...)...)
	return testenv.Run(t, dir, ftrace, "report", "t.dat")
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const progC = `#include <stdio.h>
#include <ftrace.h>
__attribute__((noinline)) int square(int x) { return x * x; }
int sum(int n) { int s = 0; for (int i = 0; i < n; i++) s += square(i); return s; }
int main(void) { printf("%d\n", sum(10)); return 0; }
`

// pkgConfig runs pkg-config with the environment additions and returns its words.
func pkgConfig(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("pkg-config", args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pkg-config %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

func TestPkgConfig(t *testing.T) {
	testenv.Need(t, "pkg-config")
	prefix := install(t)
	dir := t.TempDir()
	write(t, dir, map[string]string{"prog.c": progC})
	pc := func(args ...string) []string {
		return pkgConfig(t, []string{"PKG_CONFIG_PATH=" + filepath.Join(prefix, "lib", "pkgconfig")}, args...)
	}
	cflags := append(pc("--cflags", "ftrt"), pc("--variable=instrument", "ftrt")...)
	if !strings.Contains(strings.Join(cflags, " "), "-pg -mfentry") {
		t.Errorf("instrument flags %q", cflags)
	}
	testenv.Run(t, dir, "gcc", append(append([]string{"-O1"}, cflags...), "-c", "prog.c")...)
	testenv.Run(t, dir, filepath.Join(prefix, "bin", "recordmcount"), "prog.o")
	testenv.Run(t, dir, "gcc", append([]string{"prog.o", "-o", "prog"}, pc("--libs", "ftrt")...)...)
	testenv.Run(t, dir, filepath.Join(prefix, "bin", "ftlink"), "prog")
	rep := traced(t, prefix, dir, "./prog")
	for _, fn := range []string{"main", "sum", "square"} {
		if !strings.Contains(rep, "  "+fn+" [") && !strings.Contains(rep, "  "+fn+"\n") {
			t.Errorf("report does not name %s:\n%s", fn, rep)
		}
	}
}

func TestCMake(t *testing.T) {
	testenv.Need(t, "cmake", "g++")
	prefix := install(t)
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"CMakeLists.txt": `cmake_minimum_required(VERSION 3.13)
project(shapes C CXX)
find_package(ftkit 0.1 REQUIRED)
add_library(area SHARED area.cc)
ftkit_instrument(area)
add_executable(app main.c)
target_link_libraries(app PRIVATE area)
ftkit_instrument(app)
`,
		"area.cc": `namespace shapes { template <typename T> __attribute__((noinline)) T sq(T x) { return x * x; } }
extern "C" double area(double r) { return 3.0 * shapes::sq(r); }
`,
		"main.c": `#include <stdio.h>
double area(double r);
double total(int n) { double s = 0; for (int i = 1; i <= n; i++) s += area(i); return s; }
int main(void) { printf("%.0f\n", total(4)); return 0; }
`,
	})
	b := filepath.Join(dir, "b")
	testenv.Run(t, dir, "cmake", "-S", dir, "-B", b, "-DCMAKE_PREFIX_PATH="+prefix, "-DCMAKE_BUILD_TYPE=RelWithDebInfo")
	testenv.Run(t, dir, "cmake", "--build", b)
	rep := traced(t, prefix, b, "./app")
	for _, fn := range []string{"main", "total", "area", "shapes::sq<double>"} {
		if !strings.Contains(rep, fn) {
			t.Errorf("report does not name %s:\n%s", fn, rep)
		}
	}
	// ftlink ran on both: a second run finds them processed
	out := testenv.Run(t, b, filepath.Join(prefix, "bin", "ftlink"), "-v", "app", "libarea.so")
	if strings.Count(out, "already processed") != 2 {
		t.Errorf("ftlink -v:\n%s", out)
	}
}

// installCross puts the aarch64 runtime, freshly built, into an installed prefix as make
// install does after make runtime-aarch64 (lib/aarch64-linux-gnu/libftrt.a), and its
// pkg-config files (make pkgconfig with the prefix as the build tree writes what make
// install writes there).
func installCross(t *testing.T, prefix string) {
	t.Helper()
	cross := testenv.AArch64Runtime(t)
	lib := filepath.Join(prefix, "lib", "aarch64-linux-gnu")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(cross, "lib", "libftrt.a"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "libftrt.a"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Run(t, "", "make", "-s", "-C", testenv.Root(), "pkgconfig", "BUILD="+prefix)
}

// The aarch64 runtime's pkg-config file (lib/aarch64-linux-gnu/pkgconfig, what
// aarch64-linux-gnu-pkg-config reads) gives the arm64 instrumentation flags and links the
// aarch64 archive: a program built with it alone runs traced under qemu-user.
func TestPkgConfigAArch64(t *testing.T) {
	if testing.Short() {
		t.Skip("cross build and qemu")
	}
	testenv.Need(t, "pkg-config", "aarch64-linux-gnu-gcc", "qemu-aarch64")
	prefix := install(t)
	installCross(t, prefix)
	dir := t.TempDir()
	write(t, dir, map[string]string{"prog.c": progC})
	pc := func(args ...string) []string {
		return pkgConfig(t, []string{"PKG_CONFIG_LIBDIR=" + filepath.Join(prefix, "lib", "aarch64-linux-gnu", "pkgconfig"),
			"PKG_CONFIG_PATH="}, args...)
	}
	inst := pc("--variable=instrument", "ftrt")
	if strings.Join(inst, " ") != "-fpatchable-function-entry=2" {
		t.Errorf("aarch64 instrument flags %q", inst)
	}
	cc := "aarch64-linux-gnu-gcc"
	testenv.Run(t, dir, cc, append(append([]string{"-O1"}, append(pc("--cflags", "ftrt"), inst...)...), "-c", "prog.c")...)
	testenv.Run(t, dir, filepath.Join(prefix, "bin", "recordmcount"), "prog.o")
	testenv.Run(t, dir, cc, append([]string{"prog.o", "-o", "prog"}, pc("--libs", "ftrt")...)...)
	testenv.Run(t, dir, filepath.Join(prefix, "bin", "ftlink"), "prog")
	q := testenv.QEMUAArch64("./prog")
	cmd := exec.Command(q[0], q[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FTRACE_TRACER=function", "FTRACE_OUTPUT=t.dat")
	if out, err := cmd.Output(); err != nil || string(out) != "285\n" {
		t.Fatalf("prog under qemu: %q %v", out, err)
	}
	rep := testenv.Run(t, dir, filepath.Join(prefix, "bin", "ftrace"), "report", "t.dat")
	if !strings.Contains(rep, "square") || !strings.Contains(rep, "sum") {
		t.Errorf("report:\n%s", rep)
	}
}

// A CMake project cross-built for aarch64 (CMAKE_SYSTEM_PROCESSOR from the toolchain
// settings) finds the aarch64 runtime installed beside the host's (make runtime-aarch64,
// make install) and the arm64 instrumentation flags; it runs traced under qemu-user.
func TestCMakeAArch64(t *testing.T) {
	if testing.Short() {
		t.Skip("cross build and qemu")
	}
	testenv.Need(t, "cmake", "aarch64-linux-gnu-gcc", "qemu-aarch64")
	prefix := install(t)
	installCross(t, prefix)
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"CMakeLists.txt": `cmake_minimum_required(VERSION 3.13)
project(sq C)
find_package(ftkit REQUIRED)
add_executable(app main.c)
ftkit_instrument(app)
`,
		"main.c": progC,
	})
	bd := filepath.Join(dir, "b")
	testenv.Run(t, dir, "cmake", "-S", dir, "-B", bd, "-DCMAKE_PREFIX_PATH="+prefix, "-DCMAKE_SYSTEM_NAME=Linux",
		"-DCMAKE_SYSTEM_PROCESSOR=aarch64", "-DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc")
	testenv.Run(t, dir, "cmake", "--build", bd)
	q := testenv.QEMUAArch64(filepath.Join(bd, "app"))
	cmd := exec.Command(q[0], q[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT="+filepath.Join(dir, "t.dat"),
		"FTRT_POKE=mprotect")
	out, err := cmd.Output()
	if err != nil || string(out) != "285\n" {
		t.Fatalf("app under qemu: %q %v", out, err)
	}
	rep := testenv.Run(t, dir, filepath.Join(prefix, "bin", "ftrace"), "report", "t.dat")
	found := false
	for _, l := range strings.Split(rep, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "10" && f[len(f)-1] == "square" {
			found = true
		}
	}
	if !found {
		t.Errorf("square not called 10 times:\n%s", rep)
	}
}

func TestUninstall(t *testing.T) {
	prefix := install(t)
	args := []string{"-s", "-C", testenv.Root(), "uninstall", "PREFIX=" + prefix}
	if b := testenv.BuildDir(); b != "" {
		args = append(args, "BUILD="+b)
	}
	testenv.Run(t, "", "make", args...)
	var left []string
	filepath.Walk(prefix, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("left after uninstall: %q", left)
	}
}

// TestGoPackage: the Go package builds against an installed prefix through pkg-config
// (#cgo pkg-config: ftrt-cgo), nothing of the build tree needed.
func TestGoPackage(t *testing.T) {
	testenv.Need(t, "pkg-config", "go")
	prefix := install(t)
	exe := filepath.Join(t.TempDir(), "goprog")
	cmd := exec.Command("go", "build", "-o", exe, "./testdata/runtime/goprog")
	cmd.Dir = testenv.Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS_ALLOW=-pg|-mfentry|-mrecord-mcount",
		"PKG_CONFIG_PATH="+filepath.Join(prefix, "lib", "pkgconfig"),
		// the build cache keys cgo packages on CGO_LDFLAGS, not on what pkg-config said:
		// without this a package built against another prefix is reused
		"CGO_LDFLAGS=-L"+filepath.Join(prefix, "lib"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build goprog against %s: %v\n%s", prefix, err, out)
	}
	if out := testenv.Run(t, filepath.Dir(exe), exe); !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("goprog: %q", out)
	}
}
