package fnargs

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAAPCS64AgreesWithGCC builds this package's test programs (every argument shape the
// model knows: HFAs, mixed structs, 16-byte values, more arguments than registers, C++
// classes by invisible reference) with Debian's aarch64 cross compilers as ftkit does
// (-fpatchable-function-entry=2) and compares, for every parameter gcc gives an entry
// location for, the registers the AAPCS64 assignment chose with those gcc wrote; and
// each function's entry is its symbol (before the nops), not gcc's DW_AT_low_pc.
func TestAAPCS64AgreesWithGCC(t *testing.T) {
	for _, tt := range []struct{ cc, src, opt string }{
		{"aarch64-linux-gnu-gcc", "args.c", "-O1"}, {"aarch64-linux-gnu-gcc", "args.c", "-O2"},
		{"aarch64-linux-gnu-g++", "args.cc", "-O2"}, {"aarch64-linux-gnu-g++", "args.cc", "-O3"},
	} {
		t.Run(tt.src+tt.opt, func(t *testing.T) {
			if _, err := exec.LookPath(tt.cc); err != nil {
				t.Skipf("%s not installed", tt.cc)
			}
			prog := filepath.Join(t.TempDir(), "args")
			out, err := exec.Command(tt.cc, tt.opt, "-g", "-fpatchable-function-entry=2", "-o", prog,
				filepath.Join("testdata", tt.src)).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", tt.cc, err, out)
			}
			tab, err := Load(prog)
			if err != nil {
				t.Fatal(err)
			}
			syms, err := exec.Command("aarch64-linux-gnu-nm", prog).Output()
			if err != nil {
				t.Skipf("aarch64-linux-gnu-nm: %v", err)
			}
			confirmed, checked := 0, 0
			for _, fn := range tab.Funcs {
				if !strings.Contains(string(syms), " T "+fn.Linkage) && !strings.Contains(string(syms), " T "+fn.Name+"\n") {
					continue // the C library's start files
				}
				checked++
				if fn.Unsure != "" && !cloneSuffixIn(fn.Unsure) {
					t.Errorf("%s: %s", fn.Name, fn.Unsure)
				}
				for _, a := range fn.Args {
					if a.Confirmed {
						confirmed++
					}
				}
				if tab.ByEntry(fn.Entry) != fn {
					t.Errorf("%s: not found by its entry %#x", fn.Name, fn.Entry)
				}
			}
			if checked < 8 || confirmed < 12 {
				t.Errorf("%d functions, %d parameters whose DWARF entry location confirms the ABI's", checked, confirmed)
			}
			t.Logf("%d functions, %d parameters confirmed", checked, confirmed)
		})
	}
}
