package ftrt_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRuntimeErrorReasons: the runtime's async-signal-safe messages give the reason in
// words (ft_strerror), not a bare errno number, and not nothing.
func TestRuntimeErrorReasons(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	for _, tc := range []struct {
		name, output, want string
	}{
		{"missing directory", filepath.Join(dir, "nosuch", "t.dat"), ": No such file or directory"},
		{"not a directory", filepath.Join(prog, "t.dat"), ": Not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(prog, "10")
			cmd.Dir = dir
			cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_OUTPUT="+tc.output)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || string(out) != "fib(10) = 55\n" {
				t.Fatalf("%v, output %q", err, out)
			}
			want := "cannot create trace file " + tc.output + "."
			if s := stderr.String(); !strings.Contains(s, want) || !strings.Contains(s, tc.want) || strings.Contains(s, "errno") {
				t.Errorf("stderr %q, want %q ... %q", s, want, tc.want)
			}
		})
	}
}
