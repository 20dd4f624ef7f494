package elfrw_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/testenv"
)

// fuzzSeeds compiles testC (and, for section groups, a C++ source with inline and template
// functions) for every target whose compiler is installed: ELF32 and ELF64, little and big
// endian, REL and RELA, with COMDAT groups.
func fuzzSeeds(f *testing.F) [][]byte {
	dir := f.TempDir()
	var files [][]byte
	for i, tg := range targets {
		if _, err := exec.LookPath(tg.cc); err != nil {
			f.Logf("%s not installed: %s seed left out", tg.cc, tg.name)
			continue
		}
		src := filepath.Join(dir, "t.c")
		body := testC
		if tg.cxx {
			body = testCXX
		}
		if err := os.WriteFile(src, []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
		obj := filepath.Join(dir, "t"+string(rune('a'+i))+".o")
		if out, err := exec.Command(tg.cc, append(append([]string{}, tg.flags...), "-c", src, "-o", obj)...).CombinedOutput(); err != nil {
			f.Fatalf("%s: %v\n%s", tg.name, err, out)
		}
		data, err := os.ReadFile(obj)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, data)
	}
	return files
}

// FuzzElfrw reads mutated real objects (a seed file patched at off, cut to cut bytes when
// cut is not 0; patch alone when seed is out of range) with every reader of elfrw, then
// adds a section symbol, a section and a group member and writes the result. Nothing may
// panic or modify the input; errors must wrap ErrFormat; a written file must parse again,
// with the additions in it and every section elfrw does not rewrite byte-identical.
func FuzzElfrw(f *testing.F) {
	files := fuzzSeeds(f)
	for i, data := range files {
		f.Add(uint8(i), uint32(0), []byte(nil), uint32(0))
		f.Add(uint8(i), uint32(len(data)-100), []byte{0xff, 0xff, 0xff, 0xff}, uint32(0))
		f.Add(uint8(i), uint32(0), []byte(nil), uint32(len(data)-30))
	}
	f.Add(uint8(255), uint32(0), []byte("\x7fELF\x01\x02\x01"), uint32(0))
	f.Fuzz(func(t *testing.T, seed uint8, off uint32, patch []byte, cut uint32) {
		in := testenv.FuzzInput(files, seed, off, patch, cut)
		orig := append([]byte(nil), in...)
		check := func(err error) bool {
			t.Helper()
			if err == nil {
				return true
			}
			if !errors.Is(err, elfrw.ErrFormat) && !strings.Contains(err.Error(), "not an ELF file") && !strings.Contains(err.Error(), "cannot be renumbered") {
				t.Fatalf("error does not wrap ErrFormat: %v", err)
			}
			return false
		}
		defer func() {
			if !bytes.Equal(in, orig) {
				t.Fatal("input modified")
			}
		}()
		ef, err := elfrw.Parse(in)
		if !check(err) || len(ef.Sections) == 0 {
			return
		}
		symtab := ef.SymTab()
		var nsyms int
		if symtab != nil {
			syms, err := ef.Symbols(symtab)
			if !check(err) {
				return
			}
			nsyms = len(syms)
		}
		var group *elfrw.Section
		for _, s := range ef.Sections {
			_ = ef.SectionData(s)
			switch s.Type {
			case elf.SHT_REL, elf.SHT_RELA:
				if _, err := ef.Relocs(s); !check(err) {
					return
				}
			case elf.SHT_GROUP:
				if _, _, err := ef.GroupMembers(s); !check(err) {
					return
				}
				if group == nil {
					group = s
				}
			}
		}
		// Modify: a section symbol, a note, a group member.
		if symtab != nil && len(ef.Sections) > 1 {
			if _, err := ef.AddLocalSymbols([]elfrw.Symbol{{Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_SECTION), Shndx: 1}}); !check(err) {
				return
			}
		}
		note := noteBytes(ef.ByteOrder)
		ef.AddSection(elfrw.Section{Name: ".note.ftkit-fuzz", Type: elf.SHT_NOTE, Addralign: 4}, note)
		if group != nil {
			fl, m, _ := ef.GroupMembers(group)
			extra := ef.AddSection(elfrw.Section{Name: ".comment.ftkit", Type: elf.SHT_PROGBITS, Flags: elf.SHF_GROUP, Addralign: 1}, []byte("x\x00"))
			ef.SetGroupMembers(group, fl, append(m, uint32(extra.Index)))
		}
		out, err := ef.Bytes()
		if !check(err) {
			return
		}
		g, err := elfrw.Parse(out)
		if err != nil {
			t.Fatalf("output does not parse: %v", err)
		}
		if n := g.SectionByName(".note.ftkit-fuzz"); n == nil || !bytes.Equal(g.SectionData(n), note) {
			t.Fatal("new note section missing or wrong in the output")
		}
		if symtab != nil && len(ef.Sections) > 1 {
			gs, err := g.Symbols(g.SymTab())
			if err != nil {
				t.Fatalf("output symbols: %v", err)
			}
			if len(gs) != nsyms+1 {
				t.Fatalf("%d symbols in the output, want %d", len(gs), nsyms+1)
			}
		}
		// Sections elfrw does not rewrite keep their bytes where they were.
		of, _ := elfrw.Parse(orig)
		for i, s := range of.Sections {
			switch s.Type {
			case elf.SHT_NULL, elf.SHT_NOBITS, elf.SHT_SYMTAB, elf.SHT_REL, elf.SHT_RELA, elf.SHT_GROUP, elf.SHT_STRTAB, elf.SHT_SYMTAB_SHNDX, 0x6fff4c03:
				continue
			}
			if g.Sections[i].Offset != s.Offset || !bytes.Equal(g.SectionData(g.Sections[i]), of.SectionData(s)) {
				t.Fatalf("section %d (%s) moved or changed", i, s.Name)
			}
		}
	})
}
