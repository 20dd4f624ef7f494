package mcountloc_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
)

func TestEntryPadPre(t *testing.T) {
	for _, e := range []mcountloc.Entry{
		{Rel: -8, Len: 5, Kind: mcountloc.KindCallRel, Magic: mcountloc.MagicRecorded},
		{Rel: 12, Len: 8, Kind: mcountloc.KindNops, Magic: mcountloc.MagicLinked},
		{Rel: 12, Len: 8, Kind: mcountloc.KindNops, Pad: true, Pre: 8, Magic: mcountloc.MagicLinked},
		{Rel: 1 << 30, Len: 6, Kind: mcountloc.KindCallGOT, Pad: true, Pre: mcountloc.MaxPre, Magic: mcountloc.MagicRecorded},
		{Rel: -4, Len: 4, Kind: mcountloc.KindBL, Magic: mcountloc.MagicLinked},      // ppc64le bl _mcount
		{Rel: 16, Len: 6, Kind: mcountloc.KindBrasl, Magic: mcountloc.MagicRecorded}, // s390x brasl
	} {
		var b [8]byte
		e.Put(b[:], binary.LittleEndian)
		if got := mcountloc.DecodeEntry(b[:], binary.LittleEndian); got != e {
			t.Errorf("%+v: decoded as %+v", e, got)
		}
		if err := e.Check(); err != nil {
			t.Errorf("%+v: %v", e, err)
		}
		if !e.Pad && e.Pre == 0 && b[5] != byte(e.Kind) {
			t.Errorf("%+v: kind byte %#x, want the plain kind (tables before patchable entries)", e, b[5])
		}
	}
	for _, e := range []mcountloc.Entry{
		{Len: 0, Kind: mcountloc.KindNops, Magic: mcountloc.MagicRecorded},
		{Len: 5, Kind: mcountloc.KindBL, Magic: mcountloc.MagicRecorded},
		{Len: 5, Kind: mcountloc.KindBrasl, Magic: mcountloc.MagicRecorded},
		{Len: 5, Kind: 7, Magic: mcountloc.MagicRecorded},
	} {
		if e.Check() == nil {
			t.Errorf("%+v: accepted", e)
		}
	}
}

// patchableListed reads the addresses an object's __patchable_function_entries sections
// list (section name -> sorted offsets), with debug/elf.
func patchableListed(t testing.TB, data []byte) siteMap {
	t.Helper()
	f := openELF(t, data)
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	m := siteMap{}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || int(s.Info) >= len(f.Sections) || f.Sections[s.Info].Name != mcountloc.PatchableSection {
			continue
		}
		for _, r := range relas(t, f, s) {
			sym := syms[r.Sym-1]
			sec := f.Sections[sym.Section].Name
			m[sec] = append(m[sec], sym.Value+uint64(r.Addend))
		}
	}
	for _, v := range m {
		slices.Sort(v)
	}
	return m
}

// patchCompiler is one compiler of the patchable-entry oracle.
type patchCompiler struct {
	name, cc, cxx string
	target        []string // clang --target
	unit          int      // bytes per patchable nop
	padFlag       string   // flag adding a landing pad
}

var patchCompilers = []patchCompiler{
	{name: "gcc-aarch64", cc: "aarch64-linux-gnu-gcc", cxx: "aarch64-linux-gnu-g++", unit: 4, padFlag: "-mbranch-protection=standard"},
	{name: "clang-aarch64", cc: "clang", target: []string{"--target=aarch64-linux-gnu"}, unit: 4, padFlag: "-mbranch-protection=standard"},
	{name: "gcc-x86", cc: "gcc", cxx: "g++", unit: 1, padFlag: "-fcf-protection"},
	{name: "clang-x86", cc: "clang", unit: 1, padFlag: "-fcf-protection"},
}

// usable reports whether the compiler is installed and can compile C for its target.
func (c patchCompiler) usable(t *testing.T, dir string) bool {
	if _, err := exec.LookPath(c.cc); err != nil {
		return false
	}
	args := append(append([]string{}, c.target...), "-c", "-x", "c", "-", "-o", filepath.Join(dir, c.name+"-probe.o"))
	cmd := exec.Command(c.cc, args...)
	cmd.Stdin = strings.NewReader("#include <stdlib.h>\nint f(void) { return abs(-1); }\n")
	return cmd.Run() == nil
}

// patchLoopC adds a function that starts with an aligned loop (its header may follow the
// entry nops with alignment nops of its own).
const patchLoopC = `
void loop_first(int *p, int n) { for (int i = 0; i < n; i++) p[i] += i * 7; }
int do_first(int x) { int s = 0; do { s += x; x >>= 1; } while (x); return s; }
`

// TestRecordPatchable compiles C with -fpatchable-function-entry=N[,M] for aarch64 and
// x86-64 (gcc and clang) and checks recordmcount's table against the compiler's own
// __patchable_function_entries: one entry per listed area (in recorded sections), at the
// first nop after the entry (and landing pad), N-M nops long, whose landing pad and area
// before the function lead back to the listed address.
func TestRecordPatchable(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.c": oracleC + patchLoopC})
	ran := 0
	for _, c := range patchCompilers {
		if !c.usable(t, dir) {
			t.Logf("%s: %s cannot compile here: skipped", c.name, c.cc)
			continue
		}
		for _, nm := range [][2]int{{2, 0}, {4, 2}, {3, 1}, {1, 0}, {5, 0}, {9, 4}} {
			if c.unit == 1 && nm[0] < 5 || c.unit == 4 && nm[0] > 4 {
				continue
			}
			for _, opt := range []string{"-O0", "-O2"} {
				for _, extra := range []string{"", c.padFlag, "-ffunction-sections -fPIC"} {
					flags := append(append([]string{}, c.target...), opt, fmt.Sprintf("-fpatchable-function-entry=%d,%d", nm[0], nm[1]))
					flags = append(flags, strings.Fields(extra)...)
					name := c.name + strings.ReplaceAll(strings.Join(flags[len(c.target):], ""), "-", "_")
					ran++
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						obj := filepath.Join(dir, strings.ReplaceAll(name, "=", "")+".o")
						testenv.Run(t, dir, c.cc, append(flags, "-c", "t.c", "-o", obj)...)
						patchableCase(t, obj, (nm[0]-nm[1])*c.unit, nm[1]*c.unit)
					})
				}
			}
		}
	}
	if ran == 0 {
		t.Skip("no compiler for -fpatchable-function-entry (install gcc-aarch64-linux-gnu)")
	}
}

func patchableCase(t *testing.T, obj string, wantLen, wantPre int) {
	data := mustRead(t, obj)
	listed := patchableListed(t, data).onlyRecorded()
	res := record(t, obj)
	got := ourSites(t, mustRead(t, obj))
	if got.count() != listed.count() || got.count() < 8 {
		t.Fatalf("%d sites recorded, %d listed by the compiler\nours:   %v\nlisted: %v", got.count(), listed.count(), got, listed)
	}
	starts := siteMap{}
	for _, s := range res.Sites {
		if s.Kind != mcountloc.KindNops || s.Len != wantLen || s.PreBytes != wantPre {
			t.Errorf("%v: want %d bytes of nops, %d before the function", s, wantLen, wantPre)
		}
		// The compilers list the first nop: before the function when M > 0, else after
		// the landing pad.
		start := s.Offset
		if s.PreBytes > 0 {
			start -= uint64(s.PreBytes)
			if s.Pad {
				start -= 4
			}
		}
		starts[s.Section] = append(starts[s.Section], start)
	}
	for _, v := range starts {
		slices.Sort(v)
	}
	if starts.String() != listed.String() {
		t.Errorf("areas differ\nrecordmcount: %v\ncompiler:     %v", starts, listed)
	}
	if again := record(t, obj); again.Out != nil {
		t.Error("second run changed the object")
	}
}

// TestRecordPatchableMixed: gcc -pg -mfentry with -fpatchable-function-entry=8,8 (the
// x86-64 CALL_OPS layout): the __fentry__ call sites carry the 8 bytes before the function;
// with -fcf-protection also the landing pad. An area the entry cannot hold (3 bytes) is
// reported and the site is kept. A function without the hook (no_instrument_function,
// which gcc and clang still list) is passed over without a word; an object built without
// -pg -mfentry, whose areas have no hook at all, is reported once.
func TestRecordPatchableMixed(t *testing.T) {
	testenv.Need(t, "gcc")
	dir := t.TempDir()
	const notraceC = "__attribute__((no_instrument_function)) int quiet_fn(int x) { return x * 7; }\n"
	writeFiles(t, dir, map[string]string{"t.c": oracleC + patchLoopC + notraceC})
	for _, c := range []struct {
		cc      string
		flags   string
		pre     int
		problem string
	}{
		{"gcc", "-pg -mfentry -fpatchable-function-entry=8,8 -falign-functions=16", 8, ""},
		{"gcc", "-pg -mfentry -fpatchable-function-entry=8,8 -fcf-protection -fPIC", 8, ""},
		{"gcc", "-pg -mfentry -fpatchable-function-entry=16,16 -fcf-protection", 16, ""},
		{"clang", "-pg -mfentry -fpatchable-function-entry=8,8 -falign-functions=16", 8, ""},
		{"clang", "-pg -mfentry -fpatchable-function-entry=8,8 -fcf-protection -fPIC", 8, ""},
		{"gcc", "-fpatchable-function-entry=8,3", 0, "the area of 3 bytes of nops before the function"},
		{"gcc", "-fpatchable-function-entry=4,4", -1, "no nop and no hook call at the entry"},
		{"clang", "-fpatchable-function-entry=8,8", -1, "no nop and no hook call at the entry"},
	} {
		t.Run(c.cc+strings.ReplaceAll(strings.ReplaceAll(c.flags, " ", ""), "-", "_"), func(t *testing.T) {
			testenv.Need(t, c.cc)
			obj := filepath.Join(dir, fmt.Sprintf("m%s%d.o", c.cc, len(c.flags)+c.pre))
			testenv.Run(t, dir, c.cc, append(strings.Fields("-O2 -c t.c -o "+obj), strings.Fields(c.flags)...)...)
			res, err := mcountloc.Record(mustRead(t, obj))
			if err != nil {
				t.Fatal(err)
			}
			if c.problem != "" {
				if len(res.Problems) == 0 || !strings.Contains(strings.Join(res.Problems, "\n"), c.problem) {
					t.Fatalf("problems %q, want %q", res.Problems, c.problem)
				}
			} else if len(res.Problems) > 0 {
				t.Fatalf("problems: %q", res.Problems)
			}
			if c.pre < 0 {
				if len(res.Sites) != 0 {
					t.Fatalf("sites %v, want none", res.Sites)
				}
				return
			}
			if len(res.Sites) < 8 {
				t.Fatalf("only %d sites", len(res.Sites))
			}
			// Functions whose address is not taken get no endbr64 even with -fcf-protection.
			pad := strings.Contains(c.flags, "-fcf-protection")
			pads := 0
			for _, s := range res.Sites {
				if s.PreBytes != c.pre || s.Pad && !pad {
					t.Errorf("%v: want pre %d, pad %v", s, c.pre, pad)
				}
				if s.Pad {
					pads++
				}
			}
			if pad && pads == 0 {
				t.Error("no site with a landing pad")
			}
			// The entries in the written object say the same.
			f := openELF(t, res.Out)
			for _, sec := range f.Sections {
				if sec.Name != mcountloc.TableSection {
					continue
				}
				d, _ := sec.Data()
				for i := 0; i+8 <= len(d); i += 8 {
					e := mcountloc.DecodeEntry(d[i:], binary.LittleEndian)
					if int(e.Pre) != c.pre || e.Pad && !pad {
						t.Errorf("entry %+v: want pre %d pad %v", e, c.pre, pad)
					}
				}
			}
		})
	}
}

// TestRecordAArch64Pg: gcc -pg on aarch64 calls _mcount after the prologue; the object is
// refused (ErrMcountSite, with the aarch64 advice) and the refusal names the first of the
// `bl _mcount` sites its R_AARCH64_CALL26 relocations mark.
func TestRecordAArch64Pg(t *testing.T) {
	testenv.Need(t, "aarch64-linux-gnu-gcc")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.c": oracleC})
	for _, opt := range []string{"-O0", "-O2", "-O2 -ffunction-sections -fPIC"} {
		obj := filepath.Join(dir, fmt.Sprintf("pg%d.o", len(opt)))
		testenv.Run(t, dir, "aarch64-linux-gnu-gcc", append(strings.Fields(opt), "-pg", "-c", "t.c", "-o", obj)...)
		data := mustRead(t, obj)
		f := openELF(t, data)
		syms, _ := f.Symbols()
		var calls []string
		for _, s := range f.Sections {
			if s.Type != elf.SHT_RELA || f.Sections[s.Info].Flags&elf.SHF_EXECINSTR == 0 {
				continue
			}
			for _, r := range relas(t, f, s) {
				if r.Sym > 0 && syms[r.Sym-1].Name == "_mcount" {
					if elf.R_AARCH64(r.Type) != elf.R_AARCH64_CALL26 {
						t.Fatalf("_mcount relocation %v", elf.R_AARCH64(r.Type))
					}
					calls = append(calls, fmt.Sprintf("%s+%#x", f.Sections[s.Info].Name, r.Off))
				}
			}
		}
		if len(calls) < 6 {
			t.Fatalf("%s: only %d calls to _mcount", opt, len(calls))
		}
		_, err := mcountloc.Record(data)
		if !errors.Is(err, mcountloc.ErrMcountSite) || !strings.Contains(err.Error(), "-fpatchable-function-entry=2") {
			t.Fatalf("%s: Record error %v, want the aarch64 ErrMcountSite", opt, err)
		}
		if !strings.HasPrefix(err.Error(), calls[0]+" ") && !slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(err.Error(), c+" ") }) {
			t.Errorf("%s: error %q names none of the _mcount calls %v", opt, err, calls)
		}
		if !bytes.Equal(data, mustRead(t, obj)) {
			t.Error("object changed")
		}
	}
}

// TestRecordAArch64BodyNop: a function whose own code starts with a nop (inline asm, or
// a loop's alignment right behind bti c) runs on from the two entry nops: its site is
// still the two the runtime patches, not the whole run (it had recorded 12 bytes, which
// ftlink accepted and the runtime refused).
func TestRecordAArch64BodyNop(t *testing.T) {
	testenv.Need(t, "aarch64-linux-gnu-gcc")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.c": `__attribute__((noinline)) int sum(int n) { return n * 3; }
__attribute__((noinline, aligned(16))) void pad(void) { __asm__ volatile("nop"); }
__attribute__((noinline)) void pad2(void) { __asm__ volatile("nop; nop"); }
`})
	for _, extra := range []string{"", "-mbranch-protection=standard"} {
		obj := filepath.Join(dir, "t"+extra+".o")
		testenv.Run(t, dir, "aarch64-linux-gnu-gcc", append(strings.Fields(extra), "-O2", "-fpatchable-function-entry=2", "-c", "t.c", "-o", obj)...)
		res := record(t, obj)
		if len(res.Sites) != 3 {
			t.Fatalf("%s: %d sites, want 3: %v", extra, len(res.Sites), res.Sites)
		}
		for _, s := range res.Sites {
			if s.Len != 8 {
				t.Errorf("%s: %v: %d bytes, want the two entry nops", extra, s, s.Len)
			}
		}
	}
}
