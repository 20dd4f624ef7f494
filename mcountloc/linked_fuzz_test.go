package mcountloc

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FuzzLinked feeds the linked-file reader, the site checker and the rewriter with mutated
// linked binaries. The binaries are real ones built here (the crafted table as PIE and
// ET_EXEC, a gcc-style relocated table with RELA and RELR, a C program built with
// -pg -mfentry -mrecord-mcount, one with DWARF and an overridden weak function); the fuzzer picks one, overwrites its table with table
// (when not empty) and patches the bytes at patchOff. Inputs stay small, so mutation and
// minimisation are fast. Without gcc only raw inputs are tried.
func FuzzLinked(f *testing.F) {
	var files [][]byte
	if _, err := exec.LookPath("gcc"); err == nil {
		dir := f.TempDir()
		paths := []string{
			gccBuild(f, dir, "crafted", craftedAsm),
			gccBuild(f, dir, "crafted-exec", craftedAsm, "-no-pie"),
			gccBuild(f, dir, "gcctab", gccTableAsm),
			gccBuild(f, dir, "gcctab-relr", gccTableAsm, "-Wl,-z,pack-relative-relocs"),
		}
		c := filepath.Join(dir, "c.c")
		if err := os.WriteFile(c, []byte("int f(int x){return x+1;}\nint main(void){return f(-1);}\n"), 0o644); err != nil {
			f.Fatal(err)
		}
		prog := filepath.Join(dir, "cprog")
		if out, err := exec.Command("gcc", "-O2", "-pg", "-mfentry", "-mrecord-mcount", "-o", prog, c).CombinedOutput(); err != nil {
			f.Fatalf("gcc: %v\n%s", err, out)
		}
		paths = append(paths, prog)
		// An overridden weak function with DWARF: its site is named from the debug info.
		wa, wb := filepath.Join(dir, "wa.c"), filepath.Join(dir, "wb.c")
		if err := os.WriteFile(wa, []byte("int __attribute__((weak)) hook(int x){return x+100;}\n"), 0o644); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(wb, []byte("int hook(int x){return x*2;}\nint main(void){return hook(0);}\n"), 0o644); err != nil {
			f.Fatal(err)
		}
		weak := filepath.Join(dir, "weak")
		if out, err := exec.Command("gcc", "-O2", "-g", "-pg", "-mfentry", "-mrecord-mcount", "-o", weak, wa, wb).CombinedOutput(); err != nil {
			f.Fatalf("gcc: %v\n%s", err, out)
		}
		paths = append(paths, weak)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			files = append(files, b)
		}
	}
	files = append(files, patchableLinkedSeeds(f)...)
	for i, b := range files {
		f.Add(uint8(i), []byte(nil), uint32(0), []byte(nil))
		if l, err := OpenLinked(b, nil); err == nil {
			tab := append([]byte(nil), b[l.TableOff:l.TableOff+l.TableSize]...)
			f.Add(uint8(i), tab, uint32(l.TableOff), []byte{0xff, 0x15})
			f.Add(uint8(i), []byte(nil), uint32(0x20), []byte{0, 0, 0, 0, 0x80})
		}
	}
	f.Add(uint8(255), []byte("\x7fELF\x02\x01\x01"), uint32(0), []byte{0x7f})
	recoverPanics = false
	f.Fuzz(func(t *testing.T, seed uint8, table []byte, patchOff uint32, patch []byte) {
		var file []byte
		if int(seed) < len(files) {
			file = append([]byte(nil), files[seed]...)
		} else {
			file = append([]byte(nil), table...) // raw input
			table = nil
		}
		if len(table) > 0 {
			if ef, err := elf.NewFile(bytes.NewReader(file)); err == nil {
				if s := ef.Section(TableSection); s != nil && s.Offset < uint64(len(file)) {
					copy(file[s.Offset:], table[:min(uint64(len(table)), s.Size)])
				}
			}
		}
		if len(file) > 0 && len(patch) > 0 {
			copy(file[int(patchOff)%len(file):], patch)
		}
		orig := append([]byte(nil), file...)
		l, err := OpenLinked(file, nil)
		if err != nil {
			return
		}
		out, err := l.Rewrite()
		if err == nil && len(out) != len(file) {
			t.Fatalf("rewrite changed the size from %d to %d", len(file), len(out))
		}
		l.CheckProcessed()
		if !bytes.Equal(orig, file) {
			t.Fatal("input modified")
		}
	})
}

// crossHooks defines the hooks of the call-site modes of issue 17's machines.
const crossHooks = `
#if defined(__s390x__)
__asm__(".globl __fentry__\n.type __fentry__, @function\n__fentry__: lgr %r1, %r0\nbr %r1\n");
#elif defined(__powerpc64__)
__asm__(".globl _mcount\n.type _mcount, @function\n_mcount: mflr 12\nmtctr 12\nmtlr 0\nbctr\n");
#elif defined(__i386__)
__attribute__((no_instrument_function)) void __fentry__(void) {}
#endif
`

// patchableLinkedSeeds builds -fpatchable-function-entry programs through recordmcount:
// aarch64 PIE with BTI and an area before each function (as linked and as ftlink leaves
// it) and an x86-64 one. A missing compiler leaves its seeds out.
func patchableLinkedSeeds(f *testing.F) [][]byte {
	dir := f.TempDir()
	c := filepath.Join(dir, "p.c")
	if err := os.WriteFile(c, []byte(fuzzC+"\nint main(void) { return 0; }\n"+crossHooks), 0o644); err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for i, b := range []struct {
		cc    string
		flags []string
		link  string
	}{
		{"aarch64-linux-gnu-gcc", []string{"-O2", "-fPIE", "-fpatchable-function-entry=4,2", "-mbranch-protection=standard"}, ""},
		{"gcc", []string{"-O2", "-fPIE", "-fpatchable-function-entry=5", "-fcf-protection"}, ""},
		// issue 17's machines
		{"i686-linux-gnu-gcc", []string{"-O2", "-pg", "-mfentry", "-fno-pie", "-fcf-protection"}, "-no-pie"},
		{"i686-linux-gnu-gcc", []string{"-O2", "-fPIE", "-fpatchable-function-entry=8,4"}, ""},
		{"arm-linux-gnueabihf-gcc", []string{"-O2", "-fPIE", "-fpatchable-function-entry=4,2"}, ""},
		{"riscv64-linux-gnu-gcc", []string{"-O2", "-fPIE", "-fpatchable-function-entry=4"}, ""},
		{"s390x-linux-gnu-gcc", []string{"-O2", "-fPIE", "-pg", "-mfentry"}, ""},
		{"s390x-linux-gnu-gcc", []string{"-O2", "-fPIE", "-fpatchable-function-entry=2"}, ""},
		{"powerpc64le-linux-gnu-gcc", []string{"-O2", "-fPIE", "-pg", "-mprofile-kernel"}, ""},
	} {
		if _, err := exec.LookPath(b.cc); err != nil {
			f.Logf("%s not installed: seed left out", b.cc)
			continue
		}
		obj, prog := filepath.Join(dir, fmt.Sprintf("p%d.o", i)), filepath.Join(dir, fmt.Sprintf("p%d", i))
		if msg, err := exec.Command(b.cc, append(b.flags, "-c", "-o", obj, c)...).CombinedOutput(); err != nil {
			f.Fatalf("%s: %v\n%s", b.cc, err, msg)
		}
		data, err := os.ReadFile(obj)
		if err != nil {
			f.Fatal(err)
		}
		res, err := Record(data)
		if err != nil || res.Out == nil {
			f.Fatalf("recording %s: %v", obj, err)
		}
		if err := os.WriteFile(obj, res.Out, 0o644); err != nil {
			f.Fatal(err)
		}
		link := b.link
		if link == "" {
			link = "-pie"
		}
		if msg, err := exec.Command(b.cc, link, "-o", prog, obj).CombinedOutput(); err != nil {
			f.Fatalf("%s: %v\n%s", b.cc, err, msg)
		}
		linked, err := os.ReadFile(prog)
		if err != nil {
			f.Fatal(err)
		}
		l, err := OpenLinked(linked, nil)
		if err != nil {
			f.Fatalf("%s: %v", prog, err)
		}
		done, err := l.Rewrite()
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, linked, done)
	}
	return out
}
