package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/testenv"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"recordmcount": func() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/recordmcount/*.txtar. Extra commands:
//
//	elfpatch FILE what     break FILE: what = symtab-entsize | rela-sym | shoff | truncate:N
func TestScripts(t *testing.T) {
	testenv.Need(t, "gcc", "as")
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join(testenv.Root(), "testdata", "recordmcount"),
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"elfpatch": elfpatch,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

func elfpatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: elfpatch FILE what")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	if n, ok := strings.CutPrefix(args[1], "truncate:"); ok {
		k, err := strconv.Atoi(n)
		ts.Check(err)
		ts.Check(os.WriteFile(path, data[:k], 0o644))
		return
	}
	f, err := elfrw.Parse(data)
	ts.Check(err)
	bo := binary.LittleEndian
	shoff := bo.Uint64(data[40:])
	hdr := func(i, field int) []byte { return data[int(shoff)+64*i+field:] }
	switch args[1] {
	case "symtab-entsize":
		bo.PutUint64(hdr(f.SymTab().Index, 56), 5)
	case "rela-sym":
		// Point the first relocation of the first RELA section at a symbol that does not exist.
		for _, s := range f.Sections {
			if s.Type == 4 { // SHT_RELA
				bo.PutUint64(data[s.Offset+8:], uint64(0xfffff)<<32|2)
				break
			}
		}
	case "shoff":
		bo.PutUint64(data[40:], uint64(len(data))+100)
	default:
		ts.Fatalf("unknown patch %q", args[1])
	}
	ts.Check(os.WriteFile(path, data, 0o644))
}

// TestReadOnlyDir runs the tool as an unprivileged user on a file in a directory it cannot
// write: a clear error, exit 1, the file unchanged. (Root can write anywhere, so as root
// the tool runs under uid 65534.)
func TestReadOnlyDir(t *testing.T) {
	testenv.Need(t, "gcc")
	tool := testenv.Tool(t, "recordmcount")
	base, err := os.MkdirTemp("", "ftkit-ro-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { os.Chmod(filepath.Join(base, "ro"), 0o755); os.RemoveAll(base) }()
	ro := filepath.Join(base, "ro")
	os.Mkdir(ro, 0o755)
	os.WriteFile(filepath.Join(ro, "t.c"), []byte("int f(int x) { return x + 1; }\n"), 0o644)
	testenv.Run(t, ro, "gcc", "-pg", "-mfentry", "-c", "t.c", "-o", "t.o")
	bin := filepath.Join(base, "recordmcount")
	testenv.Run(t, "", "cp", tool, bin)
	for _, p := range []string{base, bin, filepath.Join(ro, "t.o")} {
		os.Chmod(p, 0o755)
	}
	if os.Geteuid() == 0 {
		os.Chown(filepath.Join(ro, "t.o"), 65534, 65534) // writable by the user, in a read-only directory
	}
	os.Chmod(ro, 0o555)
	before, _ := os.ReadFile(filepath.Join(ro, "t.o"))
	cmd := exec.Command(bin, filepath.Join(ro, "t.o"))
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1; output %s", err, out)
	}
	if !strings.Contains(string(out), "t.o") || !strings.Contains(string(out), "not writable") {
		t.Errorf("error does not name the file and reason: %s", out)
	}
	after, _ := os.ReadFile(filepath.Join(ro, "t.o"))
	if string(before) != string(after) {
		t.Error("file changed")
	}
	ents, _ := os.ReadDir(ro)
	if len(ents) != 2 {
		t.Errorf("directory has %d entries (temporary file left?)", len(ents))
	}
}

// TestExitCodes runs the command in-process on a good object next to each kind of bad
// input: exit status 1, an error naming the bad file, the bad file unchanged, and the good
// file still recorded. Only good files give 0; no file at all is a usage error (2).
func TestExitCodes(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t.c"), []byte("int f(int x) { return x + 1; }\nint main(void) { return f(-1); }\n"), 0o644)
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-c", "t.c", "-o", "good.o")
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-no-pie", "t.c", "-o", "prog", "-Wl,--defsym=__fentry__=main")
	good, err := os.ReadFile(filepath.Join(dir, "good.o"))
	if err != nil {
		t.Fatal(err)
	}
	prog, _ := os.ReadFile(filepath.Join(dir, "prog"))
	tests := []struct {
		name, file string
		data       []byte // nil: the file does not exist
		want       string
	}{
		{"not ELF", "text.o", []byte("int f(void);\n"), "not an ELF file"},
		{"truncated", "trunc.o", good[:200], "malformed ELF"},
		{"linked program", "prog", prog, "not a relocatable object (type ET_EXEC)"},
		{"missing", "missing.o", nil, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			g := filepath.Join(d, "good.o")
			os.WriteFile(g, good, 0o644)
			bad := filepath.Join(d, tc.file)
			if tc.data != nil {
				os.WriteFile(bad, tc.data, 0o644)
			}
			var so, se strings.Builder
			if code := run([]string{"recordmcount", bad, g}, &so, &se); code != 1 {
				t.Fatalf("exit %d, want 1; stderr %s", code, se.String())
			}
			if !strings.Contains(se.String(), "recordmcount: "+bad+": ") || !strings.Contains(se.String(), tc.want) {
				t.Errorf("stderr %q does not name %s and %q", se.String(), bad, tc.want)
			}
			if tc.data != nil {
				if after, _ := os.ReadFile(bad); string(after) != string(tc.data) {
					t.Error("bad file changed")
				}
			}
			if after, _ := os.ReadFile(g); len(after) <= len(good) {
				t.Error("the good file was not recorded")
			}
		})
	}
	g := filepath.Join(dir, "good.o")
	var so, se strings.Builder
	if code := run([]string{"recordmcount", g}, &so, &se); code != 0 {
		t.Errorf("good file: exit %d: %s", code, se.String())
	}
	se.Reset()
	if code := run([]string{"recordmcount"}, &so, &se); code != 2 || !strings.Contains(se.String(), "no input files") {
		t.Errorf("no arguments: exit %d, want 2; stderr %q", code, se.String())
	}
}
