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
	testenv.Runtime(t)
	exe := filepath.Join(t.TempDir(), "goprog")
	cmd := exec.Command("go", "build", "-o", exe, "./testdata/runtime/goprog")
	cmd.Dir = testenv.Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS_ALLOW=-pg|-mfentry|-mrecord-mcount")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build goprog: %v\n%s", err, out)
	}
	out := runOK(t, filepath.Dir(exe), exe)
	if !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("output %q", out)
	}
}
