package ftrt

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// The Go bindings, in a cgo program whose C functions are traced (testdata/runtime/goprog).
func TestGoBindings(t *testing.T) {
	testenv.Need(t, "gcc")
	lib, _ := testenv.Runtime(t)
	exe := filepath.Join(t.TempDir(), "goprog")
	cmd := exec.Command("go", "build", "-o", exe, "./testdata/runtime/goprog")
	cmd.Dir = testenv.Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS_ALLOW=-pg|-mfentry|-mrecord-mcount",
		"PKG_CONFIG_PATH="+filepath.Join(lib, "pkgconfig"), // the package's #cgo pkg-config: ftrt-cgo
		"CGO_LDFLAGS=-L"+lib)                               // part of the build cache's key, unlike pkg-config's output
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build goprog: %v\n%s", err, out)
	}
	out := runOK(t, filepath.Dir(exe), exe)
	if !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("output %q", out)
	}

	// Traced (the tracer on the other function: the checks above stay true): TraceFinish
	// finalises the file (the Go runtime never calls libc's exit), and
	// TraceSnapshot writes a copy.
	dir := t.TempDir()
	snap := filepath.Join(dir, "snap.dat")
	cmd = exec.Command(exe, snap)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FTRACE_TRACER=function", "FTRACE_FILTER=ftrt_cgo_two",
		"FTRACE_OUTPUT="+filepath.Join(dir, "go.dat"))
	if b, err := cmd.CombinedOutput(); err != nil || !strings.HasSuffix(string(b), "ok\n") {
		t.Fatalf("traced goprog: %v\n%s", err, b)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	want := []string{filepath.Join(dir, "go.dat"), snap}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want the finalised trace and the snapshot %v", files, want)
	}
	for _, f := range want {
		if b, err := os.ReadFile(f); err != nil || len(b) < 128 || string(b[:8]) != "FTKITTRC" || b[16]&1 == 0 {
			t.Errorf("%s: not a complete trace file (%v)", f, err)
		}
	}
}
