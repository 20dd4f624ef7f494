package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// stdioSrc says on a file which of its standard descriptors are open (looked at first:
// the file takes the lowest free descriptor).
const stdioSrc = `#include <fcntl.h>
#include <stdio.h>
int main(int argc, char **argv) {
	int open[3];
	for (int fd = 0; fd < 3; fd++)
		open[fd] = fcntl(fd, F_GETFD) >= 0;
	FILE *f = fopen(argv[1], "w");
	for (int fd = 0; fd < 3; fd++)
		fprintf(f, "%d:%s ", fd, open[fd] ? "open" : "closed");
	return fclose(f) != 0;
}
`

// ftrace record passes the program the standard descriptors it was given, closed ones
// closed (the Go runtime opens /dev/null on them before main: the program found them open).
func TestRecordClosedStdio(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "stdio.c")
	if err := os.WriteFile(src, []byte(stdioSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "stdio")
	testenv.Run(t, dir, "gcc", "-o", prog, src)
	ftrace := testenv.Tool(t, "ftrace")
	devnull := func(flag int) *os.File {
		f, err := os.OpenFile(os.DevNull, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	rd, wr := devnull(os.O_RDONLY), devnull(os.O_WRONLY)
	for _, tc := range []struct {
		name  string
		files []*os.File
		want  string
	}{
		{"all open", []*os.File{rd, wr, wr}, "0:open 1:open 2:open"},
		{"stdout closed", []*os.File{rd, nil, wr}, "0:open 1:closed 2:open"},
		{"stdin and stderr closed", []*os.File{nil, wr, nil}, "0:closed 1:open 2:closed"},
	} {
		report := filepath.Join(dir, "report")
		p, err := os.StartProcess(ftrace, []string{"ftrace", "record", "-q", "-o", filepath.Join(dir, "t.dat"), "--", prog, report},
			&os.ProcAttr{Dir: dir, Files: tc.files})
		if err != nil {
			t.Fatal(err)
		}
		st, err := p.Wait()
		if err != nil || !st.Success() {
			t.Fatalf("%s: ftrace record: %v %v", tc.name, st, err)
		}
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != tc.want {
			t.Errorf("%s: the program found %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A traced program started through a wrapper (env): the trace is the program's, and the
// wrapper's missing call-site table is no reason to say nothing was traced (the gawk trial).
func TestRecordThroughWrapper(t *testing.T) {
	testenv.Need(t, "env")
	dir := t.TempDir()
	prog := buildTraced(t, dir, "loop", loopSrc)
	r := testenv.Exec(t, dir, testenv.Tool(t, "ftrace"), "record", "-o", "w.dat", "--", "env", "X=1", prog, "1", "100")
	if r.Stdout != "rounds 1 sum 100\n" {
		t.Errorf("output %q", r.Stdout)
	}
	if strings.Contains(r.Stderr, "call-site table") || !regexp.MustCompile(`w\.dat: 1 thread, [1-9][0-9]* events`).MatchString(r.Stderr) {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
}
