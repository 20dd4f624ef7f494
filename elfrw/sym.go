package elfrw

import (
	"debug/elf"
	"fmt"
)

// Symbol is one symbol-table entry. Shndx is the real section index, resolved through
// .symtab_shndx when the entry holds SHN_XINDEX; special indices (SHN_UNDEF, SHN_ABS,
// SHN_COMMON) are kept as they are.
type Symbol struct {
	Name    string
	NameOff uint32
	Value   uint64
	Size    uint64
	Info    uint8
	Other   uint8
	Shndx   uint32
}

// Bind and Type decode Info.
func (s Symbol) Bind() elf.SymBind { return elf.ST_BIND(s.Info) }
func (s Symbol) Type() elf.SymType { return elf.ST_TYPE(s.Info) }

// SymTab returns the symbol table section (SHT_SYMTAB), or nil.
func (f *File) SymTab() *Section {
	for _, s := range f.Sections {
		if s.Type == elf.SHT_SYMTAB {
			return s
		}
	}
	return nil
}

func (f *File) symSize() int {
	if f.Is64() {
		return 24
	}
	return 16
}

// shndxSection returns the SHT_SYMTAB_SHNDX section of symtab, or nil.
func (f *File) shndxSection(symtab *Section) *Section {
	for _, s := range f.Sections {
		if s.Type == elf.SHT_SYMTAB_SHNDX && int(s.Link) == symtab.Index {
			return s
		}
	}
	return nil
}

// Symbols decodes symtab, checking entry size, string table, names and section indices.
func (f *File) Symbols(symtab *Section) ([]Symbol, error) {
	es := f.symSize()
	if symtab.Entsize != uint64(es) {
		return nil, formatErr("symbol table %s: entry size %d, want %d", symtab.Name, symtab.Entsize, es)
	}
	data := f.SectionData(symtab)
	if len(data)%es != 0 {
		return nil, formatErr("symbol table %s: size %d is not a multiple of %d", symtab.Name, len(data), es)
	}
	n := len(data) / es
	if uint64(symtab.Info) > uint64(n) {
		return nil, formatErr("symbol table %s: first global %d beyond %d symbols", symtab.Name, symtab.Info, n)
	}
	if symtab.Link == 0 || int(symtab.Link) >= len(f.Sections) || f.Sections[symtab.Link].Type != elf.SHT_STRTAB {
		return nil, formatErr("symbol table %s: bad string table link %d", symtab.Name, symtab.Link)
	}
	strtab := f.SectionData(f.Sections[symtab.Link])
	var xidx []byte
	if x := f.shndxSection(symtab); x != nil {
		xidx = f.SectionData(x)
		if len(xidx) < 4*n {
			return nil, formatErr("%s: %d entries for %d symbols", x.Name, len(xidx)/4, n)
		}
	}
	syms := make([]Symbol, n)
	bo := f.ByteOrder
	for i := range syms {
		b := data[i*es:]
		var s Symbol
		var sh uint16
		if f.Is64() {
			s.NameOff = bo.Uint32(b[0:])
			s.Info, s.Other = b[4], b[5]
			sh = bo.Uint16(b[6:])
			s.Value, s.Size = bo.Uint64(b[8:]), bo.Uint64(b[16:])
		} else {
			s.NameOff = bo.Uint32(b[0:])
			s.Value, s.Size = uint64(bo.Uint32(b[4:])), uint64(bo.Uint32(b[8:]))
			s.Info, s.Other = b[12], b[13]
			sh = bo.Uint16(b[14:])
		}
		name, ok := cstring(strtab, s.NameOff)
		if !ok {
			return nil, formatErr("symbol %d: name offset %#x outside the string table", i, s.NameOff)
		}
		s.Name = name
		s.Shndx = uint32(sh)
		if sh == uint16(elf.SHN_XINDEX) {
			if xidx == nil {
				return nil, formatErr("symbol %d (%s): SHN_XINDEX without .symtab_shndx", i, name)
			}
			s.Shndx = bo.Uint32(xidx[4*i:])
		}
		if (sh < uint16(elf.SHN_LORESERVE) || sh == uint16(elf.SHN_XINDEX)) && s.Shndx >= uint32(len(f.Sections)) {
			return nil, formatErr("symbol %d (%s): section index %d out of range", i, name, s.Shndx)
		}
		syms[i] = s
	}
	return syms, nil
}

func (f *File) putSym(b []byte, s Symbol, sh uint16) {
	bo := f.ByteOrder
	if f.Is64() {
		bo.PutUint32(b[0:], s.NameOff)
		b[4], b[5] = s.Info, s.Other
		bo.PutUint16(b[6:], sh)
		bo.PutUint64(b[8:], s.Value)
		bo.PutUint64(b[16:], s.Size)
		return
	}
	bo.PutUint32(b[0:], s.NameOff)
	bo.PutUint32(b[4:], uint32(s.Value))
	bo.PutUint32(b[8:], uint32(s.Size))
	b[12], b[13] = s.Info, s.Other
	bo.PutUint16(b[14:], sh)
}

// AddLocalSymbols inserts local symbols (names are ignored: they get an empty name, which is
// what section symbols use) after the existing local symbols. Local symbols must precede
// global ones, so every global symbol moves up: the symbol indices in all relocation
// sections and group signatures are renumbered and the symbol table's sh_info updated.
// It returns the new symbols' indices.
func (f *File) AddLocalSymbols(syms []Symbol) ([]uint32, error) {
	symtab := f.SymTab()
	if symtab == nil {
		return nil, formatErr("no symbol table")
	}
	old, err := f.Symbols(symtab)
	if err != nil {
		return nil, err
	}
	es := f.symSize()
	first := int(symtab.Info)
	k := len(syms)
	if k == 0 {
		return nil, nil
	}
	// Check every section that refers to symbol indices before changing anything.
	for _, s := range f.Sections {
		if int(s.Link) != symtab.Index || s.Index == 0 {
			continue
		}
		switch s.Type {
		case elf.SHT_REL, elf.SHT_RELA, elf.SHT_GROUP, elf.SHT_SYMTAB_SHNDX, shtLLVMAddrsig:
		default:
			if s.Flags&elf.SHF_LINK_ORDER == 0 {
				return nil, fmt.Errorf("section %s (type %v) refers to the symbol table and cannot be renumbered", s.Name, s.Type)
			}
		}
	}
	rels := map[*Section][]Reloc{}
	for _, s := range f.Sections {
		if int(s.Link) == symtab.Index && (s.Type == elf.SHT_REL || s.Type == elf.SHT_RELA) {
			r, err := f.Relocs(s)
			if err != nil {
				return nil, err
			}
			for _, x := range r {
				if int(x.Sym) >= len(old) {
					return nil, formatErr("%s: relocation at %#x refers to symbol %d of %d", s.Name, x.Off, x.Sym, len(old))
				}
			}
			rels[s] = r
		}
	}
	needX := f.shndxSection(symtab) != nil
	for _, s := range syms {
		if s.Shndx >= uint32(elf.SHN_LORESERVE) {
			needX = true
		}
	}

	data := f.SectionData(symtab)
	nd := make([]byte, 0, len(data)+k*es)
	nd = append(nd, data[:first*es]...)
	ins := make([]byte, k*es)
	idx := make([]uint32, k)
	for i, s := range syms {
		sh := uint16(s.Shndx)
		if s.Shndx >= uint32(elf.SHN_LORESERVE) {
			sh = uint16(elf.SHN_XINDEX)
		}
		s.NameOff = 0
		f.putSym(ins[i*es:], s, sh)
		idx[i] = uint32(first + i)
	}
	nd = append(nd, ins...)
	nd = append(nd, data[first*es:]...)
	f.SetData(symtab, nd)
	symtab.Info = uint32(first + k)

	if needX {
		x := f.shndxSection(symtab)
		var xd []byte
		if x != nil {
			xd = f.SectionData(x)[:4*len(old)]
		} else {
			xd = make([]byte, 4*len(old))
		}
		nx := make([]byte, 0, len(xd)+4*k)
		nx = append(nx, xd[:4*first]...)
		for _, s := range syms {
			var b [4]byte
			if s.Shndx >= uint32(elf.SHN_LORESERVE) {
				f.ByteOrder.PutUint32(b[:], s.Shndx)
			}
			nx = append(nx, b[:]...)
		}
		nx = append(nx, xd[4*first:]...)
		if x != nil {
			f.SetData(x, nx)
		} else {
			f.AddSection(Section{Name: ".symtab_shndx", Type: elf.SHT_SYMTAB_SHNDX, Link: uint32(symtab.Index), Addralign: 4, Entsize: 4}, nx)
		}
	}

	renum := func(i uint32) uint32 {
		if int(i) >= first {
			return i + uint32(k)
		}
		return i
	}
	for s, r := range rels {
		changed := false
		for j := range r {
			if n := renum(r[j].Sym); n != r[j].Sym {
				r[j].Sym = n
				changed = true
			}
		}
		if changed {
			f.SetData(s, f.EncodeRelocs(s.Type == elf.SHT_RELA, r))
		}
	}
	for _, s := range f.Sections {
		if int(s.Link) != symtab.Index {
			continue
		}
		switch s.Type {
		case elf.SHT_GROUP:
			s.Info = renum(s.Info)
		case shtLLVMAddrsig:
			if err := f.renumberAddrsig(s, renum); err != nil {
				return nil, err
			}
		}
	}
	return idx, nil
}

// shtLLVMAddrsig is clang's address-significance table: ULEB128 symbol indices.
const shtLLVMAddrsig elf.SectionType = 0x6fff4c03

func (f *File) renumberAddrsig(s *Section, renum func(uint32) uint32) error {
	d := f.SectionData(s)
	var out []byte
	for i := 0; i < len(d); {
		var v uint64
		var shift uint
		for {
			if i >= len(d) || shift > 35 {
				return formatErr("%s: bad ULEB128 at %d", s.Name, i)
			}
			b := d[i]
			i++
			v |= uint64(b&0x7f) << shift
			shift += 7
			if b&0x80 == 0 {
				break
			}
		}
		if v > 0xffffffff {
			return formatErr("%s: symbol index %d", s.Name, v)
		}
		n := renum(uint32(v))
		for {
			b := byte(n & 0x7f)
			n >>= 7
			if n != 0 {
				out = append(out, b|0x80)
				continue
			}
			out = append(out, b)
			break
		}
	}
	f.SetData(s, out)
	return nil
}

// Reloc is one relocation. Addend is zero for SHT_REL sections (the addend is in place).
type Reloc struct {
	Off    uint64
	Sym    uint32
	Type   uint32
	Addend int64
}

func (f *File) relSize(rela bool) int {
	switch {
	case f.Is64() && rela:
		return 24
	case f.Is64():
		return 16
	case rela:
		return 12
	}
	return 8
}

// Relocs decodes a SHT_REL or SHT_RELA section.
func (f *File) Relocs(s *Section) ([]Reloc, error) {
	rela := s.Type == elf.SHT_RELA
	if !rela && s.Type != elf.SHT_REL {
		return nil, fmt.Errorf("section %s is not a relocation section", s.Name)
	}
	es := f.relSize(rela)
	if s.Entsize != uint64(es) {
		return nil, formatErr("relocation section %s: entry size %d, want %d", s.Name, s.Entsize, es)
	}
	data := f.SectionData(s)
	if len(data)%es != 0 {
		return nil, formatErr("relocation section %s: size %d is not a multiple of %d", s.Name, len(data), es)
	}
	r := make([]Reloc, len(data)/es)
	bo := f.ByteOrder
	for i := range r {
		b := data[i*es:]
		if f.Is64() {
			info := bo.Uint64(b[8:])
			r[i] = Reloc{Off: bo.Uint64(b), Sym: uint32(info >> 32), Type: uint32(info)}
			if rela {
				r[i].Addend = int64(bo.Uint64(b[16:]))
			}
		} else {
			info := bo.Uint32(b[4:])
			r[i] = Reloc{Off: uint64(bo.Uint32(b)), Sym: info >> 8, Type: info & 0xff}
			if rela {
				r[i].Addend = int64(int32(bo.Uint32(b[8:])))
			}
		}
	}
	return r, nil
}

// EncodeRelocs encodes relocations for a SHT_RELA (rela) or SHT_REL section.
func (f *File) EncodeRelocs(rela bool, r []Reloc) []byte {
	es := f.relSize(rela)
	out := make([]byte, len(r)*es)
	bo := f.ByteOrder
	for i, x := range r {
		b := out[i*es:]
		if f.Is64() {
			bo.PutUint64(b, x.Off)
			bo.PutUint64(b[8:], uint64(x.Sym)<<32|uint64(x.Type))
			if rela {
				bo.PutUint64(b[16:], uint64(x.Addend))
			}
		} else {
			bo.PutUint32(b, uint32(x.Off))
			bo.PutUint32(b[4:], x.Sym<<8|x.Type&0xff)
			if rela {
				bo.PutUint32(b[8:], uint32(int32(x.Addend)))
			}
		}
	}
	return out
}

// RelocSize is the size of one relocation entry of the given kind.
func (f *File) RelocSize(rela bool) int { return f.relSize(rela) }

// GroupMembers decodes a SHT_GROUP section: its flag word and member section indices.
func (f *File) GroupMembers(s *Section) (flags uint32, members []uint32, err error) {
	d := f.SectionData(s)
	if len(d) < 4 || len(d)%4 != 0 {
		return 0, nil, formatErr("group section %s: size %d", s.Name, len(d))
	}
	flags = f.ByteOrder.Uint32(d)
	for i := 4; i < len(d); i += 4 {
		m := f.ByteOrder.Uint32(d[i:])
		if m == 0 || int(m) >= len(f.Sections) {
			return 0, nil, formatErr("group section %s: member %d out of range", s.Name, m)
		}
		members = append(members, m)
	}
	return flags, members, nil
}

// SetGroupMembers rewrites a group section's flag word and members.
func (f *File) SetGroupMembers(s *Section, flags uint32, members []uint32) {
	d := make([]byte, 4+4*len(members))
	f.ByteOrder.PutUint32(d, flags)
	for i, m := range members {
		f.ByteOrder.PutUint32(d[4+4*i:], m)
	}
	f.SetData(s, d)
}
