package mcountloc_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/elfrw"
	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/mcountloc"
)

// siteMap maps a text section name to the sorted offsets of its call sites.
type siteMap map[string][]uint64

func (m siteMap) String() string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s:%#x ", k, m[k])
	}
	return b.String()
}

func (m siteMap) count() int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// onlyRecorded drops sections recordmcount does not record (gcc records every section).
func (m siteMap) onlyRecorded() siteMap {
	out := siteMap{}
	for k, v := range m {
		if mcountloc.IsRecordedSection(k) {
			out[k] = v
		}
	}
	return out
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openELF(t testing.TB, data []byte) *elf.File {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("debug/elf: %v", err)
	}
	return f
}

// gccSites reads the __mcount_loc table gcc -mrecord-mcount wrote into an object: absolute
// R_X86_64_64 relocations against symbols of the text sections.
func gccSites(t testing.TB, data []byte) siteMap {
	t.Helper()
	f := openELF(t, data)
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	m := siteMap{}
	found := false
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || s.Name != ".rela__mcount_loc" {
			continue
		}
		found = true
		rels := relas(t, f, s)
		for _, r := range rels {
			if elf.R_X86_64(r.Type) != elf.R_X86_64_64 {
				t.Fatalf("gcc table relocation type %v", elf.R_X86_64(r.Type))
			}
			sym := syms[r.Sym-1]
			sec := f.Sections[sym.Section].Name
			m[sec] = append(m[sec], sym.Value+uint64(r.Addend))
		}
	}
	if !found && f.Section("__mcount_loc") != nil {
		t.Fatal("gcc object has __mcount_loc without .rela__mcount_loc")
	}
	for _, v := range m {
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	}
	return m
}

func relas(t testing.TB, f *elf.File, s *elf.Section) []elfrw.Reloc {
	t.Helper()
	d, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	var out []elfrw.Reloc
	for i := 0; i+24 <= len(d); i += 24 {
		info := binary.LittleEndian.Uint64(d[i+8:])
		out = append(out, elfrw.Reloc{Off: binary.LittleEndian.Uint64(d[i:]), Sym: uint32(info >> 32), Type: uint32(info), Addend: int64(binary.LittleEndian.Uint64(d[i+16:]))})
	}
	return out
}

// ourSites reads and checks the tables recordmcount wrote into an object (with debug/elf,
// independently of elfrw): one part per text section, SHF_LINK_ORDER to it, same COMDAT
// group, PC32 relocations against its section symbol, entries sorted, well-formed bytes
// that match the code at each site.
func ourSites(t testing.TB, data []byte) siteMap {
	t.Helper()
	f := openELF(t, data)
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	groupOf := map[int]int{}
	for i, s := range f.Sections {
		if s.Type == elf.SHT_GROUP {
			d, _ := s.Data()
			for j := 4; j+4 <= len(d); j += 4 {
				groupOf[int(binary.LittleEndian.Uint32(d[j:]))] = i
			}
		}
	}
	var xindex []byte
	for _, s := range f.Sections {
		if s.Type == elf.SHT_SYMTAB_SHNDX {
			xindex, _ = s.Data()
		}
	}
	symSection := func(i uint32) int {
		sec := syms[i-1].Section
		if sec == elf.SHN_XINDEX && int(4*i+4) <= len(xindex) {
			return int(binary.LittleEndian.Uint32(xindex[4*i:]))
		}
		return int(sec)
	}
	m := siteMap{}
	seen := map[int]bool{}
	for i, s := range f.Sections {
		if s.Name != mcountloc.TableSection {
			continue
		}
		if s.Type != elf.SHT_PROGBITS || s.Flags&(elf.SHF_ALLOC|elf.SHF_LINK_ORDER) != elf.SHF_ALLOC|elf.SHF_LINK_ORDER || s.Addralign != 8 || s.Entsize != 8 {
			t.Fatalf("table part %d: type %v flags %v align %d entsize %d", i, s.Type, s.Flags, s.Addralign, s.Entsize)
		}
		text := f.Sections[s.Link]
		if text.Flags&elf.SHF_EXECINSTR == 0 || seen[int(s.Link)] {
			t.Fatalf("table part %d links %s (executable? %v, second part? %v)", i, text.Name, text.Flags&elf.SHF_EXECINSTR != 0, seen[int(s.Link)])
		}
		seen[int(s.Link)] = true
		g, inGroup := groupOf[int(s.Link)]
		if inGroup != (s.Flags&elf.SHF_GROUP != 0) || (inGroup && groupOf[i] != g) {
			t.Fatalf("table part for %s: group membership wrong (text group %d, part group %d, flags %v)", text.Name, g, groupOf[i], s.Flags)
		}
		var rel *elf.Section
		for j, r := range f.Sections {
			if r.Type == elf.SHT_RELA && int(r.Info) == i {
				rel = r
				if r.Flags&elf.SHF_INFO_LINK == 0 || (inGroup && groupOf[j] != g) {
					t.Fatalf("%s for %s: flags %v, group %d", r.Name, text.Name, r.Flags, groupOf[j])
				}
			}
		}
		if rel == nil {
			t.Fatalf("table part for %s has no relocations", text.Name)
		}
		d, _ := s.Data()
		code, _ := text.Data()
		rs := relas(t, f, rel)
		if len(rs)*8 != len(d) {
			t.Fatalf("%s: %d relocations for %d entries", text.Name, len(rs), len(d)/8)
		}
		var offs []uint64
		for k, r := range rs {
			sym := syms[r.Sym-1]
			arch := mcountloc.ArchFor(f.Machine, f.Class)
			if r.Off != uint64(8*k) || r.Type != arch.TableReloc || elf.ST_TYPE(sym.Info) != elf.STT_SECTION || symSection(r.Sym) != int(s.Link) {
				t.Fatalf("%s entry %d: relocation %+v against %+v", text.Name, k, r, sym)
			}
			e := mcountloc.DecodeEntry(d[8*k:], binary.LittleEndian)
			if e.Rel != 0 || e.Magic != mcountloc.MagicRecorded || e.Check() != nil {
				t.Fatalf("%s entry %d: %+v", text.Name, k, e)
			}
			site := uint64(r.Addend)
			if e.Kind == mcountloc.KindNops {
				checkNops(t, arch, code, site, e)
			} else {
				kind, n, err := arch.Decode(code[site:])
				if err != nil || kind != e.Kind || n != int(e.Len) {
					t.Fatalf("%s+%#x: entry %+v, code decodes as %v %d %v", text.Name, site, e, kind, n, err)
				}
			}
			if k > 0 && site <= offs[k-1] {
				t.Fatalf("%s: entries not strictly ascending", text.Name)
			}
			offs = append(offs, site)
		}
		m[text.Name] = offs
	}
	return m
}

// linkedSites reads the __mcount_loc table of a linked program, in either format, and
// returns every site as "function+offset" together with the addresses.
type linkedSite struct {
	addr uint64
	name string
}

func linkedTable(t testing.TB, path string, gccFormat bool) []linkedSite {
	t.Helper()
	data := mustRead(t, path)
	f := openELF(t, data)
	tab := f.Section(mcountloc.TableSection)
	if tab == nil {
		t.Fatalf("%s: no __mcount_loc", path)
	}
	d, err := tab.Data()
	if err != nil {
		t.Fatal(err)
	}
	// Dynamic relocations of the table (gcc's absolute format in a PIE).
	dyn := map[uint64]uint64{}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_RELA && s.Flags&elf.SHF_ALLOC != 0 {
			for _, r := range relas(t, f, s) {
				if r.Off >= tab.Addr && r.Off < tab.Addr+tab.Size {
					if gccFormat && elf.R_X86_64(r.Type) == elf.R_X86_64_RELATIVE {
						dyn[r.Off] = uint64(r.Addend)
						continue
					}
					t.Fatalf("%s: dynamic relocation %v at %#x in __mcount_loc", path, elf.R_X86_64(r.Type), r.Off)
				}
			}
		}
	}
	syms, _ := f.Symbols()
	var out []linkedSite
	for i := 0; i+8 <= len(d); i += 8 {
		ea := tab.Addr + uint64(i)
		var addr uint64
		if gccFormat {
			addr = binary.LittleEndian.Uint64(d[i:])
			if v, ok := dyn[ea]; ok {
				addr = v
			}
		} else {
			e := mcountloc.DecodeEntry(d[i:], binary.LittleEndian)
			if e.IsZero() {
				continue
			}
			if err := e.Check(); err != nil {
				t.Fatalf("%s: entry %d: %v", path, i/8, err)
			}
			addr = ea + uint64(int64(e.Rel))
		}
		out = append(out, linkedSite{addr, symbolize(syms, addr)})
	}
	return out
}

func symbolize(syms []elf.Symbol, addr uint64) string {
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value <= addr && addr < s.Value+s.Size {
			return fmt.Sprintf("%s+%#x", s.Name, addr-s.Value)
		}
	}
	return fmt.Sprintf("?%#x", addr)
}

// checkLinkedCalls checks that every entry of a linked program's ftkit table is the start
// of a call to one of the hooks, and that no site appears twice. It returns the sites.
func checkLinkedCalls(t testing.TB, path string) []linkedSite {
	t.Helper()
	sites := linkedTable(t, path, false)
	f := openELF(t, mustRead(t, path))
	syms, _ := f.Symbols()
	hooks := map[uint64]string{}
	for _, s := range syms {
		if mcountloc.Callees[s.Name] && s.Section != elf.SHN_UNDEF {
			hooks[s.Value] = s.Name
		}
	}
	if len(hooks) == 0 {
		t.Fatalf("%s: no __fentry__/mcount definition", path)
	}
	seen := map[uint64]bool{}
	for _, s := range sites {
		if seen[s.addr] {
			t.Errorf("%s: site %#x (%s) recorded twice", path, s.addr, s.name)
		}
		seen[s.addr] = true
		code := codeAt(t, f, s.addr, 8)
		kind, _, target, err := mcountloc.X86SiteTarget(s.addr, code)
		if err != nil {
			t.Errorf("%s: site %#x (%s): %v", path, s.addr, s.name, err)
			continue
		}
		if kind == mcountloc.KindCallGOT {
			// Through the GOT: the slot must be in .got.
			got := f.Section(".got")
			if got == nil || target < got.Addr || target >= got.Addr+got.Size {
				t.Errorf("%s: site %#x (%s) calls through %#x, not a GOT slot", path, s.addr, s.name, target)
			}
			continue
		}
		if hooks[target] == "" {
			t.Errorf("%s: site %#x (%s) calls %#x (%s), not a hook", path, s.addr, s.name, target, symbolize(syms, target))
		}
	}
	if len(sites) == 0 {
		t.Errorf("%s: empty table", path)
	}
	return sites
}

func codeAt(t testing.TB, f *elf.File, addr uint64, n int) []byte {
	t.Helper()
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS && addr >= s.Addr && addr+uint64(n) <= s.Addr+s.Size {
			d, _ := s.Data()
			return d[addr-s.Addr : addr-s.Addr+uint64(n)]
		}
	}
	t.Fatalf("address %#x is not in an executable section", addr)
	return nil
}

// checkNoTextrel fails when a linked file has DT_TEXTREL or DF_TEXTREL.
func checkNoTextrel(t testing.TB, path string) {
	t.Helper()
	out := testenv.Run(t, "", "readelf", "-dW", path)
	if strings.Contains(out, "TEXTREL") {
		t.Errorf("%s has TEXTREL:\n%s", path, out)
	}
}

// record runs the recorder on an object in place and returns the result.
func record(t testing.TB, path string) *mcountloc.Result {
	t.Helper()
	res, err := mcountloc.Record(mustRead(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(res.Problems) > 0 {
		t.Errorf("%s: problems: %q", path, res.Problems)
	}
	if res.Out != nil {
		if err := os.WriteFile(path, res.Out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hookStub defines the profiling hooks for links without -pg.
const hookStub = `
void __fentry__(void) {}
void mcount(void) {}
`

// readelfClean runs readelf -a -W and fails on any warning or error.
func readelfClean(t testing.TB, path string) {
	t.Helper()
	r := testenv.Exec(t, "", "readelf", "-a", "-W", path)
	if r.Code != 0 || r.Stderr != "" || strings.Contains(r.Stdout, "Warning") {
		t.Fatalf("readelf -a %s: exit %d\n%s", path, r.Code, r.Stderr)
	}
}

// checkNops checks a patchable-entry area in code: Len bytes of nops at site, the landing
// pad before it when Pad, and Pre bytes of nops before that.
func checkNops(t testing.TB, arch *mcountloc.Arch, code []byte, site uint64, e mcountloc.Entry) {
	t.Helper()
	nops := func(from, n uint64) bool {
		for at := from; at < from+n; {
			k := arch.NopLen(code[at:])
			if k == 0 {
				return false
			}
			at += uint64(k)
			if at > from+n {
				return false
			}
		}
		return true
	}
	entry := site
	if e.Pad {
		if site < 4 || !arch.IsPad(code[site-4:]) {
			t.Fatalf("site %#x: entry says a landing pad precedes it, code has % x", site, code[site-4:site])
		}
		entry -= 4
	}
	if !nops(site, uint64(e.Len)) {
		t.Fatalf("site %#x: %d bytes are not all nops: % x", site, e.Len, code[site:site+uint64(e.Len)])
	}
	if uint64(e.Pre) > entry || !nops(entry-uint64(e.Pre), uint64(e.Pre)) {
		t.Fatalf("site %#x: the %d bytes before the function are not nops", site, e.Pre)
	}
}
