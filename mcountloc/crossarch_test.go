package mcountloc_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
)

// crossMode is one build mode of a cross compiler and the oracle recordmcount's table is
// compared with.
type crossMode struct {
	flags string
	// oracle: "record" (gcc's own -mrecord-mcount table of the same build), "patchable"
	// (the compiler's __patchable_function_entries), "relocs" (the call relocations
	// against the hook, minus relocBack), "refuse" (Record must fail with ErrMcountSite).
	oracle    string
	relocBack uint64
	// link: the link mode of the linked test ("" for none).
	link string
}

type crossArch struct {
	name, triplet string
	qemu          string // qemu-user binary to run the linked programs, "" for none
	stub          string // the hooks linked with the programs (default hookStub)
	modes         []crossMode
}

var crossArches = []crossArch{
	{name: "i386", triplet: "i686-linux-gnu", qemu: "qemu-i386", modes: []crossMode{
		{flags: "-pg -mfentry -fno-pie", oracle: "record", link: "-no-pie"},
		{flags: "-pg -mfentry -fno-pie -fcf-protection -ffunction-sections", oracle: "record", link: "-no-pie"},
		{flags: "-pg -mfentry -fno-pie", oracle: "relocs", relocBack: 1},
		{flags: "-fpatchable-function-entry=5", oracle: "patchable", link: "-pie"},
		{flags: "-fpatchable-function-entry=8,4 -fcf-protection -ffunction-sections", oracle: "patchable", link: "-pie"},
		{flags: "-pg", oracle: "refuse"},
		{flags: "-pg -fno-pie", oracle: "refuse"},
	}},
	{name: "arm", triplet: "arm-linux-gnueabihf", qemu: "qemu-arm", modes: []crossMode{
		{flags: "-fpatchable-function-entry=2", oracle: "patchable", link: "-pie"},
		{flags: "-fpatchable-function-entry=4,2 -ffunction-sections", oracle: "patchable", link: "-pie"},
		{flags: "-fpatchable-function-entry=2,1 -marm", oracle: "patchable", link: "-no-pie"},
		{flags: "-pg", oracle: "refuse"},
		{flags: "-pg -marm", oracle: "refuse"},
	}},
	{name: "riscv64", triplet: "riscv64-linux-gnu", qemu: "qemu-riscv64", modes: []crossMode{
		{flags: "-fpatchable-function-entry=4", oracle: "patchable", link: "-pie"},
		{flags: "-fpatchable-function-entry=4,2 -ffunction-sections", oracle: "patchable", link: "-pie"},
		{flags: "-fpatchable-function-entry=2 -march=rv64g", oracle: "patchable", link: "-no-pie"},
		{flags: "-pg", oracle: "refuse"},
	}},
	{name: "s390x", triplet: "s390x-linux-gnu", qemu: "qemu-s390x",
		// brasl %r0, __fentry__ returns through %r0 (br %r0 would not branch: via %r1).
		stub: "__asm__(\".globl __fentry__\\n.type __fentry__, @function\\n__fentry__: lgr %r1, %r0\\nbr %r1\\n.size __fentry__, .-__fentry__\");\n", modes: []crossMode{
			{flags: "-pg -mfentry", oracle: "record", link: "-pie"},
			{flags: "-pg -mfentry -ffunction-sections -fno-pie", oracle: "record", link: "-no-pie"},
			{flags: "-pg -mfentry", oracle: "relocs", relocBack: 2},
			{flags: "-fpatchable-function-entry=2", oracle: "patchable", link: "-pie"},
			{flags: "-fpatchable-function-entry=4,2 -ffunction-sections", oracle: "patchable", link: "-pie"},
			{flags: "-pg", oracle: "refuse"},
		}},
	{name: "ppc64le", triplet: "powerpc64le-linux-gnu", qemu: "qemu-ppc64le",
		// -mprofile-kernel: _mcount returns to its caller's call site with the traced
		// function's return address (r0, saved by mflr r0) back in lr.
		stub: "__asm__(\".globl _mcount\\n.type _mcount, @function\\n_mcount: mflr 12\\nmtctr 12\\nmtlr 0\\nbctr\\n.size _mcount, .-_mcount\");\n", modes: []crossMode{
			{flags: "-pg -mprofile-kernel", oracle: "relocs", link: "-pie"},
			{flags: "-pg -mprofile-kernel -ffunction-sections -fno-pie", oracle: "relocs", link: "-no-pie"},
			{flags: "-pg", oracle: "refuse"},
		}},
}

// TestCrossMIPSRefused: mips64el objects and programs are refused with the reason, the
// object unchanged.
func TestCrossMIPSRefused(t *testing.T) {
	testenv.Need(t, "mips64el-linux-gnuabi64-gcc")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.c": oracleC})
	for i, flags := range [][]string{{"-pg"}, {"-fpatchable-function-entry=2"}} {
		obj := filepath.Join(dir, fmt.Sprintf("t%d.o", i))
		testenv.Run(t, dir, "mips64el-linux-gnuabi64-gcc", append(flags, "-O2", "-c", "t.c", "-o", obj)...)
		before := mustRead(t, obj)
		if _, err := mcountloc.Record(before); err == nil || !strings.Contains(err.Error(), "mips is not supported") {
			t.Errorf("%v: Record error %v", flags, err)
		}
		r := testenv.Exec(t, dir, testenv.Tool(t, "recordmcount"), obj)
		if r.Code == 0 || !strings.Contains(r.Stderr, "mips is not supported") || !bytes.Equal(mustRead(t, obj), before) {
			t.Errorf("%v: recordmcount exit %d: %s", flags, r.Code, r.Stderr)
		}
		prog := filepath.Join(dir, fmt.Sprintf("p%d", i))
		testenv.Run(t, dir, "mips64el-linux-gnuabi64-gcc", obj, "-o", prog)
		if _, err := mcountloc.OpenLinked(mustRead(t, prog), nil); !errors.Is(err, mcountloc.ErrMachine) || !strings.Contains(err.Error(), "mips is not supported") {
			t.Errorf("%v: OpenLinked error %v", flags, err)
		}
	}
}

// TestCrossPPCPatchable: gcc 12 puts ppc64le's patchable nops before the global entry
// point's TOC set-up, where calls through the local entry point skip them; recordmcount
// records the functions without a TOC set-up and reports the others.
func TestCrossPPCPatchable(t *testing.T) {
	testenv.Need(t, "powerpc64le-linux-gnu-gcc")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"t.c": oracleC})
	testenv.Run(t, dir, "powerpc64le-linux-gnu-gcc", "-O2", "-fpatchable-function-entry=2", "-c", "t.c", "-o", "t.o")
	data := mustRead(t, filepath.Join(dir, "t.o"))
	listed := absList(t, data, mcountloc.PatchableSection).onlyRecorded()
	res, err := mcountloc.Record(data)
	if err != nil {
		t.Fatal(err)
	}
	toc := 0
	for _, p := range res.Problems {
		if !strings.Contains(p, "TOC set-up") {
			t.Errorf("problem %q", p)
		}
		toc++
	}
	if toc == 0 || len(res.Sites) == 0 || len(res.Sites)+toc != listed.count() {
		t.Errorf("%d listed, %d recorded, %d reported: %v", listed.count(), len(res.Sites), toc, res.Problems)
	}
}

// absList reads a list of absolute addresses (gcc's __mcount_loc, or
// __patchable_function_entries) from an object: section name -> sorted offsets.
func absList(t testing.TB, data []byte, list string) siteMap {
	t.Helper()
	f, err := elfrw.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols(f.SymTab())
	if err != nil {
		t.Fatal(err)
	}
	m := siteMap{}
	for _, rs := range f.Sections {
		if (rs.Type != elf.SHT_REL && rs.Type != elf.SHT_RELA) || int(rs.Info) >= len(f.Sections) || f.Sections[rs.Info].Name != list {
			continue
		}
		tab := f.SectionData(f.Sections[rs.Info])
		relocs, err := f.Relocs(rs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range relocs {
			if r.Type == 0 {
				continue
			}
			add := r.Addend
			if rs.Type == elf.SHT_REL {
				if f.Is64() {
					add = int64(f.ByteOrder.Uint64(tab[r.Off:]))
				} else {
					add = int64(int32(f.ByteOrder.Uint32(tab[r.Off:])))
				}
			}
			sym := syms[r.Sym]
			sec := f.Sections[sym.Shndx].Name
			m[sec] = append(m[sec], sym.Value+uint64(add))
		}
	}
	for _, v := range m {
		slices.Sort(v)
	}
	return m
}

// callRelocs lists the relocations of executable sections against the hooks, moved back by
// back bytes (the relocated field's offset in the call instruction).
func callRelocs(t testing.TB, data []byte, back uint64) siteMap {
	t.Helper()
	f, err := elfrw.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols(f.SymTab())
	if err != nil {
		t.Fatal(err)
	}
	m := siteMap{}
	for _, rs := range f.Sections {
		if rs.Type != elf.SHT_REL && rs.Type != elf.SHT_RELA {
			continue
		}
		text := f.Sections[rs.Info]
		if text.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		relocs, err := f.Relocs(rs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range relocs {
			if mcountloc.Callees[syms[r.Sym].Name] {
				m[text.Name] = append(m[text.Name], r.Off-back)
			}
		}
	}
	for _, v := range m {
		slices.Sort(v)
	}
	return m
}

// crossOurSites reads the ftkit table parts of a recorded object of any machine with elfrw
// (debug/elf cannot apply their relocations): section name -> sorted site offsets, and the
// area starts (site - landing pad - area before the function) of the same entries.
func crossOurSites(t testing.TB, data []byte) (sites, areas siteMap) {
	t.Helper()
	f, err := elfrw.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols(f.SymTab())
	if err != nil {
		t.Fatal(err)
	}
	sites, areas = siteMap{}, siteMap{}
	for _, rs := range f.Sections {
		if (rs.Type != elf.SHT_REL && rs.Type != elf.SHT_RELA) || int(rs.Info) >= len(f.Sections) || f.Sections[rs.Info].Name != mcountloc.TableSection {
			continue
		}
		tab := f.Sections[rs.Info]
		if tab.Flags&elf.SHF_LINK_ORDER == 0 {
			t.Fatalf("table part without SHF_LINK_ORDER")
		}
		text := f.Sections[tab.Link]
		d := f.SectionData(tab)
		relocs, err := f.Relocs(rs)
		if err != nil {
			t.Fatal(err)
		}
		if len(relocs) != len(d)/mcountloc.EntrySize {
			t.Fatalf("%s part of %s: %d relocations for %d entries", tab.Name, text.Name, len(relocs), len(d)/mcountloc.EntrySize)
		}
		var prev int64 = -1
		for i, r := range relocs {
			if uint64(i*mcountloc.EntrySize) != r.Off {
				t.Fatalf("relocation %d at %#x", i, r.Off)
			}
			sym := syms[r.Sym]
			if int(sym.Shndx) != text.Index || sym.Bind() != elf.STB_LOCAL {
				t.Fatalf("relocation %d against %q, not a local symbol of %s", i, sym.Name, text.Name)
			}
			// RISC-V: a local symbol at each site (linker relaxation); else the section symbol.
			if siteSyms := f.Machine == elf.EM_RISCV; siteSyms != (sym.Type() == elf.STT_NOTYPE) || !siteSyms && sym.Type() != elf.STT_SECTION {
				t.Fatalf("relocation %d against %q of type %v", i, sym.Name, sym.Type())
			}
			e := mcountloc.DecodeEntry(d[r.Off:], f.ByteOrder)
			if err := e.Check(); err != nil || e.Magic != mcountloc.MagicRecorded {
				t.Fatalf("entry %d: %+v: %v", i, e, err)
			}
			off := int64(sym.Value) + r.Addend
			if rs.Type == elf.SHT_REL {
				off = int64(e.Rel)
			}
			if off <= prev {
				t.Fatalf("%s: entries not in ascending order", text.Name)
			}
			prev = off
			sites[text.Name] = append(sites[text.Name], uint64(off))
			area := uint64(off) - uint64(e.Pre)
			if e.Pad {
				area -= 4
			}
			areas[text.Name] = append(areas[text.Name], area)
		}
	}
	return sites, areas
}

// crossCompile compiles src with the arch's compiler into obj.
func crossCompile(t *testing.T, a crossArch, dir, cc, src, obj string, flags ...string) {
	t.Helper()
	testenv.Run(t, dir, a.triplet+"-"+cc, append(append([]string{}, flags...), "-c", src, "-o", obj)...)
}

// TestCrossOracle compiles C and C++ (templates, COMDAT groups) with each Debian cross
// compiler in each supported mode and compares recordmcount's table per object with the
// compiler's own record (-mrecord-mcount), its __patchable_function_entries or the call
// relocations; modes ftkit does not support must be refused with the file unchanged.
// Recording twice changes nothing. The objects are then linked (where the mode says how),
// checked and rewritten by ftlink's code (OpenLinked, Rewrite) and, with qemu-user, run.
func TestCrossOracle(t *testing.T) {
	for _, a := range crossArches {
		t.Run(a.name, func(t *testing.T) {
			testenv.Need(t, a.triplet+"-gcc", a.triplet+"-g++")
			dir := t.TempDir()
			writeFiles(t, dir, cxxFiles)
			stub := a.stub
			if stub == "" {
				stub = hookStub
			}
			writeFiles(t, dir, map[string]string{"t.c": oracleC, "stub.c": stub})
			crossCompile(t, a, dir, "gcc", "stub.c", "stub.o", "-O2", "-fPIC")
			for i, m := range a.modes {
				for _, opt := range []string{"-O0", "-O2"} {
					m, base := m, fmt.Sprintf("m%d%s", i, opt)
					flags := append(strings.Fields(m.flags), opt)
					t.Run(strings.ReplaceAll(strings.Join(flags, ""), "-", "_"), func(t *testing.T) {
						t.Parallel()
						crossCase(t, a, m, dir, base, flags)
					})
				}
			}
		})
	}
}

func crossCase(t *testing.T, a crossArch, m crossMode, dir, base string, flags []string) {
	var objs []string
	for _, src := range []string{"t.c", "a.cc", "b.cc", "c.cc", "main.cc"} {
		cc := "g++"
		if strings.HasSuffix(src, ".c") {
			cc = "gcc"
		}
		stem := strings.TrimSuffix(strings.TrimSuffix(src, ".c"), ".cc")
		obj := filepath.Join(dir, base+"-"+stem+".o")
		crossCompile(t, a, dir, cc, src, obj, flags...)
		before := mustRead(t, obj)
		if m.oracle == "refuse" {
			res, err := mcountloc.Record(before)
			if !errors.Is(err, mcountloc.ErrMcountSite) {
				t.Fatalf("%s: Record = %v, %v; want ErrMcountSite", src, res, err)
			}
			if !strings.Contains(err.Error(), "recompile") {
				t.Errorf("%s: the error gives no advice: %v", src, err)
			}
			r := testenv.Exec(t, dir, testenv.Tool(t, "recordmcount"), obj)
			if r.Code == 0 || !bytes.Equal(mustRead(t, obj), before) {
				t.Errorf("%s: recordmcount exit %d, file changed: %v", src, r.Code, !bytes.Equal(mustRead(t, obj), before))
			}
			if src == "t.c" {
				continue
			}
			return
		}
		var want siteMap
		switch m.oracle {
		case "record":
			theirs := obj + ".gcc.o"
			crossCompile(t, a, dir, cc, src, theirs, append(append([]string{}, flags...), "-mrecord-mcount")...)
			want = absList(t, mustRead(t, theirs), mcountloc.TableSection)
		case "patchable":
			want = absList(t, before, mcountloc.PatchableSection)
		case "relocs":
			want = callRelocs(t, before, m.relocBack)
		}
		want = want.onlyRecorded()
		res := record(t, obj)
		got, areas := crossOurSites(t, mustRead(t, obj))
		if m.oracle == "patchable" {
			got = areas
		}
		if got.String() != want.String() || got.count() == 0 {
			t.Errorf("%s: sites differ\nrecordmcount: %v\n%s: %v", src, got, m.oracle, want)
		}
		if src == "t.c" && (len(res.Unrecorded) != 0 || !strings.Contains(got.String(), "custom")) {
			t.Errorf("t.c: unrecorded %v, want custom's site recorded: %v", res.Unrecorded, got)
		}
		again, err := mcountloc.Record(mustRead(t, obj))
		if err != nil || again.Out != nil || !strings.Contains(again.Note, "already") {
			t.Errorf("%s: second run: %v, changed %v", src, err, again != nil && again.Out != nil)
		}
		if src != "t.c" {
			objs = append(objs, obj)
		}
	}
	if m.link == "" || m.oracle == "refuse" {
		return
	}
	prog := filepath.Join(dir, base+"-prog")
	args := append(append([]string{m.link}, objs...), filepath.Join(dir, "stub.o"), "-o", prog)
	if r := testenv.Exec(t, dir, a.triplet+"-g++", args...); r.Code != 0 || r.Stderr != "" {
		t.Fatalf("link %v: exit %d\n%s", args, r.Code, r.Stderr)
	}
	crossLinked(t, a, prog)
}

// crossLinked checks a linked cross program the way ftlink does: every entry good, then
// rewritten, and the result processed; with qemu-user it runs before and after.
func crossLinked(t *testing.T, a crossArch, prog string) {
	data := mustRead(t, prog)
	l, err := mcountloc.OpenLinked(data, nil)
	if err != nil {
		t.Fatalf("OpenLinked: %v", err)
	}
	if len(l.Sites) < 8 {
		t.Errorf("only %d sites", len(l.Sites))
	}
	for _, s := range l.Sites {
		if !s.Good() || s.Func == "" {
			t.Errorf("site %#x (%s): err %v dup %v", s.Addr, s.Func, s.Err, s.Dup)
		}
	}
	out, err := l.Rewrite()
	if err != nil {
		t.Fatal(err)
	}
	l2, err := mcountloc.OpenLinked(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !l2.Processed || len(l2.CheckProcessed()) != 0 {
		t.Errorf("after rewrite: processed %v, %q", l2.Processed, l2.CheckProcessed())
	}
	if err := os.WriteFile(prog+".ft", out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{prog, prog + ".ft"} {
		for _, c := range []string{"--check", "--list"} {
			if r := testenv.Exec(t, "", testenv.Tool(t, "ftlink"), c, p); r.Code != 0 {
				t.Errorf("ftlink %s %s: exit %d\n%s%s", c, p, r.Code, r.Stdout, r.Stderr)
			}
		}
	}
	if _, err := exec.LookPath(a.qemu); a.qemu == "" || err != nil {
		t.Logf("%s not installed: programs not run", a.qemu)
		return
	}
	var outs []string
	for _, p := range []string{prog, prog + ".ft"} {
		r := testenv.Exec(t, "", "timeout", append([]string{"120"}, testenv.QEMU(strings.TrimPrefix(a.qemu, "qemu-"), a.triplet, p)...)...)
		if r.Stderr != "" || strings.TrimSpace(r.Stdout) == "" {
			t.Errorf("%s %s: exit %d\n%s%s", a.qemu, p, r.Code, r.Stdout, r.Stderr)
		}
		outs = append(outs, r.Stdout)
	}
	if outs[0] != outs[1] {
		t.Errorf("the rewritten program prints %q, the linked one %q", outs[1], outs[0])
	}
}
