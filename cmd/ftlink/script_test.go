package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the CLI scripts in testdata/ftlink/script. Besides ftlink they use
// recordmcount, gcc and these commands:
//
//	setmachine FILE N       set e_machine of an ELF file
//	checkmode FILE MODE     fail unless FILE has mode bits MODE (octal, with setuid & co.)
//	setmode FILE MODE       chmod FILE to MODE (octal, with setuid & co.)
//	hardlink OLD NEW        make NEW a hard link to OLD
//	mkfifo FILE             make a named pipe
//	unnop ORIG FILE FUNC    copy FUNC's (or its clone's) call site bytes from ORIG into FILE
func TestScripts(t *testing.T) {
	rm := testenv.Tool(t, "recordmcount")
	testscript.Run(t, testscript.Params{
		Dir: srcDir("script"),
		Setup: func(e *testscript.Env) error {
			// After testscript's own directory: "ftlink" must be this test binary, not a
			// (possibly stale) build/bin/ftlink next to recordmcount.
			e.Setenv("PATH", e.Getenv("PATH")+string(os.PathListSeparator)+filepath.Dir(rm))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"setmachine": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: setmachine FILE N")
				}
				p := ts.MkAbs(args[0])
				b, err := os.ReadFile(p)
				ts.Check(err)
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				binary.LittleEndian.PutUint16(b[18:], uint16(n))
				ts.Check(os.WriteFile(p, b, 0o755))
			},
			"checkmode": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: checkmode FILE MODE")
				}
				var st syscall.Stat_t
				ts.Check(syscall.Stat(ts.MkAbs(args[0]), &st))
				want, err := strconv.ParseUint(args[1], 8, 32)
				ts.Check(err)
				if got := uint64(st.Mode & 0o7777); (got == want) == neg {
					ts.Fatalf("%s: mode %#o, want %#o", args[0], got, want)
				}
			},
			"mkfifo": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: mkfifo FILE")
				}
				ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o600))
			},
			"hardlink": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: hardlink OLD NEW")
				}
				ts.Check(os.Link(ts.MkAbs(args[0]), ts.MkAbs(args[1])))
			},
			"setmode": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: setmode FILE MODE")
				}
				m, err := strconv.ParseUint(args[1], 8, 32)
				ts.Check(err)
				ts.Check(syscall.Chmod(ts.MkAbs(args[0]), uint32(m)))
			},
			"unnop": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 3 {
					ts.Fatalf("usage: unnop ORIG FILE FUNC")
				}
				orig, err := os.ReadFile(ts.MkAbs(args[0]))
				ts.Check(err)
				cur, err := os.ReadFile(ts.MkAbs(args[1]))
				ts.Check(err)
				l, err := mcountloc.OpenLinked(orig, nil)
				ts.Check(err)
				for _, s := range l.Sites {
					if s.Func != args[2] && !strings.HasPrefix(s.Func, args[2]+".") { // gcc clones: f.constprop.0
						continue
					}
					off, err := fileOffset(orig, s.Addr)
					ts.Check(err)
					copy(cur[off:off+uint64(s.Len)], orig[off:off+uint64(s.Len)])
					ts.Check(os.WriteFile(ts.MkAbs(args[1]), cur, 0o755))
					return
				}
				ts.Fatalf("no site in %s", args[2])
			},
		},
	})
}

// fileOffset maps an address to a file offset through the program headers.
func fileOffset(data []byte, addr uint64) (uint64, error) {
	phoff := binary.LittleEndian.Uint64(data[0x20:])
	n := int(binary.LittleEndian.Uint16(data[0x38:]))
	for i := 0; i < n; i++ {
		p := data[phoff+uint64(i)*56:]
		if binary.LittleEndian.Uint32(p) != 1 { // PT_LOAD
			continue
		}
		off, va, fsz := binary.LittleEndian.Uint64(p[8:]), binary.LittleEndian.Uint64(p[16:]), binary.LittleEndian.Uint64(p[32:])
		if addr >= va && addr < va+fsz {
			return off + addr - va, nil
		}
	}
	return 0, fmt.Errorf("address %#x not in a PT_LOAD", addr)
}
