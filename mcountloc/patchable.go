package mcountloc

// Sites of -fpatchable-function-entry=N[,M] builds. gcc (and clang) list, in
// __patchable_function_entries, the address of the first nop of each function's area: with
// M = 0 the first nop at the entry (after a landing pad: endbr64, bti c), with M > 0 the
// first of the M nops placed before the function's symbol. The recorded site is always the
// first nop at the entry, after the landing pad (the kernel's arm64 rec->ip is 4 bytes
// further, the `bl`; a runtime derives it); the entry keeps the landing pad and the area
// before the function (Entry.Pad, Entry.Pre). N is not written anywhere in the object, so
// the nops at the entry are counted, and the count is cut where a branch of the function
// lands (a loop aligned right behind the area starts with nops of its own).

import (
	"debug/elf"
	"fmt"
	"sort"

	"github.com/ftkit/ftkit/elfrw"
)

// PatchableSection is the section gcc's -fpatchable-function-entry lists its areas in.
const PatchableSection = "__patchable_function_entries"

// maxPreScan bounds the nops searched before a function's symbol.
const maxPreScan = 256

// listFix is a relocation section of a __patchable_function_entries list rewritten with
// some relocations turned into type NONE.
type listFix struct {
	rs     *elfrw.Section
	relocs []elfrw.Reloc
}

// patchableSites returns the sites listed in the object's __patchable_function_entries
// sections, checked against the code; entries that do not hold are reported in res.Problems.
//
// gcc 12 writes one list per object, outside the COMDAT groups and linked (SHF_LINK_ORDER)
// to one function's section, while listing every function: the link fails as soon as a
// COMDAT copy is discarded ("defined in discarded section"). The fixes returned turn the
// list's relocations against other sections than its linked one into NONE (the slot stays
// zero); ftkit's table, with parts in the right groups, carries what they said.
func patchableSites(f *elfrw.File, arch *Arch, symtab *elfrw.Section, syms []elfrw.Symbol, res *Result) ([]ObjSite, []listFix, error) {
	if arch.PatchReloc == 0 {
		return nil, nil, nil
	}
	var sites []ObjSite
	var fixes []listFix
	fs := newFuncStarts(syms)
	psz := arch.ptrSize()
	for _, rs := range f.Sections {
		if rs.Type != elf.SHT_REL && rs.Type != elf.SHT_RELA || rs.Flags&elf.SHF_ALLOC != 0 {
			continue
		}
		if int(rs.Info) == 0 || int(rs.Info) >= len(f.Sections) || f.Sections[rs.Info].Name != PatchableSection {
			continue
		}
		if int(rs.Link) != symtab.Index {
			return nil, nil, fmt.Errorf("%w: relocation section %s links section %d, not the symbol table", elfrw.ErrFormat, rs.Name, rs.Link)
		}
		tab := f.Sections[rs.Info]
		tabData := f.SectionData(tab)
		relocs, err := f.Relocs(rs)
		if err != nil {
			return nil, nil, err
		}
		fix := listFix{rs: rs}
		for i, r := range relocs {
			where := fmt.Sprintf("%s+%#x", PatchableSection, r.Off)
			if int(r.Sym) >= len(syms) {
				return nil, nil, fmt.Errorf("%w: %s: relocation at %#x refers to symbol %d of %d", elfrw.ErrFormat, rs.Name, r.Off, r.Sym, len(syms))
			}
			if r.Type != arch.PatchReloc || r.Off%psz != 0 || r.Off+psz > uint64(len(tabData)) {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: relocation type %d at %#x is not a %d-bit entry", where, r.Type, r.Off, psz*8))
				continue
			}
			sym := syms[r.Sym]
			if sym.Shndx == 0 || int(sym.Shndx) >= len(f.Sections) {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: entry refers to symbol %q outside the object's sections", where, sym.Name))
				continue
			}
			text := f.Sections[sym.Shndx]
			if text.Type != elf.SHT_PROGBITS || text.Flags&elf.SHF_EXECINSTR == 0 {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: entry points into %s, not executable code", where, text.Name))
				continue
			}
			if tab.Flags&elf.SHF_LINK_ORDER != 0 && int(tab.Link) != text.Index {
				if fix.relocs == nil {
					fix.relocs = append([]elfrw.Reloc(nil), relocs...)
				}
				fix.relocs[i] = elfrw.Reloc{Off: r.Off}
			}
			addend := r.Addend
			if rs.Type == elf.SHT_REL {
				if psz == 4 {
					addend = int64(int32(f.ByteOrder.Uint32(tabData[r.Off:])))
				} else {
					addend = int64(f.ByteOrder.Uint64(tabData[r.Off:]))
				}
			}
			at := sym.Value + uint64(addend)
			s, err := resolvePatchable(f, arch, fs, text, at)
			if err != nil {
				res.Problems = append(res.Problems, fmt.Sprintf("%s+%#x (listed in %s): %v", text.Name, at, PatchableSection, err))
				continue
			}
			sites = append(sites, s)
		}
		if fix.relocs != nil {
			fixes = append(fixes, fix)
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
			res.Problems = append(res.Problems, fmt.Sprintf("%s+%#x: listed twice in %s", s.Section, s.Offset, PatchableSection))
			continue
		}
		out = append(out, s)
	}
	idx := newFuncIndex(syms)
	for i := range out {
		out[i].Func = idx.at(out[i].SecIndex, out[i].Offset)
	}
	capAtBranches(f, arch, fs, out)
	return out, fixes, nil
}

// resolvePatchable finds the function entry, landing pad, area before the function and the
// nops at the entry for an address listed in __patchable_function_entries.
func resolvePatchable(f *elfrw.File, arch *Arch, fs funcStarts, text *elfrw.Section, at uint64) (ObjSite, error) {
	code := f.SectionData(text)
	if at >= uint64(len(code)) {
		return ObjSite{}, fmt.Errorf("outside the section (%d bytes)", len(code))
	}
	var entry uint64
	pad := false
	switch {
	case fs.startsAt(text.Index, at):
		entry = at
		pad = arch.IsPad(code[at:])
	case at >= 4 && fs.startsAt(text.Index, at-4) && arch.IsPad(code[at-4:]):
		entry, pad = at-4, true // M = 0 behind a landing pad: gcc lists the first nop
	default:
		next, ok := fs.next(text.Index, at)
		if !ok || next-at > maxPreScan || next > uint64(len(code)) {
			return ObjSite{}, fmt.Errorf("no function starts there or after it behind nops")
		}
		if n := nopRun(arch, code[at:next]); n != int(next-at) {
			return ObjSite{}, fmt.Errorf("the %d bytes before the function at %#x are not all nops (%d are)", next-at, next, n)
		}
		entry = next
		pad = arch.IsPad(code[entry:])
	}
	site := entry
	if pad {
		site += 4
	}
	if site > uint64(len(code)) {
		return ObjSite{}, fmt.Errorf("the function at %#x starts past its section's %d bytes", entry, len(code))
	}
	end := fs.end(text.Index, entry)
	if end > uint64(len(code)) || end < site {
		end = uint64(len(code))
	}
	s := ObjSite{Section: text.Name, SecIndex: text.Index, Offset: site, Kind: KindNops, Pad: pad}
	s.Len = nopRun(arch, code[site:end])
	if arch.PatchCheck != nil && s.Len > 0 {
		if err := arch.PatchCheck(code[site+uint64(s.Len) : end]); err != nil {
			return ObjSite{}, err
		}
	}
	if arch.MaxSiteLen > 0 && s.Len > arch.MaxSiteLen {
		s.Len = arch.MaxSiteLen
	}
	if s.Len > 255 {
		s.Len = 255 // a run this long is not an entry area; the table's byte holds no more
	}
	if entry > at {
		s.PreBytes = int(entry - at)
	}
	return s, nil
}

// nopRun returns the length of the run of whole nop instructions at the start of code.
func nopRun(arch *Arch, code []byte) int {
	n := 0
	for n < len(code) {
		k := arch.NopLen(code[n:])
		if k == 0 {
			break
		}
		n += k
	}
	return n
}

// capAtBranches shortens the nop runs a branch of their function lands in. Only the runs
// longer than the object's shortest one need the decoding (the common case is one N for
// the whole object).
func capAtBranches(f *elfrw.File, arch *Arch, fs funcStarts, sites []ObjSite) {
	least := -1
	for _, s := range sites {
		if s.Len > 0 && (least < 0 || s.Len < least) {
			least = s.Len
		}
	}
	for i := range sites {
		s := &sites[i]
		if s.Len <= least {
			continue
		}
		if arch.BranchTargets == nil {
			s.Len = least // no decoder: keep to the object's common N (nops left over stay nops)
			continue
		}
		code := f.SectionData(f.Sections[s.SecIndex])
		entry := s.Offset
		if s.Pad {
			entry -= 4
		}
		end := fs.end(s.SecIndex, entry)
		if end > uint64(len(code)) || end <= entry {
			continue
		}
		lo, hi := s.Offset, s.Offset+uint64(s.Len)
		arch.BranchTargets(code[entry:end], entry, func(t uint64) {
			if t > lo && t < hi {
				hi = t
			}
		})
		s.Len = int(hi - lo)
	}
}

// mergePatchable adds the patchable sites to the call sites. An area with no nops at the
// entry (N = M) describes the call at the entry, if there is one (gcc -pg -mfentry with
// -fpatchable-function-entry=8,8: the x86-64 CALL_OPS layout); without one there is
// nothing to patch: a function compiled without the hook (no_instrument_function; gcc
// and clang both still list it), passed over. Only when no such area of the object has a
// hook is it reported, once: the object was built without -pg -mfentry.
func mergePatchable(calls, patch []ObjSite, res *Result) []ObjSite {
	type key struct {
		sec int
		off uint64
	}
	at := map[key]int{}
	for i, c := range calls {
		at[key{c.SecIndex, c.Offset}] = i
	}
	out := calls
	var hookless []ObjSite
	hooked := 0
	for _, p := range patch {
		if p.Len == 0 {
			if i, ok := at[key{p.SecIndex, p.Offset}]; ok {
				out[i].Pad, out[i].PreBytes = p.Pad, p.PreBytes
				hooked++
				continue
			}
			hookless = append(hookless, p)
			continue
		}
		if _, ok := at[key{p.SecIndex, p.Offset}]; ok {
			res.Problems = append(res.Problems, fmt.Sprintf("%s+%#x (%s): a hook call and patchable nops at one address", p.Section, p.Offset, p.Func))
			continue
		}
		out = append(out, p)
	}
	if len(hookless) > 0 && hooked == 0 {
		p := hookless[0]
		res.Problems = append(res.Problems, fmt.Sprintf("%s+%#x (%s) and %d more: listed in %s, but no nop and no hook call at the entry (built with -fpatchable-function-entry=N,N but without -pg -mfentry?): nothing to record",
			p.Section, p.Offset, p.Func, len(hookless)-1, PatchableSection))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SecIndex != out[j].SecIndex {
			return out[i].SecIndex < out[j].SecIndex
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// prePart returns the area before the function as an entry records it, and whether it
// fits (a multiple of 4 bytes, at most MaxPre).
func prePart(n int) (uint8, bool) {
	if n%4 != 0 || n > MaxPre {
		return 0, false
	}
	return uint8(n), true
}
