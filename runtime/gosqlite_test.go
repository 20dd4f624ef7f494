package ftrt_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// examples/gosqlite: a Go program whose C code (SQLite, through the cgo package
// go-sqlite3) is compiled instrumented, built as its README says, traced with
// function_graph: the program prints the same, the trace is finished (TraceFinish), and
// it holds SQLite's calls nested under cgo's wrappers, one sqlite3_step at least per row
// the program inserts.
func TestGoSqliteExample(t *testing.T) {
	if testing.Short() {
		t.Skip("short: builds SQLite")
	}
	testenv.Need(t, "gcc", "go")
	lib, _ := testenv.Runtime(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "gosqlite")
	cmd := exec.Command("go", "build", "-o", exe, ".")
	cmd.Dir = filepath.Join(testenv.Root(), "examples", "gosqlite")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1",
		"CGO_CFLAGS=-O2 -g -pg -mfentry -mrecord-mcount",
		"CGO_CFLAGS_ALLOW=-pg|-mfentry|-mrecord-mcount",
		"PKG_CONFIG_PATH="+filepath.Join(lib, "pkgconfig"),
		"CGO_LDFLAGS=-L"+lib)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build examples/gosqlite: %v\n%s", err, out)
	}
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), exe)
	plain := testenv.Run(t, dir, exe)
	if strings.Count(plain, "\n") != 7 {
		t.Fatalf("untraced output:\n%s", plain)
	}

	ftrace := testenv.Tool(t, "ftrace")
	dat := filepath.Join(dir, "sq.dat")
	traced := testenv.Run(t, dir, ftrace, "record", "-q", "-o", dat, "--", exe)
	if traced != plain {
		t.Errorf("traced output\n%s\nuntraced\n%s", traced, plain)
	}
	if _, err := os.Stat(dat + "." + "part"); err == nil {
		t.Errorf("trace left unfinished")
	}
	g := testenv.Run(t, dir, ftrace, "graph", "-F", "*Cfunc__sqlite3_open_v2", dat)
	if !regexp.MustCompile(`(?m)^.*_Cfunc__sqlite3_open_v2\(\) \{\n.*\|    sqlite3_open_v2\(\) \{`).MatchString(g) {
		t.Errorf("graph does not show sqlite3_open_v2 called by its cgo wrapper:\n%.3000s", g)
	}
	rep := testenv.Run(t, dir, ftrace, "report", dat)
	steps := 0
	for _, l := range strings.Split(rep, "\n") {
		if f := strings.Fields(l); len(f) > 7 && f[len(f)-2] == "sqlite3_step" {
			steps, _ = strconv.Atoi(f[0])
		}
	}
	if steps < 200 {
		t.Errorf("report shows %d calls of sqlite3_step, want one per inserted row at least:\n%.3000s", steps, rep)
	}
}
