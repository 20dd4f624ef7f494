// Package testenv gives ftkit's tests what they share: the repository root, the built
// tools and runtime library, command running with good failure messages, and Debian
// source packages for the real-world corpora.
//
// `make test` sets FTKIT_BUILD to the build directory, so tests use the tools it built.
// A plain `go test ./...` builds the Go tools into a temporary directory instead.
package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Root is the repository root.
func Root() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testenv: no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	toolsOnce sync.Once
	toolsDir  string
	toolsErr  error
)

// BuildDir is the build directory of `make` (FTKIT_BUILD), or "" when unset.
func BuildDir() string { return os.Getenv("FTKIT_BUILD") }

// Tool returns the path of a built ftkit command (recordmcount, ftlink, ftrace).
func Tool(t testing.TB, name string) string {
	t.Helper()
	if b := BuildDir(); b != "" {
		p := filepath.Join(b, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	toolsOnce.Do(func() {
		toolsDir, toolsErr = os.MkdirTemp("", "ftkit-tools-")
		if toolsErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", toolsDir+string(os.PathSeparator), "./cmd/...")
		cmd.Dir = Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			toolsErr = fmt.Errorf("go build ./cmd/...: %v\n%s", err, out)
		}
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	return filepath.Join(toolsDir, name)
}

// Runtime returns the directory holding libftrt.a and the include directory, building
// the runtime with make when FTKIT_BUILD is not set.
func Runtime(t testing.TB) (libDir, includeDir string) {
	t.Helper()
	b := BuildDir()
	if b == "" {
		b = filepath.Join(Root(), "build")
		cmd := exec.Command("make", "-s", "-C", filepath.Join(Root(), "runtime"), "BUILD="+b)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the runtime: %v\n%s", err, out)
		}
	}
	libDir, includeDir = filepath.Join(b, "lib"), filepath.Join(b, "include")
	if _, err := os.Stat(filepath.Join(libDir, "libftrt.a")); err != nil {
		t.Fatalf("runtime library missing: %v", err)
	}
	return libDir, includeDir
}

var (
	a64Once sync.Once
	a64Dir  string
	a64Err  string
)

// QEMU is the command that runs a program of another machine under qemu-user with
// Debian's cross C library of triplet (/usr/<triplet>): its loader by -L, and its other
// libraries by the guest's library path. Without the path, the cross loader finds a
// multiarch C library first (libc6:arm64 in /lib/aarch64-linux-gnu, when installed) and
// pairs itself with another glibc build: traced programs then hung at their first thread.
func QEMU(arch, triplet string, prog string, args ...string) []string {
	root := "/usr/" + triplet
	return append([]string{"qemu-" + arch, "-L", root, "-E", "LD_LIBRARY_PATH=" + root + "/lib", prog}, args...)
}

// QEMUAArch64 is QEMU for aarch64-linux-gnu.
func QEMUAArch64(prog string, args ...string) []string {
	return QEMU("aarch64", "aarch64-linux-gnu", prog, args...)
}

// AArch64Runtime builds libftrt.a for aarch64 once per test binary (make -C runtime
// CC=aarch64-linux-gnu-gcc ARCH=arm64 BUILD=<dir>) and returns that BUILD directory
// (lib/libftrt.a, include/). The directory is the build's cross/aarch64 (FTKIT_BUILD, or
// the repository's build/), where `make runtime-aarch64` builds too: make brings it up to
// date, under a lock the test binaries that run at once share, and nothing is left in the
// temporary directory. The caller checks the cross compiler is there.
func AArch64Runtime(t testing.TB) string {
	t.Helper()
	a64Once.Do(func() {
		build := BuildDir()
		if build == "" {
			build = filepath.Join(Root(), "build")
		}
		dir := filepath.Join(build, "cross", "aarch64")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			a64Err = err.Error()
			return
		}
		lock, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			a64Err = err.Error()
			return
		}
		defer lock.Close() // and unlocked
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			a64Err = fmt.Sprintf("locking %s: %v", lock.Name(), err)
			return
		}
		cmd := exec.Command("make", "-s", "-j2", "-C", filepath.Join(Root(), "runtime"),
			"CC=aarch64-linux-gnu-gcc", "ARCH=arm64", "BUILD="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			a64Err = fmt.Sprintf("%v\n%s", err, out)
			return
		}
		a64Dir = dir
	})
	if a64Err != "" {
		t.Fatalf("building the aarch64 runtime: %s", a64Err)
	}
	return a64Dir
}

// Result is the outcome of Exec.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Exec runs a command in dir and returns its output and exit code; it fails the test only
// when the command cannot be started.
func Exec(t testing.TB, dir string, name string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return Result{Stdout: so.String(), Stderr: se.String(), Code: code}
}

// Run runs a command in dir and fails the test if it does not exit 0.
func Run(t testing.TB, dir string, name string, args ...string) string {
	t.Helper()
	r := Exec(t, dir, name, args...)
	if r.Code != 0 {
		t.Fatalf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// Need skips the test when a program is missing, except under CI where .ci/run installs
// everything the tests use: there a missing program is a failure.
func Need(t testing.TB, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not installed (.ci/run should install it)", p)
			}
			t.Skipf("%s not installed", p)
		}
	}
}

var srcMu sync.Mutex

// DebianSource fetches a Debian source package with `apt-get source` into a shared cache
// (FTKIT_CACHE, default build/cache) and returns the unpacked source directory. The cache
// is reused across runs; callers must copy the tree before building in it.
func DebianSource(t testing.TB, pkg string) string {
	t.Helper()
	Need(t, "apt-get", "dpkg-source")
	srcMu.Lock()
	defer srcMu.Unlock()
	cache := os.Getenv("FTKIT_CACHE")
	if cache == "" {
		cache = filepath.Join(Root(), "build", "cache")
	}
	dir := filepath.Join(cache, "debsrc", pkg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Test binaries of several packages run at once: serialise fetches across processes.
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if d := sourceDir(dir); d != "" {
		return d
	}
	r := Exec(t, dir, "apt-get", "source", "-qq", pkg)
	if r.Code != 0 {
		msg := fmt.Sprintf("apt-get source %s: exit %d\n%s%s", pkg, r.Code, r.Stdout, r.Stderr)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if d := sourceDir(dir); d != "" {
		return d
	}
	t.Fatalf("apt-get source %s: no source directory in %s", pkg, dir)
	return ""
}

// sourceDir is the unpacked tree in dir: its only subdirectory (the source package's name
// can differ from the binary package's, e.g. zstd unpacks into libzstd-*).
func sourceDir(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	found := ""
	for _, e := range ents {
		if e.IsDir() {
			if found != "" {
				return ""
			}
			found = filepath.Join(dir, e.Name())
		}
	}
	return found
}

// CopyTree copies a directory tree (regular files, directories, symlinks) to dst.
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	Run(t, "", "cp", "-a", src+"/.", dst)
}
