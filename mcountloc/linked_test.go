package mcountloc

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// craftedAsm is a program whose table holds good, duplicate and bad entries of every kind
// ftlink must tell apart. Each slot is commented with what ftlink must conclude.
const craftedAsm = `
	.text
	.globl main
	.type main,@function
main:
	call *__fentry__@GOTPCREL(%rip)
	call f_plain
	call f_e8
	call f_other
	xor %eax,%eax
	ret
	.size main,.-main

	.type f_plain,@function
f_plain:
	call *__fentry__@GOTPCREL(%rip)
	ret
	.size f_plain,.-f_plain

	.type f_e8,@function
f_e8:
	call __fentry__@PLT
	ret
	.size f_e8,.-f_e8

	.type f_other,@function
f_other:
	call f_plain
	ret
	.size f_other,.-f_other

.Ldead:				# code no function symbol covers
	call *__fentry__@GOTPCREL(%rip)
	ret

	.section __mcount_loc,"a",@progbits
	.p2align 3
	.long main-.		# 0 good ff15
	.byte 6,2
	.short 0xF7CA
	.long f_plain-.		# 1 good ff15
	.byte 6,2
	.short 0xF7CA
	.long f_e8-.		# 2 good e8 via the PLT
	.byte 5,1
	.short 0xF7CA
	.long main-.		# 3 duplicate of 0
	.byte 6,2
	.short 0xF7CA
	.long f_other-.		# 4 a call to f_plain, not to __fentry__
	.byte 5,1
	.short 0xF7CA
	.long f_plain-.		# 5 length 5 recorded, 6-byte call found
	.byte 5,1
	.short 0xF7CA
	.long .Ldead-.		# 6 not inside any function
	.byte 6,2
	.short 0xF7CA
	.long main+1-.		# 7 garbage: middle of an instruction
	.byte 6,2
	.short 0xF7CA
	.long main-.		# 8 unknown kind
	.byte 6,7
	.short 0xF7CA
	.quad 0			# empty slot
	.long -0x7000000	# 9 far outside the text
	.byte 5,1
	.short 0xF7CA
	.quad 0x12345678	# 10 absolute (gcc-style) address outside the text
`

type slotWant struct {
	fn  string // function, "" when none
	dup bool
	err string // substring of the error, "" for a good entry
}

var craftedWant = []slotWant{
	{fn: "main"},
	{fn: "f_plain"},
	{fn: "f_e8"},
	{fn: "main", dup: true},
	{fn: "f_other", err: "not to __fentry__"},
	{fn: "f_plain", err: "entry records a 5-byte call"},
	{err: "not inside any function"},
	{fn: "main", err: "not an e8/ff15/67e8 call"},
	{fn: "main", err: "unknown call kind"},
	{err: "outside the executable sections"},
	{err: "outside the executable sections"},
}

func needTools(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not installed", p)
			}
			t.Skipf("%s not installed", p)
		}
	}
}

func gccBuild(t testing.TB, dir, name, src string, args ...string) string {
	t.Helper()
	in := filepath.Join(dir, name+".s")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("gcc", append(append([]string{"-o", out}, args...), in)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

func mustRun(t *testing.T, prog string) {
	t.Helper()
	if b, err := exec.Command(prog).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", prog, err, b)
	}
}

func openFile(t *testing.T, path string) (*Linked, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLinked(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l, data
}

func TestLinkedCraftedEntries(t *testing.T) {
	needTools(t, "gcc")
	for _, mode := range []string{"-pie", "-no-pie"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			prog := gccBuild(t, dir, "crafted", craftedAsm, mode)
			mustRun(t, prog)
			l, data := openFile(t, prog)
			if l.Processed {
				t.Error("fresh table reported as processed")
			}
			if len(l.Sites) != len(craftedWant) {
				t.Fatalf("%d sites, want %d: %+v", len(l.Sites), len(craftedWant), l.Sites)
			}
			for i, w := range craftedWant {
				s := l.Sites[i]
				if s.Func != w.fn || s.Dup != w.dup {
					t.Errorf("slot %d: func %q dup %v, want %q %v", s.Slot, s.Func, s.Dup, w.fn, w.dup)
				}
				switch {
				case w.err == "" && s.Err != nil:
					t.Errorf("slot %d (%s): unexpected error %v", s.Slot, w.fn, s.Err)
				case w.err != "" && (s.Err == nil || !strings.Contains(s.Err.Error(), w.err)):
					t.Errorf("slot %d (%s): error %v, want %q", s.Slot, w.fn, s.Err, w.err)
				}
			}
			if bad, dups := l.Problems(); bad != 7 || dups != 1 {
				t.Errorf("problems: %d bad, %d duplicates; want 7, 1", bad, dups)
			}
			out, err := l.Rewrite()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, l.data) {
				t.Fatal("Rewrite modified its input")
			}
			if err := os.WriteFile(prog, out, 0o755); err != nil {
				t.Fatal(err)
			}
			mustRun(t, prog)

			l2, _ := openFile(t, prog)
			if !l2.Processed {
				t.Error("rewritten table not recognised as processed")
			}
			var good []uint64
			for _, s := range l2.Sites {
				if !s.Good() || !s.Nop {
					t.Errorf("after rewrite: site %#x %s good=%v nop=%v err=%v", s.Addr, s.Func, s.Good(), s.Nop, s.Err)
				}
				good = append(good, s.Addr)
			}
			want := []uint64{l.Sites[0].Addr, l.Sites[1].Addr, l.Sites[2].Addr}
			if !reflect.DeepEqual(good, want) {
				t.Errorf("rewritten table sites %#x, want %#x", good, want)
			}
			if l2.Sites[2].Kind != KindCallRel || l2.Sites[2].Len != 5 || l2.Sites[0].Kind != KindCallGOT || l2.Sites[0].Len != 6 {
				t.Errorf("kinds/lengths not kept: %+v", l2.Sites)
			}
			// Bad sites are never patched: f_other's call and the dead code keep their bytes.
			for _, i := range []int{4, 6} {
				a := l.Sites[i].Addr
				off, _ := l.fileOff(a, 6)
				if !bytes.Equal(out[off:off+5], data[off:off+5]) {
					t.Errorf("bad site %#x was modified", a)
				}
			}
			if p := l2.CheckProcessed(); len(p) != 0 {
				t.Errorf("CheckProcessed on a rewritten file: %v", p)
			}
			again, err := l2.Rewrite()
			if err != nil || !bytes.Equal(again, out) {
				t.Errorf("second rewrite changed the file (err %v)", err)
			}
			// Undo one nop: the processed file must fail its check.
			off, _ := l.fileOff(l.Sites[1].Addr, 6)
			broken := append([]byte(nil), out...)
			copy(broken[off:], data[off:off+6])
			l3, err := OpenLinked(broken, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p := l3.CheckProcessed(); len(p) == 0 {
				t.Error("CheckProcessed accepts a processed file with a call left in it")
			}
		})
	}
}

// gccTableAsm has a writable gcc-style table of absolute addresses, so that the linker
// relocates it with R_X86_64_RELATIVE (RELA) or RELR in a PIE.
const gccTableAsm = `
	.text
	.globl main
	.type main,@function
main:
	call *__fentry__@GOTPCREL(%rip)
	call f
	xor %eax,%eax
	ret
	.size main,.-main
	.type f,@function
f:
	call *__fentry__@GOTPCREL(%rip)
	ret
	.size f,.-f

	.data
	.p2align 3
	.globl ptrs
ptrs:	.quad main, f, main, f	# other RELATIVE relocations around the table
	.section __mcount_loc,"aw",@progbits
	.p2align 3
	.quad f
	.quad main
	.quad f
	.section .data.more,"aw",@progbits
	.quad main, f
`

func TestLinkedGCCRelocatedTable(t *testing.T) {
	needTools(t, "gcc", "readelf")
	for _, c := range []struct {
		name string
		args []string
		relr bool
	}{
		{"rela", []string{"-pie"}, false},
		{"relr", []string{"-pie", "-Wl,-z,pack-relative-relocs"}, true},
		{"exec", []string{"-no-pie"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			prog := gccBuild(t, dir, "gcctab", gccTableAsm, c.args...)
			mustRun(t, prog)
			l, data := openFile(t, prog)
			if got := len(l.relr) > 0; got != c.relr {
				t.Fatalf("RELR in use: %v, want %v", got, c.relr)
			}
			if n := l.tableRelocs(); (n == 3) != (c.name != "exec") {
				t.Fatalf("%d dynamic relocations target the table", n)
			}
			if bad, dups := l.Problems(); bad != 0 || dups != 1 {
				t.Fatalf("%d bad, %d duplicates; want 0, 1: %+v", bad, dups, l.Sites)
			}
			for _, s := range l.Sites {
				if s.Format != FormatGCC {
					t.Errorf("slot %d format %v", s.Slot, s.Format)
				}
			}
			otherRelocs := len(l.relr) + len(l.relaAt) - l.tableRelocs()
			out, err := l.Rewrite()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(prog, out, 0o755); err != nil {
				t.Fatal(err)
			}
			mustRun(t, prog)
			l2, _ := openFile(t, prog)
			if n := l2.tableRelocs(); n != 0 {
				t.Errorf("%d dynamic relocations still target the table", n)
			}
			if n := len(l2.relr) + len(l2.relaAt); n != otherRelocs {
				t.Errorf("%d other dynamic relocations left, want %d", n, otherRelocs)
			}
			if !l2.Processed || len(l2.Sites) != 2 || !l2.Sites[0].Nop || !l2.Sites[1].Nop || l2.Sites[0].Addr > l2.Sites[1].Addr {
				t.Errorf("rewritten table: %+v", l2.Sites)
			}
			if c.name == "rela" {
				cnt, _ := l2.dynVal(elf.DT_RELACOUNT)
				old, _ := l.dynVal(elf.DT_RELACOUNT)
				if cnt != old-3 {
					t.Errorf("DT_RELACOUNT %d, want %d", cnt, old-3)
				}
			}
			if c.relr {
				sz, _ := l2.dynVal(dtRELRSZ)
				if got := encodeRelr(l2.relr); uint64(len(got))*8 != sz {
					t.Errorf("DT_RELRSZ %d, re-encoding needs %d", sz, len(got)*8)
				}
				re := exec.Command("readelf", "-rW", prog)
				b, err := re.CombinedOutput()
				if err != nil || strings.Contains(string(b), "Warning") {
					t.Errorf("readelf -r: %v\n%s", err, b)
				}
			}
			_ = data
		})
	}
}

func TestRelrRoundTrip(t *testing.T) {
	for _, addrs := range [][]uint64{
		nil,
		{0x1000},
		{0x1000, 0x1008, 0x1010},
		{0x1000, 0x1000 + 63*8, 0x1000 + 64*8, 0x1000 + 200*8, 0x9000},
		{0x2000, 0x2008, 0x2000 + 8*70, 0x2000 + 8*130, 0x2000 + 8*131, 0x2000 + 8*500},
	} {
		enc := encodeRelr(addrs)
		b := make([]byte, 8*len(enc))
		for i, e := range enc {
			binary.LittleEndian.PutUint64(b[8*i:], e)
		}
		got := decodeRelr(b, binary.LittleEndian)
		if len(addrs) == 0 && len(got) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, addrs) {
			t.Errorf("relr round trip of %#x: %#x (encoded %#x)", addrs, got, enc)
		}
	}
}

func TestOpenLinkedErrors(t *testing.T) {
	needTools(t, "gcc")
	dir := t.TempDir()
	plain := gccBuild(t, dir, "plain", "\t.text\n\t.globl main\nmain:\txor %eax,%eax\n\tret\n")
	obj := gccBuild(t, dir, "obj.o", craftedAsm, "-c")
	crafted := gccBuild(t, dir, "crafted", craftedAsm)
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// relabelled for a machine no rule set covers (aarch64 and the kernel's other
	// architectures have theirs)
	sparc := append([]byte(nil), read(crafted)...)
	binary.LittleEndian.PutUint16(sparc[18:], uint16(elf.EM_SPARCV9))
	for _, c := range []struct {
		name string
		data []byte
		want error
	}{
		{"text", []byte("#!/bin/sh\necho hi\n"), ErrNotELF},
		{"empty", nil, ErrNotELF},
		{"object", read(obj), ErrRelocatable},
		{"no table", read(plain), ErrNoTable},
		{"sparcv9", sparc, ErrMachine},
		{"truncated", read(crafted)[:200], ErrBadFile},
	} {
		if _, err := OpenLinked(c.data, nil); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
}

// outsideAsm's table has no call site at all: entries into data, far outside the image,
// at a non-call instruction, and a malformed one.
const outsideAsm = `
	.text
	.globl main
	.type main,@function
main:
	xor %eax,%eax
	ret
	.size main,.-main
	.data
val:	.quad 1
	.section __mcount_loc,"a",@progbits
	.p2align 3
	.long val-.		# into .data
	.byte 5,1
	.short 0xF7CA
	.quad 0x12345678	# absolute address outside the image
	.long main-.		# xor, not a call
	.byte 5,1
	.short 0xF7CA
	.quad 0xffffffffffffffff	# garbage
`

// deadOnlyAsm's table records only code no function symbol covers (what an overridden
// weak function leaves): every entry is dropped, legitimately.
const deadOnlyAsm = `
	.text
	.globl main
	.type main,@function
main:
	xor %eax,%eax
	ret
	.size main,.-main
.Ldead:
	call *__fentry__@GOTPCREL(%rip)
	ret
	.section __mcount_loc,"a",@progbits
	.p2align 3
	.long .Ldead-.
	.byte 6,2
	.short 0xF7CA
	.long .Ldead-.
	.byte 6,2
	.short 0xF7CA
`

func TestLinkedOutsideText(t *testing.T) {
	needTools(t, "gcc")
	dir := t.TempDir()
	for _, mode := range []string{"-pie", "-no-pie"} {
		prog := gccBuild(t, dir, "outside"+mode, outsideAsm, mode)
		data, err := os.ReadFile(prog)
		if err != nil {
			t.Fatal(err)
		}
		_, err = OpenLinked(data, nil)
		if !errors.Is(err, ErrOutsideText) {
			t.Fatalf("%s: error %v, want %v", mode, err, ErrOutsideText)
		}
		if !strings.Contains(err.Error(), "none of the 4 entries") || !strings.Contains(err.Error(), "3 point outside the executable sections") {
			t.Errorf("%s: error %q does not count the entries", mode, err)
		}
	}
	// The same wrong entries next to verified ones are dropped, not a file error.
	if _, err := OpenLinked(mustRead(t, gccBuild(t, dir, "crafted", craftedAsm)), nil); err != nil {
		t.Errorf("crafted table with good entries: %v", err)
	}
}

// TestLinkedAllDropped: a table whose every entry is legitimately dropped is no error;
// ftlink empties it, and the empty table is recognised as processed, so that a second run
// changes nothing and --check accepts it.
func TestLinkedAllDropped(t *testing.T) {
	needTools(t, "gcc")
	dir := t.TempDir()
	prog := gccBuild(t, dir, "dead", deadOnlyAsm)
	mustRun(t, prog)
	l, data := openFile(t, prog)
	if l.Processed {
		t.Error("fresh table reported as processed")
	}
	if bad, dups := l.Problems(); bad != 2 || dups != 0 || len(l.Sites) != 2 || !errors.Is(l.Sites[0].Err, ErrNoFunction) {
		t.Fatalf("sites %+v; want 2 entries of dead code", l.Sites)
	}
	if l.Sites[0].Near != "main+0x3" {
		t.Errorf("nearest symbol %q, want main+0x3", l.Sites[0].Near)
	}
	out, err := l.Rewrite()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(out, data) {
		t.Fatal("Rewrite left the table as it was")
	}
	if !bytes.Equal(out[l.TableOff:l.TableOff+l.TableSize], make([]byte, l.TableSize)) {
		t.Errorf("table not emptied: % x", out[l.TableOff:l.TableOff+l.TableSize])
	}
	l2, err := OpenLinked(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !l2.Processed || len(l2.Sites) != 0 {
		t.Errorf("emptied table: processed %v, %d sites; want processed, none", l2.Processed, len(l2.Sites))
	}
	if p := l2.CheckProcessed(); len(p) != 0 {
		t.Errorf("CheckProcessed on the emptied table: %v", p)
	}
	again, err := l2.Rewrite()
	if err != nil || !bytes.Equal(again, out) {
		t.Errorf("second rewrite changed the file (err %v)", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
