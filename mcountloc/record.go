package mcountloc

import (
	"debug/elf"
	"errors"
	"fmt"
	"sort"

	"github.com/ftkit/ftkit/elfrw"
)

// ObjSite is one call to a profiling hook found in a relocatable object.
type ObjSite struct {
	Section  string // executable section holding the call
	SecIndex int
	Offset   uint64 // offset of the call's first byte in the section
	Len      int
	Kind     Kind
	Func     string // function containing the site ("" if no symbol covers it)
	Callee   string // __fentry__, mcount or _mcount; "" for a patchable-entry area
	// -fpatchable-function-entry: a landing pad precedes the site, and the size in bytes of
	// the nop area before the function (Entry.Pad, Entry.Pre).
	Pad      bool
	PreBytes int
}

func (s ObjSite) String() string {
	extra := ""
	if s.Pad {
		extra += " pad"
	}
	if s.PreBytes > 0 {
		extra += fmt.Sprintf(" pre %d", s.PreBytes)
	}
	return fmt.Sprintf("%s+%#x len %d %v%s %s", s.Section, s.Offset, s.Len, s.Kind, extra, s.Func)
}

// Result is what Record found and did.
type Result struct {
	Sites      []ObjSite // recorded sites, by section index and offset
	Unrecorded []ObjSite // calls in executable sections whose names are not recorded
	Problems   []string  // hook relocations that are not a recognised call, patchable entries that do not hold: reported, not recorded
	Note       string    // why the file was left unchanged, when it was
	Out        []byte    // new file contents; nil when unchanged
}

// Record finds the call sites in the ELF relocatable object data and returns the object
// with one __mcount_loc part (and its relocation section) per text section with sites, as
// described in docs/table-format.md. Malformed input gives an error, never a panic.
func Record(data []byte) (*Result, error) {
	f, err := elfrw.Parse(data)
	if err != nil {
		return nil, err
	}
	if f.Type != elf.ET_REL {
		return nil, fmt.Errorf("not a relocatable object (type %v)", f.Type)
	}
	arch := ArchFor(f.Machine, f.Class)
	if arch == nil {
		return nil, errors.New(unsupported(f.Machine, f.Class))
	}
	if len(f.Sections) == 0 {
		return nil, fmt.Errorf("%w: no section header table", elfrw.ErrFormat)
	}
	res := &Result{}
	for _, s := range f.Sections[1:] {
		if s.Name == TableSection {
			if s.Flags&elf.SHF_LINK_ORDER != 0 {
				res.Note = "already has ftkit __mcount_loc tables: left unchanged"
			} else {
				res.Note = "already has a __mcount_loc table (gcc -mrecord-mcount?): left unchanged"
			}
			return res, nil
		}
	}
	symtab := f.SymTab()
	if symtab == nil {
		res.Note = "no symbol table, so no call sites"
		return res, nil
	}
	syms, err := f.Symbols(symtab)
	if err != nil {
		return nil, err
	}
	if arch.FuncSyms != nil {
		syms = arch.FuncSyms(syms)
	}
	sites, err := findSites(f, arch, symtab, syms, res)
	if err != nil {
		return nil, err
	}
	if sites, err = checkObjEntries(f, arch, syms, sites, res); err != nil {
		return nil, err
	}
	patch, fixes, err := patchableSites(f, arch, symtab, syms, res)
	if err != nil {
		return nil, err
	}
	sites = mergePatchable(sites, patch, res)
	for i := range sites {
		s := &sites[i]
		if _, ok := prePart(s.PreBytes); !ok {
			res.Problems = append(res.Problems, fmt.Sprintf("%s+%#x (%s): the area of %d bytes of nops before the function (an entry holds a multiple of 4 bytes up to %d; the site itself is recorded)",
				s.Section, s.Offset, s.Func, s.PreBytes, MaxPre))
			s.PreBytes = 0
		}
	}
	for _, s := range sites {
		if IsRecordedSection(s.Section) {
			res.Sites = append(res.Sites, s)
		} else {
			res.Unrecorded = append(res.Unrecorded, s)
		}
	}
	if len(res.Sites) == 0 {
		res.Note = "no call sites to record"
		return res, nil
	}
	if err := writeTables(f, arch, symtab, syms, res.Sites); err != nil {
		return nil, err
	}
	for _, x := range fixes {
		f.SetData(x.rs, f.EncodeRelocs(x.rs.Type == elf.SHT_RELA, x.relocs))
	}
	if res.Out, err = f.Bytes(); err != nil {
		return nil, err
	}
	return res, nil
}

// findSites returns the checked call sites of every executable section, sorted.
func findSites(f *elfrw.File, arch *Arch, symtab *elfrw.Section, syms []elfrw.Symbol, res *Result) ([]ObjSite, error) {
	var sites []ObjSite
	for _, rs := range f.Sections {
		if rs.Type != elf.SHT_REL && rs.Type != elf.SHT_RELA {
			continue
		}
		if rs.Flags&elf.SHF_ALLOC != 0 {
			continue // dynamic relocations: not in ET_REL
		}
		if int(rs.Info) == 0 || int(rs.Info) >= len(f.Sections) {
			return nil, fmt.Errorf("%w: relocation section %s applies to section %d of %d", elfrw.ErrFormat, rs.Name, rs.Info, len(f.Sections))
		}
		text := f.Sections[rs.Info]
		if text.Type != elf.SHT_PROGBITS || text.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		if int(rs.Link) != symtab.Index {
			return nil, fmt.Errorf("%w: relocation section %s links section %d, not the symbol table", elfrw.ErrFormat, rs.Name, rs.Link)
		}
		relocs, err := f.Relocs(rs)
		if err != nil {
			return nil, err
		}
		code := f.SectionData(text)
		for _, r := range relocs {
			if int(r.Sym) >= len(syms) {
				return nil, fmt.Errorf("%w: %s: relocation at %#x refers to symbol %d of %d", elfrw.ErrFormat, rs.Name, r.Off, r.Sym, len(syms))
			}
			callee := syms[r.Sym].Name
			if !Callees[callee] || syms[r.Sym].Type() == elf.STT_SECTION {
				continue
			}
			where := fmt.Sprintf("%s+%#x", text.Name, r.Off)
			want, ok := arch.SiteRelocs[r.Type]
			if !ok && IsMcountName(callee) {
				// gcc -pg's call through the GOT (i386 PIC) or a long-call sequence: the
				// object is refused like any mcount object.
				return nil, fmt.Errorf("%s (relocation type %d): %w", where, r.Type, arch.McountErr)
			}
			if !ok {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: relocation type %d against %s is not a call site relocation", where, r.Type, callee))
				continue
			}
			if rs.Type == elf.SHT_RELA && r.Addend != arch.SiteAddend {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: relocation against %s has addend %d, not %d: not a call", where, callee, r.Addend, arch.SiteAddend))
				continue
			}
			back := uint64(want.Len() - 4)
			if r.Off < back || r.Off > uint64(len(code)) {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: relocation against %s outside a possible call instruction", where, callee))
				continue
			}
			if rs.Type == elf.SHT_REL && r.Off+4 <= uint64(len(code)) && int64(int32(f.ByteOrder.Uint32(code[r.Off:]))) != arch.SiteAddend {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: relocation against %s has addend %d in place, not %d: not a call", where, callee, int32(f.ByteOrder.Uint32(code[r.Off:])), arch.SiteAddend))
				continue
			}
			if r.Off+4 > uint64(len(code)) {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: relocation against %s outside a possible call instruction", where, callee))
				continue
			}
			site := r.Off - back
			k, n, err := arch.Decode(code[site:])
			if err != nil && IsMcountName(callee) {
				// an mcount call of another form (s390x brasl %r14): refused as well
				return nil, fmt.Errorf("%s+%#x: %w", text.Name, site, arch.McountErr)
			}
			if err != nil || k != want {
				if err == nil {
					err = fmt.Errorf("found %v, relocation type expects %v", k, want)
				}
				res.Problems = append(res.Problems, fmt.Sprintf("%s+%#x: relocation against %s is not on a call: %v", text.Name, site, callee, err))
				continue
			}
			sites = append(sites, ObjSite{Section: text.Name, SecIndex: text.Index, Offset: site, Len: n, Kind: k, Callee: callee})
		}
	}
	sort.Slice(sites, func(i, j int) bool {
		if sites[i].SecIndex != sites[j].SecIndex {
			return sites[i].SecIndex < sites[j].SecIndex
		}
		return sites[i].Offset < sites[j].Offset
	})
	out := sites[:0]
	for i, s := range sites {
		if i > 0 && s.SecIndex == sites[i-1].SecIndex && s.Offset == sites[i-1].Offset {
			res.Problems = append(res.Problems, fmt.Sprintf("%s+%#x: two relocations for one call site", s.Section, s.Offset))
			continue
		}
		out = append(out, s)
	}
	idx := newFuncIndex(syms)
	for i := range out {
		out[i].Func = idx.at(out[i].SecIndex, out[i].Offset)
	}
	return out, nil
}

// funcIndex names the symbol covering an offset of a section, preferring functions, as
// one scan of the symbol table in table order would (the first function covering it,
// else the first other symbol), in logarithmic time: an object of 300k functions has
// 300k sites, and a scan per site made recordmcount quadratic.
type funcIndex map[int]*secSyms

type secSyms struct {
	syms   []candSym
	maxEnd []uint64 // maxEnd[i]: the highest end among syms[:i+1]
}

type candSym struct {
	value, end uint64
	order      int // index in the symbol table
	isFunc     bool
	name       string
}

func newFuncIndex(syms []elfrw.Symbol) funcIndex {
	idx := funcIndex{}
	for i, s := range syms {
		if s.Shndx >= uint32(elf.SHN_LORESERVE) || s.Name == "" {
			continue
		}
		t := s.Type()
		if t != elf.STT_FUNC && t != elf.STT_NOTYPE && t != elf.STT_GNU_IFUNC {
			continue
		}
		ss := idx[int(s.Shndx)]
		if ss == nil {
			ss = &secSyms{}
			idx[int(s.Shndx)] = ss
		}
		ss.syms = append(ss.syms, candSym{value: s.Value, end: s.Value + s.Size, order: i, isFunc: t == elf.STT_FUNC, name: s.Name})
	}
	for _, ss := range idx {
		sort.Slice(ss.syms, func(i, j int) bool { return ss.syms[i].value < ss.syms[j].value })
		ss.maxEnd = make([]uint64, len(ss.syms))
		var m uint64
		for i, c := range ss.syms {
			m = max(m, c.end)
			ss.maxEnd[i] = m
		}
	}
	return idx
}

func (idx funcIndex) at(sec int, off uint64) string {
	ss := idx[sec]
	if ss == nil {
		return ""
	}
	// the candidates starting at or before off, walked down while one may still cover it
	j := sort.Search(len(ss.syms), func(i int) bool { return ss.syms[i].value > off }) - 1
	var best *candSym
	for ; j >= 0 && (ss.maxEnd[j] > off || ss.syms[j].value == off); j-- {
		c := &ss.syms[j]
		if !(off < c.end || (c.end == c.value && c.value == off)) {
			continue
		}
		if best == nil || (c.isFunc && !best.isFunc) || (c.isFunc == best.isFunc && c.order < best.order) {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	return best.name
}

// writeTables adds the __mcount_loc parts and their relocation sections to f.
func writeTables(f *elfrw.File, arch *Arch, symtab *elfrw.Section, syms []elfrw.Symbol, sites []ObjSite) error {
	// Text sections with sites, in order, and their section symbols.
	var texts []int
	bySec := map[int][]ObjSite{}
	for _, s := range sites {
		if len(bySec[s.SecIndex]) == 0 {
			texts = append(texts, s.SecIndex)
		}
		bySec[s.SecIndex] = append(bySec[s.SecIndex], s)
	}
	secSym := map[int]uint32{}
	for i, s := range syms {
		if s.Type() == elf.STT_SECTION && s.Bind() == elf.STB_LOCAL && s.Shndx < uint32(len(f.Sections)) {
			if _, ok := secSym[int(s.Shndx)]; !ok {
				secSym[int(s.Shndx)] = uint32(i)
			}
		}
	}
	var missing []int
	var add []elfrw.Symbol
	for _, t := range texts {
		if _, ok := secSym[t]; !ok {
			missing = append(missing, t)
			add = append(add, elfrw.Symbol{Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_SECTION), Shndx: uint32(t)})
		}
	}
	if len(add) > 0 {
		idx, err := f.AddLocalSymbols(add)
		if err != nil {
			return fmt.Errorf("adding section symbols: %w", err)
		}
		// Existing local symbols keep their indices; globals moved, but we only use
		// section symbols, which are local.
		for i, t := range missing {
			secSym[t] = idx[i]
		}
	}
	// RISC-V linker relaxation moves code and the symbols in it, but not a section
	// symbol's addend: there each entry refers to a local symbol of its own at the site.
	siteSym := map[[2]uint64]uint32{}
	if arch.SiteSymbols {
		var at []elfrw.Symbol
		for _, s := range sites {
			at = append(at, elfrw.Symbol{Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_NOTYPE), Shndx: uint32(s.SecIndex), Value: s.Offset})
		}
		idx, err := f.AddLocalSymbols(at)
		if err != nil {
			return fmt.Errorf("adding site symbols: %w", err)
		}
		for i, s := range sites {
			siteSym[[2]uint64{uint64(s.SecIndex), s.Offset}] = idx[i]
		}
	}
	// Group membership of each text section.
	groupOf := map[int]*elfrw.Section{}
	members := map[*elfrw.Section][]uint32{}
	flags := map[*elfrw.Section]uint32{}
	for _, g := range f.Sections {
		if g.Type != elf.SHT_GROUP {
			continue
		}
		fl, m, err := f.GroupMembers(g)
		if err != nil {
			return err
		}
		flags[g], members[g] = fl, m
		for _, x := range m {
			groupOf[int(x)] = g
		}
	}
	bo := f.ByteOrder
	for _, t := range texts {
		text := f.Sections[t]
		ss := bySec[t]
		data := make([]byte, EntrySize*len(ss))
		relocs := make([]elfrw.Reloc, len(ss))
		for i, s := range ss {
			e := Entry{Len: uint8(s.Len), Kind: s.Kind, Pad: s.Pad, Pre: uint8(s.PreBytes), Magic: MagicRecorded}
			if !arch.Rela {
				e.Rel = int32(s.Offset)
			}
			e.Put(data[i*EntrySize:], bo)
			relocs[i] = elfrw.Reloc{Off: uint64(i * EntrySize), Sym: secSym[t], Type: arch.TableReloc}
			if arch.Rela {
				relocs[i].Addend = int64(s.Offset)
			}
			if arch.SiteSymbols {
				relocs[i].Sym, relocs[i].Addend = siteSym[[2]uint64{uint64(t), s.Offset}], 0
			}
		}
		gflag := elf.SectionFlag(0)
		g := groupOf[t]
		if g != nil || text.Flags&elf.SHF_GROUP != 0 {
			if g == nil {
				return fmt.Errorf("%w: section %s has SHF_GROUP but is in no group", elfrw.ErrFormat, text.Name)
			}
			gflag = elf.SHF_GROUP
		}
		tab := f.AddSection(elfrw.Section{
			Name: TableSection, Type: elf.SHT_PROGBITS,
			Flags: elf.SHF_ALLOC | elf.SHF_LINK_ORDER | gflag,
			Link:  uint32(t), Addralign: 8, Entsize: EntrySize,
		}, data)
		relName, relType := ".rela"+TableSection, elf.SHT_RELA
		if !arch.Rela {
			relName, relType = ".rel"+TableSection, elf.SHT_REL
		}
		rel := f.AddSection(elfrw.Section{
			Name: relName, Type: relType, Flags: elf.SHF_INFO_LINK | gflag,
			Link: uint32(symtab.Index), Info: uint32(tab.Index),
			Addralign: uint64(map[bool]int{true: 8, false: 4}[f.Is64()]),
			Entsize:   uint64(f.RelocSize(arch.Rela)),
		}, f.EncodeRelocs(arch.Rela, relocs))
		if g != nil {
			members[g] = append(members[g], uint32(tab.Index), uint32(rel.Index))
		}
	}
	for g, m := range members {
		if len(m) > 0 {
			old := f.SectionData(g)
			if len(old) != 4+4*len(m) {
				f.SetGroupMembers(g, flags[g], m)
			}
		}
	}
	return nil
}
