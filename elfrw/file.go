package elfrw

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// ErrFormat is wrapped by every error about malformed input.
var ErrFormat = errors.New("malformed ELF")

func formatErr(f string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(f, args...))
}

// File is a parsed ELF file. Sections, symbols and relocations are decoded on demand from
// the original bytes; changes are collected and applied by Bytes, which keeps every byte it
// does not need to change.
type File struct {
	orig []byte

	Class     elf.Class
	Data      elf.Data
	ByteOrder binary.ByteOrder
	Type      elf.Type
	Machine   elf.Machine

	// Sections, indexed by section number; Sections[0] is the null section.
	Sections []*Section
	// ShStrNdx is the index of the section-name string table.
	ShStrNdx int

	phoff     uint64 // e_phoff, kept as is
	origShnum int
}

// Section is one section header plus, for new or changed sections, the new contents.
type Section struct {
	Index     int
	Name      string
	NameOff   uint32
	Type      elf.SectionType
	Flags     elf.SectionFlag
	Addr      uint64
	Offset    uint64
	Size      uint64
	Link      uint32
	Info      uint32
	Addralign uint64
	Entsize   uint64

	data    []byte // new contents when changed
	changed bool
	isNew   bool
	hdrDirt bool
}

// Parse decodes the ELF header and section headers of data. Only data's sections are
// validated here: offsets and sizes must lie inside the file, string indices inside the
// section-name table.
func Parse(data []byte) (*File, error) {
	if len(data) < 16 || !bytes.Equal(data[:4], []byte(elf.ELFMAG)) {
		return nil, errors.New("not an ELF file")
	}
	f := &File{orig: data, Class: elf.Class(data[elf.EI_CLASS]), Data: elf.Data(data[elf.EI_DATA])}
	switch f.Data {
	case elf.ELFDATA2LSB:
		f.ByteOrder = binary.LittleEndian
	case elf.ELFDATA2MSB:
		f.ByteOrder = binary.BigEndian
	default:
		return nil, formatErr("unknown data encoding %d", data[elf.EI_DATA])
	}
	var ehsize int
	switch f.Class {
	case elf.ELFCLASS32:
		ehsize = 52
	case elf.ELFCLASS64:
		ehsize = 64
	default:
		return nil, formatErr("unknown ELF class %d", data[elf.EI_CLASS])
	}
	if len(data) < ehsize {
		return nil, formatErr("truncated ELF header (%d bytes)", len(data))
	}
	bo := f.ByteOrder
	f.Type = elf.Type(bo.Uint16(data[16:]))
	f.Machine = elf.Machine(bo.Uint16(data[18:]))
	var shoff uint64
	var shentsize, shnum, shstrndx int
	if f.Class == elf.ELFCLASS64 {
		f.phoff = bo.Uint64(data[32:])
		shoff = bo.Uint64(data[40:])
		shentsize = int(bo.Uint16(data[58:]))
		shnum = int(bo.Uint16(data[60:]))
		shstrndx = int(bo.Uint16(data[62:]))
	} else {
		f.phoff = uint64(bo.Uint32(data[28:]))
		shoff = uint64(bo.Uint32(data[32:]))
		shentsize = int(bo.Uint16(data[46:]))
		shnum = int(bo.Uint16(data[48:]))
		shstrndx = int(bo.Uint16(data[50:]))
	}
	if shoff == 0 {
		if shnum != 0 {
			return nil, formatErr("section header count %d without a table", shnum)
		}
		return f, nil
	}
	if shentsize != f.shdrSize() {
		return nil, formatErr("section header size %d, want %d", shentsize, f.shdrSize())
	}
	if shoff >= uint64(len(data)) || uint64(len(data))-shoff < uint64(shentsize) {
		return nil, formatErr("section header table at %#x outside the file (%d bytes)", shoff, len(data))
	}
	// Section 0 holds the real count and string-table index when they do not fit.
	s0 := f.parseShdr(data[shoff:])
	if shnum == 0 {
		if s0.Size > uint64(len(data))/uint64(shentsize) {
			return nil, formatErr("section count %d does not fit the file", s0.Size)
		}
		shnum = int(s0.Size)
	}
	if shstrndx == int(elf.SHN_XINDEX) {
		shstrndx = int(s0.Link)
	}
	if shnum == 0 {
		return nil, formatErr("empty section header table")
	}
	if uint64(shnum) > (uint64(len(data))-shoff)/uint64(shentsize) {
		return nil, formatErr("section header table (%d entries at %#x) extends past the end of the file", shnum, shoff)
	}
	f.Sections = make([]*Section, shnum)
	for i := range f.Sections {
		s := f.parseShdr(data[shoff+uint64(i*shentsize):])
		s.Index = i
		if s.Type != elf.SHT_NOBITS && s.Type != elf.SHT_NULL {
			if s.Offset > uint64(len(data)) || s.Size > uint64(len(data))-s.Offset {
				return nil, formatErr("section %d: contents [%#x, +%#x) outside the file (%d bytes)", i, s.Offset, s.Size, len(data))
			}
		}
		if s.Addralign&(s.Addralign-1) != 0 {
			return nil, formatErr("section %d: alignment %#x is not a power of two", i, s.Addralign)
		}
		f.Sections[i] = s
	}
	f.origShnum = shnum
	if err := checkOverlaps(f.Sections, uint64(ehsize), shoff, uint64(shnum*shentsize)); err != nil {
		return nil, err
	}
	if shstrndx <= 0 || shstrndx >= shnum {
		return nil, formatErr("section-name table index %d out of range", shstrndx)
	}
	f.ShStrNdx = shstrndx
	strs := f.Sections[shstrndx]
	if strs.Type != elf.SHT_STRTAB {
		return nil, formatErr("section-name table %d has type %v", shstrndx, strs.Type)
	}
	names := data[strs.Offset : strs.Offset+strs.Size]
	for _, s := range f.Sections[1:] {
		n, ok := cstring(names, s.NameOff)
		if !ok {
			return nil, formatErr("section %d: name offset %#x outside the name table", s.Index, s.NameOff)
		}
		s.Name = n
	}
	return f, nil
}

// checkOverlaps refuses files whose sections share bytes with each other, the ELF header or
// the section header table: Bytes rewrites some of them in place and patches the header, and
// the untouched ones must stay byte-identical. Toolchains never produce such files.
func checkOverlaps(secs []*Section, ehsize, shoff, shsize uint64) error {
	type span struct {
		start, end uint64
		what       string
	}
	spans := []span{{0, ehsize, "the ELF header"}, {shoff, shoff + shsize, "the section header table"}}
	for _, s := range secs {
		if s.Type == elf.SHT_NULL || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		spans = append(spans, span{s.Offset, s.Offset + s.Size, fmt.Sprintf("section %d", s.Index)})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	last := 0 // the span reaching furthest so far
	for i := 1; i < len(spans); i++ {
		if p := spans[last]; spans[i].start < p.end {
			return formatErr("%s [%#x, %#x) overlaps %s [%#x, %#x)", spans[i].what, spans[i].start, spans[i].end, p.what, p.start, p.end)
		}
		if spans[i].end > spans[last].end {
			last = i
		}
	}
	return nil
}

func cstring(tab []byte, off uint32) (string, bool) {
	if uint64(off) >= uint64(len(tab)) {
		return "", off == 0 && len(tab) == 0
	}
	end := bytes.IndexByte(tab[off:], 0)
	if end < 0 {
		return "", false
	}
	return string(tab[off : int(off)+end]), true
}

func (f *File) shdrSize() int {
	if f.Class == elf.ELFCLASS64 {
		return 64
	}
	return 40
}

func (f *File) parseShdr(b []byte) *Section {
	bo := f.ByteOrder
	if f.Class == elf.ELFCLASS64 {
		return &Section{
			NameOff: bo.Uint32(b[0:]), Type: elf.SectionType(bo.Uint32(b[4:])),
			Flags: elf.SectionFlag(bo.Uint64(b[8:])), Addr: bo.Uint64(b[16:]),
			Offset: bo.Uint64(b[24:]), Size: bo.Uint64(b[32:]),
			Link: bo.Uint32(b[40:]), Info: bo.Uint32(b[44:]),
			Addralign: bo.Uint64(b[48:]), Entsize: bo.Uint64(b[56:]),
		}
	}
	return &Section{
		NameOff: bo.Uint32(b[0:]), Type: elf.SectionType(bo.Uint32(b[4:])),
		Flags: elf.SectionFlag(bo.Uint32(b[8:])), Addr: uint64(bo.Uint32(b[12:])),
		Offset: uint64(bo.Uint32(b[16:])), Size: uint64(bo.Uint32(b[20:])),
		Link: bo.Uint32(b[24:]), Info: bo.Uint32(b[28:]),
		Addralign: uint64(bo.Uint32(b[32:])), Entsize: uint64(bo.Uint32(b[36:])),
	}
}

func (f *File) putShdr(b []byte, s *Section) {
	bo := f.ByteOrder
	if f.Class == elf.ELFCLASS64 {
		bo.PutUint32(b[0:], s.NameOff)
		bo.PutUint32(b[4:], uint32(s.Type))
		bo.PutUint64(b[8:], uint64(s.Flags))
		bo.PutUint64(b[16:], s.Addr)
		bo.PutUint64(b[24:], s.Offset)
		bo.PutUint64(b[32:], s.Size)
		bo.PutUint32(b[40:], s.Link)
		bo.PutUint32(b[44:], s.Info)
		bo.PutUint64(b[48:], s.Addralign)
		bo.PutUint64(b[56:], s.Entsize)
		return
	}
	bo.PutUint32(b[0:], s.NameOff)
	bo.PutUint32(b[4:], uint32(s.Type))
	bo.PutUint32(b[8:], uint32(s.Flags))
	bo.PutUint32(b[12:], uint32(s.Addr))
	bo.PutUint32(b[16:], uint32(s.Offset))
	bo.PutUint32(b[20:], uint32(s.Size))
	bo.PutUint32(b[24:], s.Link)
	bo.PutUint32(b[28:], s.Info)
	bo.PutUint32(b[32:], uint32(s.Addralign))
	bo.PutUint32(b[36:], uint32(s.Entsize))
}

// Is64 reports ELFCLASS64.
func (f *File) Is64() bool { return f.Class == elf.ELFCLASS64 }

// SectionData returns the current contents of s (nil for SHT_NOBITS). The slice must not
// be modified; use SetData.
func (f *File) SectionData(s *Section) []byte {
	if s.changed || s.isNew {
		return s.data
	}
	if s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL {
		return nil
	}
	return f.orig[s.Offset : s.Offset+s.Size]
}

// SetData replaces the contents of s. Contents of the same size are written in place;
// others are appended to the file and the header updated.
func (f *File) SetData(s *Section, data []byte) {
	s.data = data
	s.changed = true
	s.Size = uint64(len(data))
}

// AddSection appends a new section with the given header fields (Index, Offset, Size and
// NameOff are set by elfrw) and contents, and returns it.
func (f *File) AddSection(hdr Section, data []byte) *Section {
	s := hdr
	s.Index = len(f.Sections)
	s.data = data
	s.Size = uint64(len(data))
	s.isNew = true
	s.changed = true
	f.Sections = append(f.Sections, &s)
	return &s
}

// SectionByName returns the first section called name, or nil.
func (f *File) SectionByName(name string) *Section {
	for _, s := range f.Sections[min(1, len(f.Sections)):] {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// MarkHeaderChanged records that a header field of s (Flags, Link, Info, ...) was changed.
// Bytes always rewrites the whole section header table, so this is informational only.
func (f *File) MarkHeaderChanged(s *Section) { s.hdrDirt = true }

// Changed reports whether anything would be written by Bytes.
func (f *File) Changed() bool {
	for _, s := range f.Sections {
		if s.changed || s.isNew || s.hdrDirt {
			return true
		}
	}
	return false
}

// Bytes lays out the modified file: the original bytes, with changed sections of unchanged
// size overwritten in place, grown or new sections and a new section-name table appended,
// followed by a new section header table. The ELF header is patched to point at it.
func (f *File) Bytes() ([]byte, error) {
	if len(f.Sections) == 0 {
		return nil, errors.New("file has no section header table")
	}
	out := make([]byte, len(f.orig), len(f.orig)+f.growth())
	copy(out, f.orig)

	// Section names: keep the old table and append new names when needed.
	shstr := f.Sections[f.ShStrNdx]
	names := append([]byte(nil), f.SectionData(shstr)...)
	have := map[string]uint32{}
	for _, s := range f.Sections[1:] {
		if s.isNew {
			if off, ok := have[s.Name]; ok {
				s.NameOff = off
				continue
			}
			if off := findName(names, s.Name); off >= 0 {
				s.NameOff = uint32(off)
			} else {
				s.NameOff = uint32(len(names))
				names = append(names, s.Name...)
				names = append(names, 0)
			}
			have[s.Name] = s.NameOff
		}
	}
	if len(names) != int(shstr.Size) || shstr.changed {
		f.SetData(shstr, names)
	}

	align := func(a uint64) {
		if a > 1 {
			for uint64(len(out))%a != 0 {
				out = append(out, 0)
			}
		}
	}
	for _, s := range f.Sections[1:] {
		if !s.changed {
			continue
		}
		if s.Type == elf.SHT_NOBITS {
			continue
		}
		if !s.isNew && uint64(len(s.data)) == f.origSize(s) {
			copy(out[s.Offset:], s.data)
			continue
		}
		if s.Addralign > maxMoveAlign {
			// Moving it would pad the file by up to that much; no real object needs it.
			return nil, formatErr("section %s: alignment %#x too large to move the section", s.Name, s.Addralign)
		}
		align(max(s.Addralign, 1))
		s.Offset = uint64(len(out))
		out = append(out, s.data...)
	}
	align(8)
	shoff := uint64(len(out))
	n := len(f.Sections)
	es := f.shdrSize()
	tab := make([]byte, n*es)
	s0 := *f.Sections[0]
	big := n >= int(elf.SHN_LORESERVE)
	if big {
		s0.Size = uint64(n)
	} else if f.origShnum < int(elf.SHN_LORESERVE) {
		s0.Size = 0
	}
	if f.ShStrNdx >= int(elf.SHN_LORESERVE) {
		s0.Link = uint32(f.ShStrNdx)
	}
	f.putShdr(tab, &s0)
	for i, s := range f.Sections[1:] {
		f.putShdr(tab[(i+1)*es:], s)
	}
	out = append(out, tab...)

	bo := f.ByteOrder
	shnum, shstrndx := uint16(n), uint16(f.ShStrNdx)
	if big {
		shnum = 0
	}
	if f.ShStrNdx >= int(elf.SHN_LORESERVE) {
		shstrndx = uint16(elf.SHN_XINDEX)
	}
	if f.Is64() {
		bo.PutUint64(out[40:], shoff)
		bo.PutUint16(out[60:], shnum)
		bo.PutUint16(out[62:], shstrndx)
	} else {
		if shoff > 0xffffffff {
			return nil, errors.New("ELF32 file would exceed 4 GiB")
		}
		bo.PutUint32(out[32:], uint32(shoff))
		bo.PutUint16(out[48:], shnum)
		bo.PutUint16(out[50:], shstrndx)
	}
	return out, nil
}

// maxMoveAlign is the largest alignment of a section Bytes moves to the end of the file.
const maxMoveAlign = 1 << 16

// origSize is the size of a section as parsed (before SetData).
func (f *File) origSize(s *Section) uint64 {
	if s.isNew || s.Index >= f.origShnum {
		return ^uint64(0)
	}
	// Re-read the original header.
	return f.origHeader(s.Index).Size
}

func (f *File) origHeader(i int) *Section {
	bo := f.ByteOrder
	var shoff uint64
	if f.Is64() {
		shoff = bo.Uint64(f.orig[40:])
	} else {
		shoff = uint64(bo.Uint32(f.orig[32:]))
	}
	return f.parseShdr(f.orig[shoff+uint64(i*f.shdrSize()):])
}

func (f *File) growth() int {
	g := (len(f.Sections) + 1) * f.shdrSize()
	for _, s := range f.Sections {
		if s.changed {
			g += len(s.data) + int(min(s.Addralign, 64))
		}
	}
	return g + 1024
}

func findName(tab []byte, name string) int {
	if name == "" {
		return 0
	}
	// Any occurrence will do: ELF lets names share the tail of another string.
	return bytes.Index(tab, append([]byte(name), 0))
}
