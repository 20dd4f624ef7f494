package mcountloc

// Reading, verifying and rewriting the __mcount_loc table of a linked x86-64 or aarch64
// program or shared library (ftlink). See docs/table-format.md and docs/ftlink.md.

import (
	"bytes"
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Errors returned by OpenLinked, wrapped with details. The CLI turns them into advice.
var (
	ErrNotELF      = errors.New("not an ELF file")
	ErrRelocatable = errors.New("relocatable object (ET_REL)")
	ErrNoTable     = errors.New("no __mcount_loc table")
	ErrMachine     = errors.New("unsupported machine")
	ErrBadFile     = errors.New("malformed file")
	// ErrOutsideText: the table has entries but none is a call site of the hook, and
	// some are plainly wrong (outside the code, malformed, not a call to the hook): the
	// table is corrupt or not a call-site table at all.
	ErrOutsideText = errors.New("table pointing outside text")
	// ErrNoFunction is wrapped in LinkedSite.Err for a site no function symbol covers
	// (code of an overridden weak function, or of a discarded copy): a legitimate drop.
	ErrNoFunction = errors.New("not inside any function")
)

// SlotFormat says how a table slot was written.
type SlotFormat uint8

const (
	FormatEmpty SlotFormat = iota // all zero
	FormatFtkit                   // ftkit entry (docs/table-format.md)
	FormatGCC                     // gcc -mrecord-mcount: 8-byte absolute address
)

func (f SlotFormat) String() string {
	switch f {
	case FormatFtkit:
		return "ftkit"
	case FormatGCC:
		return "gcc"
	}
	return "empty"
}

// LinkedSite is one non-empty table slot, resolved and checked against the code.
type LinkedSite struct {
	Slot   int        // slot index in the table
	Format SlotFormat // how the slot was written
	Addr   uint64     // link-time address of the call site
	Len    int        // length of the call (or nop) at the site; 0 when unknown
	Kind   Kind       // call form found (for a nop: the form recorded in the entry)
	Nop    bool       // the site already holds the ftkit nop of its length
	Func   string     // raw (mangled) name of the function holding the site, or ""
	FuncAt uint64     // address of that function
	// Near is, for a site no symbol or DWARF subprogram names, the nearest preceding
	// function symbol and the offset from it ("frame_dummy+0x50"), or "".
	Near string
	Dup  bool  // an earlier slot already records this site
	Err  error // why the entry is bad (dropped, never patched); nil when good
	// Pad and Pre: as recorded in the entry (Entry.Pad, Entry.Pre), checked against the code.
	Pad bool
	Pre uint8
}

// Good reports whether the site is verified and kept (not bad and not a duplicate).
func (s *LinkedSite) Good() bool { return s.Err == nil && !s.Dup }

// Linked is a linked ELF file (ET_EXEC or ET_DYN) holding a __mcount_loc table.
type Linked struct {
	data []byte
	f    *elf.File
	bo   binary.ByteOrder
	arch *Arch

	Type      elf.Type
	TableAddr uint64 // sh_addr of __mcount_loc
	TableOff  uint64 // file offset of __mcount_loc
	TableSize uint64
	// Processed reports a table already rewritten by ftlink: its first non-empty slot has
	// MagicLinked, or it has no entry at all and no dynamic relocation targets it (what
	// ftlink leaves when it drops every entry; nothing to verify or patch either way).
	Processed bool
	// Stripped reports a file without .symtab (names come from .dynsym, if any).
	Stripped bool

	loads []*elf.Prog
	exec  []*elf.Section // executable PROGBITS sections, sorted by address

	dyn      []dynEntry
	rela     []relaTable         // DT_RELA and DT_JMPREL tables
	relaAt   map[uint64]relaInfo // dynamic RELA relocations by r_offset
	relr     []uint64            // RELR-relocated addresses (decoded)
	relrSet  map[uint64]bool
	relrOff  uint64 // file offset of the RELR table
	relrSize uint64
	dynsyms  []elf.Symbol

	fentry    map[uint64]bool // addresses of locally defined __fentry__/mcount/_mcount
	funcs     []funcSym       // function symbols sorted by address
	dwarf     []funcSym       // DWARF subprograms sorted by address (loaded on first use)
	dwarfRead bool
	plt       map[uint64]int8 // memo: is a call target a PLT stub for fentry (1) or not (-1)

	// Sites are the non-empty slots in table order; filled by OpenLinked.
	Sites []LinkedSite
}

type funcSym struct {
	addr, size uint64
	name       string
}

type dynEntry struct {
	tag elf.DynTag
	val uint64
	off uint64 // file offset of the entry
}

type relaTable struct {
	off, size uint64 // file offset and size in bytes
	countTag  bool   // DT_RELA table (DT_RELACOUNT applies to it)
}

type relaInfo struct {
	typ    uint32 // relocation type of the file's machine
	sym    string
	addend int64
	fileAt uint64 // file offset of the relocation
}

// RELR dynamic tags (not named by debug/elf).
const (
	dtRELRSZ elf.DynTag = 35
	dtRELR   elf.DynTag = 36
)

// recoverPanics makes OpenLinked turn a panic into ErrBadFile.
var recoverPanics = true

// fentryNames are the profiling hooks a recorded site may call.
var fentryNames = Callees

// OpenLinked parses data (a whole ELF file), finds and decodes its table and checks every
// site. Errors are about the file as a whole; per-entry problems are in Sites[i].Err.
// progress, when not nil, is called now and then with the number of slots checked.
func OpenLinked(data []byte, progress func(done, total int)) (l *Linked, err error) {
	if len(data) < 4 || !bytes.Equal(data[:4], []byte(elf.ELFMAG)) {
		return nil, ErrNotELF
	}
	defer func() {
		// debug/elf is robust, but guard against any slip on hostile input. The fuzz test
		// turns this off so that a panic is found rather than hidden.
		if !recoverPanics {
			return
		}
		if r := recover(); r != nil {
			l, err = nil, fmt.Errorf("%w: %v", ErrBadFile, r)
		}
	}()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	if f.Type == elf.ET_REL {
		return nil, ErrRelocatable
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return nil, fmt.Errorf("%w: ELF type %v", ErrBadFile, f.Type)
	}
	arch := ArchFor(f.Machine, f.Class)
	if arch == nil {
		return nil, fmt.Errorf("%w: %v %v %v: %s", ErrMachine, f.Machine, f.Class, f.Data, unsupported(f.Machine, f.Class))
	}
	l = &Linked{data: data, f: f, bo: f.ByteOrder, Type: f.Type, plt: map[uint64]int8{}, arch: arch}
	tab := f.Section(TableSection)
	if tab == nil {
		return nil, ErrNoTable
	}
	if tab.Type == elf.SHT_NOBITS || tab.Flags&elf.SHF_ALLOC == 0 {
		return nil, fmt.Errorf("%w: %s is not an allocated PROGBITS section", ErrBadFile, TableSection)
	}
	if tab.Size%EntrySize != 0 {
		return nil, fmt.Errorf("%w: %s size %d is not a multiple of %d", ErrBadFile, TableSection, tab.Size, EntrySize)
	}
	if tab.Offset > uint64(len(data)) || tab.Size > uint64(len(data))-tab.Offset {
		return nil, fmt.Errorf("%w: %s lies outside the file", ErrBadFile, TableSection)
	}
	l.TableAddr, l.TableOff, l.TableSize = tab.Addr, tab.Offset, tab.Size
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			l.loads = append(l.loads, p)
		}
	}
	if off, ok := l.fileOff(tab.Addr, tab.Size); !ok || off != tab.Offset {
		return nil, fmt.Errorf("%w: %s at %#x is not inside a loaded segment", ErrBadFile, TableSection, tab.Addr)
	}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_PROGBITS && s.Flags&elf.SHF_EXECINSTR != 0 && s.Flags&elf.SHF_ALLOC != 0 &&
			s.Offset <= uint64(len(data)) && s.Size <= uint64(len(data))-s.Offset {
			l.exec = append(l.exec, s)
		}
	}
	sort.Slice(l.exec, func(i, j int) bool { return l.exec[i].Addr < l.exec[j].Addr })
	if err := l.readDynamic(); err != nil {
		return nil, err
	}
	l.readSymbols()
	l.readSlots(progress)
	if err := l.checkTable(); err != nil {
		return nil, err
	}
	return l, nil
}

// checkTable refuses a table none of whose entries is a call site of the hook when some
// entries are plainly wrong (outside the executable sections, malformed, at code that is
// not a call to the hook): that is a corrupt table, or not a call-site table, and nothing
// in it can be trusted. Entries dropped for a legitimate reason (duplicates, code of
// overridden weak functions or discarded copies) never fail the file, and neither do a
// few wrong entries next to verified ones: those are reported and dropped.
func (l *Linked) checkTable() error {
	var wrong, outside int
	first := -1
	// mcount sites are refused as a whole: the program was built the wrong way.
	for i := range l.Sites {
		if s := &l.Sites[i]; errors.Is(s.Err, ErrMcountSite) {
			return fmt.Errorf("entry %d (%s): %w", s.Slot, s.Func, s.Err)
		}
	}
	for i := range l.Sites {
		s := &l.Sites[i]
		if s.Good() {
			return nil
		}
		if s.Err == nil || errors.Is(s.Err, ErrNoFunction) {
			continue
		}
		wrong++
		if _, ok := l.code(s.Addr); !ok {
			outside++
		}
		if first < 0 {
			first = i
		}
	}
	if wrong == 0 {
		return nil
	}
	s := &l.Sites[first]
	return fmt.Errorf("%w: none of the %d entries of %s is a call to __fentry__/mcount or a patchable entry, %d point outside the executable sections (first bad: slot %d: %v)",
		ErrOutsideText, len(l.Sites), TableSection, outside, s.Slot, s.Err)
}

// fileOff maps [addr, addr+n) to a file offset inside one PT_LOAD's file image.
func (l *Linked) fileOff(addr, n uint64) (uint64, bool) {
	for _, p := range l.loads {
		if addr >= p.Vaddr && addr-p.Vaddr <= p.Filesz && n <= p.Filesz-(addr-p.Vaddr) {
			off := p.Off + (addr - p.Vaddr)
			if off > uint64(len(l.data)) || n > uint64(len(l.data))-off {
				return 0, false
			}
			return off, true
		}
	}
	return 0, false
}

// readDynamic decodes PT_DYNAMIC, the RELA tables and RELR.
func (l *Linked) readDynamic() error {
	l.relaAt = map[uint64]relaInfo{}
	l.relrSet = map[uint64]bool{}
	var dynOff, dynSize uint64
	for _, p := range l.f.Progs {
		if p.Type == elf.PT_DYNAMIC {
			dynOff, dynSize = p.Off, p.Filesz
		}
	}
	if dynSize == 0 {
		return nil // static executable
	}
	if dynOff > uint64(len(l.data)) || dynSize > uint64(len(l.data))-dynOff {
		return fmt.Errorf("%w: PT_DYNAMIC outside the file", ErrBadFile)
	}
	if l.f.Class == elf.ELFCLASS32 {
		for o := dynOff; o+8 <= dynOff+dynSize; o += 8 {
			tag := elf.DynTag(int32(l.bo.Uint32(l.data[o:])))
			if tag == elf.DT_NULL {
				break
			}
			l.dyn = append(l.dyn, dynEntry{tag: tag, val: uint64(l.bo.Uint32(l.data[o+4:])), off: o})
		}
		if syms, err := l.f.DynamicSymbols(); err == nil {
			l.dynsyms = syms
		}
		// REL tables: only read (names of the GOT slots); ftkit tables need no dynamic
		// relocation, and a slot that has one is reported (readSlot). No RELR on 32-bit.
		for _, t := range [][2]elf.DynTag{{elf.DT_REL, elf.DT_RELSZ}, {elf.DT_JMPREL, elf.DT_PLTRELSZ}} {
			a, ok := l.dynVal(t[0])
			if !ok {
				continue
			}
			if k, _ := l.dynVal(elf.DT_PLTREL); t[0] == elf.DT_JMPREL && elf.DynTag(k) != elf.DT_REL {
				continue
			}
			sz, _ := l.dynVal(t[1])
			if err := l.addRel32(a, sz); err != nil {
				return err
			}
		}
		return nil
	}
	for o := dynOff; o+16 <= dynOff+dynSize; o += 16 {
		tag := elf.DynTag(l.bo.Uint64(l.data[o:]))
		if tag == elf.DT_NULL {
			break
		}
		l.dyn = append(l.dyn, dynEntry{tag: tag, val: l.bo.Uint64(l.data[o+8:]), off: o})
	}
	if syms, err := l.f.DynamicSymbols(); err == nil {
		l.dynsyms = syms
	}
	if a, ok := l.dynVal(elf.DT_RELA); ok {
		sz, _ := l.dynVal(elf.DT_RELASZ)
		if err := l.addRela(a, sz, true); err != nil {
			return err
		}
	}
	if a, ok := l.dynVal(elf.DT_JMPREL); ok {
		sz, _ := l.dynVal(elf.DT_PLTRELSZ)
		if k, _ := l.dynVal(elf.DT_PLTREL); elf.DynTag(k) == elf.DT_RELA {
			if err := l.addRela(a, sz, false); err != nil {
				return err
			}
		}
	}
	if a, ok := l.dynVal(dtRELR); ok && l.f.Class == elf.ELFCLASS64 {
		sz, _ := l.dynVal(dtRELRSZ)
		off, ok := l.fileOff(a, sz)
		if !ok || sz%8 != 0 {
			return fmt.Errorf("%w: DT_RELR table outside the file", ErrBadFile)
		}
		l.relrOff, l.relrSize = off, sz
		l.relr = decodeRelr(l.data[off:off+sz], l.bo)
		for _, a := range l.relr {
			l.relrSet[a] = true
		}
	}
	return nil
}

func (l *Linked) dynVal(tag elf.DynTag) (uint64, bool) {
	for _, d := range l.dyn {
		if d.tag == tag {
			return d.val, true
		}
	}
	return 0, false
}

func (l *Linked) addRela(addr, size uint64, counted bool) error {
	off, ok := l.fileOff(addr, size)
	if !ok || size%24 != 0 {
		return fmt.Errorf("%w: dynamic relocation table at %#x outside the file", ErrBadFile, addr)
	}
	l.rela = append(l.rela, relaTable{off: off, size: size, countTag: counted})
	for o := off; o < off+size; o += 24 {
		r := l.data[o : o+24]
		info := l.bo.Uint64(r[8:])
		ri := relaInfo{typ: uint32(info), addend: int64(l.bo.Uint64(r[16:])), fileAt: o}
		if si := info >> 32; si > 0 && si <= uint64(len(l.dynsyms)) {
			ri.sym = l.dynsyms[si-1].Name
		}
		if ri.typ == 0 { // R_X86_64_NONE, R_AARCH64_NONE
			continue
		}
		l.relaAt[l.bo.Uint64(r[0:])] = ri
	}
	return nil
}

// addRel32 reads an ELF32 SHT_REL dynamic relocation table (addend in place).
func (l *Linked) addRel32(addr, size uint64) error {
	off, ok := l.fileOff(addr, size)
	if !ok || size%8 != 0 {
		return fmt.Errorf("%w: dynamic relocation table at %#x outside the file", ErrBadFile, addr)
	}
	for o := off; o < off+size; o += 8 {
		info := l.bo.Uint32(l.data[o+4:])
		ri := relaInfo{typ: info & 0xff, fileAt: o}
		if si := info >> 8; si > 0 && int(si) <= len(l.dynsyms) {
			ri.sym = l.dynsyms[si-1].Name
		}
		if ri.typ == 0 {
			continue
		}
		l.relaAt[uint64(l.bo.Uint32(l.data[o:]))] = ri
	}
	return nil
}

// decodeRelr expands a DT_RELR table into the addresses it relocates.
func decodeRelr(b []byte, bo binary.ByteOrder) []uint64 {
	var out []uint64
	var base uint64
	for i := 0; i+8 <= len(b); i += 8 {
		e := bo.Uint64(b[i:])
		if e&1 == 0 {
			out = append(out, e)
			base = e + 8
			continue
		}
		for bit := 1; bit < 64; bit++ {
			if e>>uint(bit)&1 != 0 {
				out = append(out, base+uint64(bit-1)*8)
			}
		}
		base += 63 * 8
	}
	return out
}

// encodeRelr encodes sorted, 8-aligned addresses the way the linkers do.
func encodeRelr(addrs []uint64) []uint64 {
	var out []uint64
	for i := 0; i < len(addrs); {
		out = append(out, addrs[i])
		base := addrs[i] + 8
		i++
		for {
			var bm uint64
			for i < len(addrs) && addrs[i] >= base && addrs[i] < base+63*8 && (addrs[i]-base)%8 == 0 {
				bm |= 1 << (1 + (addrs[i]-base)/8)
				i++
			}
			if bm == 0 {
				break
			}
			out = append(out, bm|1)
			base += 63 * 8
		}
	}
	return out
}

// readSymbols collects function symbols (from .symtab, else .dynsym) and the local
// definitions of the profiling hooks.
func (l *Linked) readSymbols() {
	l.fentry = map[uint64]bool{}
	syms, err := l.f.Symbols()
	if err != nil || len(syms) == 0 {
		l.Stripped = true
		syms = l.dynsyms
	}
	add := func(s elf.Symbol) {
		if s.Section == elf.SHN_UNDEF || s.Value == 0 {
			return
		}
		if fentryNames[s.Name] {
			l.fentry[s.Value] = true
		}
		t := elf.ST_TYPE(s.Info)
		if t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC {
			addr := s.Value
			if l.arch.Machine == elf.EM_ARM {
				addr &^= 1 // the Thumb bit
			}
			l.funcs = append(l.funcs, funcSym{addr: addr, size: s.Size, name: s.Name})
		}
	}
	l.funcs = make([]funcSym, 0, len(syms))
	for _, s := range syms {
		add(s)
	}
	if !l.Stripped {
		for _, s := range l.dynsyms { // a stripped-of-locals file still has these
			if fentryNames[s.Name] && s.Section != elf.SHN_UNDEF && s.Value != 0 {
				l.fentry[s.Value] = true
			}
		}
	}
	// Sort by address, larger first at one address, then by name (deterministic).
	slices.SortFunc(l.funcs, func(a, b funcSym) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		if c := cmp.Compare(b.size, a.size); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	out := l.funcs[:0]
	for _, s := range l.funcs {
		if n := len(out); n > 0 && out[n-1].addr == s.addr {
			continue
		}
		out = append(out, s)
	}
	l.funcs = out
}

// FuncAt returns the function symbol containing addr: name, start, and whether one was
// found. For files without .symtab only exported functions are known.
func (l *Linked) FuncAt(addr uint64) (string, uint64, bool) {
	i := sort.Search(len(l.funcs), func(i int) bool { return l.funcs[i].addr > addr }) - 1
	if i < 0 {
		return "", 0, false
	}
	s := l.funcs[i]
	if addr < s.addr+s.size || addr == s.addr {
		return s.name, s.addr, true
	}
	return "", 0, false
}

// near names the nearest function symbol at or before addr and the offset from it
// ("frame_dummy+0x50"), or "" when there is none.
func (l *Linked) near(addr uint64) string {
	i := sort.Search(len(l.funcs), func(i int) bool { return l.funcs[i].addr > addr }) - 1
	if i < 0 {
		return ""
	}
	return fmt.Sprintf("%s+%#x", l.funcs[i].name, addr-l.funcs[i].addr)
}

// dwarfFuncAt names the DWARF subprogram whose code holds addr: the name an overridden
// weak function (or a discarded copy) had, after its symbol went away. The debug info is
// read on first use only (most files never need it).
func (l *Linked) dwarfFuncAt(addr uint64) (string, uint64, bool) {
	if !l.dwarfRead {
		l.dwarfRead = true
		l.dwarf = readDwarfFuncs(l.f)
	}
	i := sort.Search(len(l.dwarf), func(i int) bool { return l.dwarf[i].addr > addr }) - 1
	// Ranges hardly ever nest; look back a little in case one does.
	for k := i; k >= 0 && k > i-16; k-- {
		if s := l.dwarf[k]; addr-s.addr < s.size {
			return s.name, s.addr, true
		}
	}
	return "", 0, false
}

// readDwarfFuncs lists the address ranges of every DW_TAG_subprogram with code, named by
// DW_AT_linkage_name or DW_AT_name (through DW_AT_specification / DW_AT_abstract_origin
// when the definition refers to a declaration). Nil without usable DWARF.
func readDwarfFuncs(f *elf.File) []funcSym {
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	ref := d.Reader()
	var nameOf func(e *dwarf.Entry, depth int) string
	nameOf = func(e *dwarf.Entry, depth int) string {
		if n, ok := e.Val(dwarf.AttrLinkageName).(string); ok {
			return n
		}
		if n, ok := e.Val(dwarf.AttrName).(string); ok {
			return n
		}
		if depth > 4 {
			return ""
		}
		for _, a := range []dwarf.Attr{dwarf.AttrSpecification, dwarf.AttrAbstractOrigin} {
			if off, ok := e.Val(a).(dwarf.Offset); ok {
				ref.Seek(off)
				if o, err := ref.Next(); err == nil && o != nil {
					return nameOf(o, depth+1)
				}
			}
		}
		return ""
	}
	var out []funcSym
	r := d.Reader()
	// Every entry takes at least one byte of .debug_info: more entries than bytes means
	// corrupt data that debug/dwarf walks in a loop (found by FuzzLinked).
	budget := uint64(1 << 20)
	if s := f.Section(".debug_info"); s != nil {
		budget = s.Size + 1
	}
	for ; budget > 0; budget-- {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagSubprogram {
			continue
		}
		rs, err := d.Ranges(e)
		if err != nil || len(rs) == 0 {
			continue
		}
		name := nameOf(e, 0)
		if name == "" {
			continue
		}
		for _, rg := range rs {
			if rg[1] > rg[0] {
				out = append(out, funcSym{addr: rg[0], size: rg[1] - rg[0], name: name})
			}
		}
	}
	slices.SortFunc(out, func(a, b funcSym) int { return cmp.Compare(a.addr, b.addr) })
	return out
}

// code returns the bytes from addr to the end of the executable section holding it.
func (l *Linked) code(addr uint64) ([]byte, bool) {
	i := sort.Search(len(l.exec), func(i int) bool { return l.exec[i].Addr > addr }) - 1
	if i < 0 {
		return nil, false
	}
	s := l.exec[i]
	if addr-s.Addr >= s.Size {
		return nil, false
	}
	start := s.Offset + (addr - s.Addr)
	return l.data[start : s.Offset+s.Size], true
}

// readSlots decodes every slot and checks its site.
func (l *Linked) readSlots(progress func(done, total int)) {
	n := int(l.TableSize / EntrySize)
	tab := l.data[l.TableOff : l.TableOff+l.TableSize]
	seen := make(map[uint64]struct{}, n)
	l.Sites = make([]LinkedSite, 0, n)
	first := true
	for i := 0; i < n; i++ {
		if progress != nil && i%4096 == 0 {
			progress(i, n)
		}
		slotAddr := l.TableAddr + uint64(i)*EntrySize
		raw := tab[i*EntrySize : (i+1)*EntrySize]
		s := l.readSlot(i, slotAddr, raw)
		if s.Format == FormatEmpty {
			continue
		}
		if first {
			first = false
			l.Processed = s.Format == FormatFtkit && DecodeEntry(raw, l.bo).Magic == MagicLinked
		}
		if s.Err == nil {
			if _, dup := seen[s.Addr]; dup {
				s.Dup = true
			}
			seen[s.Addr] = struct{}{}
		}
		if s.Func == "" {
			s.Func, s.FuncAt, _ = l.FuncAt(s.Addr)
		}
		l.Sites = append(l.Sites, s)
	}
	if first && n > 0 && l.tableRelocs() == 0 {
		l.Processed = true // an empty table: see Linked.Processed
	}
	if progress != nil {
		progress(n, n)
	}
}

func (l *Linked) readSlot(i int, slotAddr uint64, raw []byte) LinkedSite {
	s := LinkedSite{Slot: i}
	val := l.bo.Uint64(raw)
	r, hasRela := l.relaAt[slotAddr]
	switch {
	case hasRela:
		s.Format = FormatGCC
		if l.arch.Machine != elf.EM_X86_64 || elf.R_X86_64(r.typ) != elf.R_X86_64_RELATIVE {
			if l.arch.Class == elf.ELFCLASS32 {
				s.Err = fmt.Errorf("slot has a dynamic relocation %s against %q (gcc's 4-byte -mrecord-mcount table? ftkit reads only its own entries on %s)", l.relocName(r.typ), r.sym, l.arch.Name)
				return s
			}
			s.Err = fmt.Errorf("slot has a dynamic relocation %s against %q", l.relocName(r.typ), r.sym)
			return s
		}
		s.Addr = uint64(r.addend)
	case l.relrSet[slotAddr]:
		s.Format, s.Addr = FormatGCC, val
	case val == 0:
		return s
	case DecodeEntry(raw, l.bo).Magic == MagicRecorded || DecodeEntry(raw, l.bo).Magic == MagicLinked:
		s.Format = FormatFtkit
		e := DecodeEntry(raw, l.bo)
		s.Addr = slotAddr + uint64(int64(e.Rel))
		if err := e.Check(); err != nil {
			s.Err = fmt.Errorf("bad entry (% x): %v", raw, err)
			return s
		}
		s.checkSite(l, e)
		return s
	case l.arch.Class == elf.ELFCLASS32:
		s.Format, s.Addr = FormatGCC, val
		s.Err = fmt.Errorf("slot % x is not an ftkit entry (gcc's 4-byte -mrecord-mcount table is not read on %s: record the objects with recordmcount)", raw, l.arch.Name)
		return s
	default:
		s.Format, s.Addr = FormatGCC, val
	}
	s.checkSite(l, Entry{})
	return s
}

// checkSite verifies the code at s.Addr. e is the ftkit entry, or zero for a gcc slot.
func (s *LinkedSite) checkSite(l *Linked, e Entry) {
	code, ok := l.code(s.Addr)
	if !ok {
		s.Err = fmt.Errorf("site %#x is outside the executable sections", s.Addr)
		return
	}
	if !l.Stripped {
		name, at, ok := l.FuncAt(s.Addr)
		if !ok {
			// The symbol is gone (overridden weak function, discarded copy); the debug
			// info may still name the code, else say where it lies.
			if name, at, ok := l.dwarfFuncAt(s.Addr); ok {
				s.Func, s.FuncAt = name, at
				s.Err = fmt.Errorf("site %#x is %w symbol: it is the code of %s (named by DWARF), an overridden weak function or a discarded copy", s.Addr, ErrNoFunction, name)
				return
			}
			s.Near = l.near(s.Addr)
			s.Err = fmt.Errorf("site %#x is %w symbol (code of an overridden weak function, or discarded code)", s.Addr, ErrNoFunction)
			return
		}
		s.Func, s.FuncAt = name, at
	}
	s.Pad, s.Pre = e.Pad, e.Pre
	if e.Kind == KindNops {
		s.checkNops(l, e, code)
		return
	}
	if l.arch.LinkedSite != nil {
		l.arch.LinkedSite(l, s, e, code)
		return
	}
	if l.arch.Machine != elf.EM_X86_64 && l.arch.Machine != elf.EM_386 {
		if e.Magic == 0 {
			s.Err = fmt.Errorf("slot %#x is not an ftkit entry (there is no gcc -mrecord-mcount table on %s)", l.bo.Uint64(l.data[l.TableOff+uint64(s.Slot)*EntrySize:]), l.arch.Name)
		} else {
			s.Err = fmt.Errorf("site %#x: entry kind %v is not an %s site", s.Addr, e.Kind, l.arch.Name)
		}
		return
	}
	if e.Pad || e.Pre > 0 {
		entry := s.Addr
		if e.Pad {
			if c, ok := l.code(s.Addr - 4); !ok || !l.arch.IsPad(c) {
				s.Err = fmt.Errorf("site %#x: the entry records a landing pad, the code has none", s.Addr)
				return
			}
			entry -= 4
		}
		if !s.checkPre(l, entry) {
			return
		}
	}
	// An already nop'ed site: accepted for ftlink-processed entries (their kind is the
	// recorded form), and as a 5-byte e8 site for gcc -mnop-mcount absolute entries.
	if e.Magic == MagicLinked && X86IsNopSite(code, int(e.Len)) {
		s.Nop, s.Len, s.Kind = true, int(e.Len), e.Kind
		s.checkEntry(l)
		return
	}
	if e.Magic == 0 && X86IsNopSite(code, 5) {
		s.Nop, s.Len, s.Kind = true, 5, KindCallRel
		s.checkEntry(l)
		return
	}
	k, n, target, err := X86SiteTarget(s.Addr, code)
	if err == nil && l.arch.Machine == elf.EM_386 {
		k, n, err = Decode386Site(code)
	}
	if err != nil {
		if e.Magic == MagicLinked && (X86IsNopSite(code, 5) || X86IsNopSite(code, 6)) {
			s.Err = fmt.Errorf("nop at site %#x does not match the entry's length %d", s.Addr, e.Len)
			return
		}
		s.Err = fmt.Errorf("site %#x: %v", s.Addr, err)
		return
	}
	s.Len, s.Kind = n, k
	if e.Magic != 0 && int(e.Len) != n {
		s.Err = fmt.Errorf("site %#x: entry records a %d-byte call, code has a %d-byte %v call", s.Addr, e.Len, n, k)
		return
	}
	var hook bool
	switch k {
	case KindCallRel, KindCallAddr:
		hook = l.isHook(target)
	case KindCallGOT:
		hook = l.isHookSlot(target)
	}
	if !hook {
		s.Err = fmt.Errorf("site %#x: %v call to %s, not to __fentry__/mcount", s.Addr, k, l.describe(target, k))
		return
	}
	s.checkEntry(l)
}

func (l *Linked) describe(target uint64, k Kind) string {
	if k == KindCallGOT {
		if r, ok := l.relaAt[target]; ok && r.sym != "" {
			return fmt.Sprintf("*%s@GOT", r.sym)
		}
		return fmt.Sprintf("*%#x", target)
	}
	if name, at, ok := l.FuncAt(target); ok {
		if at == target {
			return name
		}
		return fmt.Sprintf("%s+%#x", name, target-at)
	}
	return fmt.Sprintf("%#x", target)
}

// isHook reports whether a call target is __fentry__/mcount: a local definition, or a PLT
// stub (optionally endbr64, optionally bnd) `jmp *slot(%rip)` whose slot is the hook's.
func (l *Linked) isHook(target uint64) bool {
	if l.fentry[target] {
		return true
	}
	if v, ok := l.plt[target]; ok {
		return v > 0
	}
	res := int8(-1)
	if c, ok := l.code(target); ok {
		pc := target
		if HasEndbr64(c) || (l.arch.Machine == elf.EM_386 && HasEndbr32(c)) {
			c, pc = c[4:], pc+4
		}
		if len(c) > 0 && c[0] == 0xf2 { // bnd prefix (MPX-era PLTs)
			c, pc = c[1:], pc+1
		}
		if l.arch.Machine == elf.EM_386 {
			// jmp *abs32 (non-PIC PLT) or jmp *disp32(%ebx) (PIC PLT; %ebx = the GOT's base,
			// _GLOBAL_OFFSET_TABLE_, the start of .got.plt).
			if slot, ok := l.plt386Slot(c); ok && l.isHookSlot(slot) {
				res = 1
			}
		} else if len(c) >= 6 && c[0] == 0xff && c[1] == 0x25 {
			slot := pc + 6 + uint64(int64(int32(l.bo.Uint32(c[2:6]))))
			if l.isHookSlot(slot) {
				res = 1
			}
		}
	}
	l.plt[target] = res
	return res > 0
}

// plt386Slot returns the GOT slot an i386 PLT stub's first jump goes through.
func (l *Linked) plt386Slot(c []byte) (uint64, bool) {
	if len(c) < 6 || c[0] != 0xff {
		return 0, false
	}
	disp := uint64(l.bo.Uint32(c[2:6]))
	switch c[1] {
	case 0x25:
		return disp, true
	case 0xa3:
		got := l.f.Section(".got.plt")
		if got == nil {
			return 0, false
		}
		return uint64(uint32(got.Addr + disp)), true
	}
	return 0, false
}

// isHookSlot reports whether a GOT slot holds the address of __fentry__/mcount: a
// GLOB_DAT/JUMP_SLOT/64 relocation against the hook, or the address of a local definition
// (RELATIVE addend, RELR or static contents).
func (l *Linked) isHookSlot(slot uint64) bool {
	if l.arch.Machine == elf.EM_S390 {
		if r, ok := l.relaAt[slot]; ok {
			switch elf.R_390(r.typ) {
			case elf.R_390_GLOB_DAT, elf.R_390_JMP_SLOT, elf.R_390_64:
				return fentryNames[r.sym] && r.addend == 0
			}
			return false
		}
		off, ok := l.fileOff(slot, 8)
		return ok && l.fentry[l.bo.Uint64(l.data[off:])]
	}
	if l.arch.Machine == elf.EM_386 {
		if r, ok := l.relaAt[slot]; ok {
			switch elf.R_386(r.typ) {
			case elf.R_386_GLOB_DAT, elf.R_386_JMP_SLOT, elf.R_386_32:
				return fentryNames[r.sym]
			}
			return false
		}
		off, ok := l.fileOff(slot, 4)
		return ok && l.fentry[uint64(l.bo.Uint32(l.data[off:]))]
	}
	if r, ok := l.relaAt[slot]; ok {
		switch elf.R_X86_64(r.typ) {
		case elf.R_X86_64_GLOB_DAT, elf.R_X86_64_JMP_SLOT, elf.R_X86_64_64:
			return fentryNames[r.sym] && r.addend == 0
		case elf.R_X86_64_RELATIVE:
			return l.fentry[uint64(r.addend)]
		}
		return false
	}
	off, ok := l.fileOff(slot, 8)
	if !ok {
		return false
	}
	return l.fentry[l.bo.Uint64(l.data[off:])]
}

// Problems counts the entries that are dropped: bad ones and duplicates.
func (l *Linked) Problems() (bad, dups int) {
	for i := range l.Sites {
		if l.Sites[i].Err != nil {
			bad++
		} else if l.Sites[i].Dup {
			dups++
		}
	}
	return
}

// CheckProcessed lists what is wrong with an ftlink-processed file: anything Rewrite would
// change (a call not yet nop'ed, order, packing, magic, a dynamic relocation of the table).
func (l *Linked) CheckProcessed() []string {
	var out []string
	for _, s := range l.Sites {
		if s.Good() && !s.Nop {
			out = append(out, fmt.Sprintf("site %#x (%s) is still a call", s.Addr, s.Func))
		}
	}
	if n := l.tableRelocs(); n > 0 {
		out = append(out, fmt.Sprintf("%d dynamic relocations target the table", n))
	}
	nb, err := l.Rewrite()
	if err != nil {
		return append(out, err.Error())
	}
	if !bytes.Equal(nb, l.data) && len(out) == 0 {
		out = append(out, "table is not sorted, packed and marked as ftlink writes it")
	}
	return out
}

func (l *Linked) inTable(a uint64) bool { return a >= l.TableAddr && a-l.TableAddr < l.TableSize }

func (l *Linked) tableRelocs() int {
	n := 0
	for a := range l.relaAt {
		if l.inTable(a) {
			n++
		}
	}
	for _, a := range l.relr {
		if l.inTable(a) {
			n++
		}
	}
	return n
}

// Rewrite returns the new file contents: verified sites nop'ed, the table sorted, unique,
// packed and marked, and dynamic relocations of the table removed. The receiver's data is
// not modified. A file already processed comes back unchanged.
func (l *Linked) Rewrite() ([]byte, error) {
	out := append([]byte(nil), l.data...)
	if _, err := l.rewrite(&patcher{buf: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// RewriteInPlace is Rewrite without the copy: it changes the data given to OpenLinked and
// reports whether any byte changed. On error the data may be partly rewritten. Afterwards
// only l.Sites may be used (they describe the file as it was read).
func (l *Linked) RewriteInPlace() (changed bool, err error) {
	return l.rewrite(&patcher{buf: l.data})
}

// patcher writes into buf and remembers whether anything changed.
type patcher struct {
	buf     []byte
	changed bool
}

func (p *patcher) put(off uint64, b []byte) {
	dst := p.buf[off : off+uint64(len(b))]
	if !bytes.Equal(dst, b) {
		copy(dst, b)
		p.changed = true
	}
}

func (p *patcher) put64(bo binary.ByteOrder, off, v uint64) {
	var b [8]byte
	bo.PutUint64(b[:], v)
	p.put(off, b[:])
}

func (l *Linked) rewrite(p *patcher) (bool, error) {
	type goodSite struct {
		Addr uint64
		Len  int
		Kind Kind
		Nop  bool
		Pad  bool
		Pre  uint8
	}
	good := make([]goodSite, 0, len(l.Sites))
	for i := range l.Sites {
		if s := &l.Sites[i]; s.Good() {
			good = append(good, goodSite{s.Addr, s.Len, s.Kind, s.Nop, s.Pad, s.Pre})
		}
	}
	slices.SortFunc(good, func(a, b goodSite) int { return cmp.Compare(a.Addr, b.Addr) })
	// The table, built aside (the site addresses are already decoded).
	tab := make([]byte, l.TableSize)
	for i, s := range good {
		slot := l.TableAddr + uint64(i)*EntrySize
		rel := int64(s.Addr - slot)
		if rel != int64(int32(rel)) {
			return false, fmt.Errorf("site %#x is more than 2 GiB away from the table", s.Addr)
		}
		Entry{Rel: int32(rel), Len: uint8(s.Len), Kind: s.Kind, Pad: s.Pad, Pre: s.Pre, Magic: MagicLinked}.Put(tab[i*EntrySize:], l.bo)
	}
	// Relocations first: they read the original relocation tables.
	if err := l.dropRela(p); err != nil {
		return false, err
	}
	if err := l.dropRelr(p); err != nil {
		return false, err
	}
	for _, s := range good {
		if s.Nop {
			continue
		}
		off, ok := l.fileOff(s.Addr, uint64(s.Len))
		if !ok {
			return false, fmt.Errorf("site %#x: not in the file image", s.Addr)
		}
		if l.arch.SiteNop != nil {
			p.put(off, l.arch.SiteNop(s.Len))
			continue
		}
		p.put(off, X86Nop(s.Len))
	}
	p.put(l.TableOff, tab)
	return p.changed, nil
}

// dropRela turns the RELA relocations of table slots into type NONE. In the DT_RELA
// table, the leading DT_RELACOUNT relocations are applied as RELATIVE without looking at
// their type (glibc), so the neutralised ones are moved behind that run and the count
// lowered.
func (l *Linked) dropRela(p *patcher) error {
	count, hasCount := l.dynVal(elf.DT_RELACOUNT)
	for _, t := range l.rela {
		n := t.size / 24
		lead := uint64(0)
		if t.countTag && hasCount {
			lead = count
			if lead > n {
				return fmt.Errorf("%w: DT_RELACOUNT %d exceeds the %d relocations", ErrBadFile, lead, n)
			}
		}
		src := l.data[t.off : t.off+t.size]
		dst := append([]byte(nil), src...)
		hits := func(k uint64) bool {
			r := src[k*24 : k*24+24]
			return uint32(l.bo.Uint64(r[8:])) != 0 && l.inTable(l.bo.Uint64(r)) // type NONE is 0 on both machines
		}
		none := make([]byte, 24) // r_offset 0, type NONE, addend 0
		// Leading RELATIVE run: keep order of the survivors, NONEs after them.
		w, dropped := uint64(0), uint64(0)
		for k := uint64(0); k < lead; k++ {
			if hits(k) {
				dropped++
				continue
			}
			copy(dst[w*24:], src[k*24:k*24+24])
			w++
		}
		for ; w < lead; w++ {
			copy(dst[w*24:], none)
		}
		for k := lead; k < n; k++ {
			if hits(k) {
				copy(dst[k*24:], none)
			}
		}
		p.put(t.off, dst)
		if dropped > 0 {
			for _, d := range l.dyn {
				if d.tag == elf.DT_RELACOUNT {
					p.put64(l.bo, d.off+8, count-dropped)
				}
			}
		}
	}
	return nil
}

// dropRelr removes table slots from the RELR table: re-encoded, DT_RELRSZ (and the
// section header of the RELR section) shortened when it shrinks.
func (l *Linked) dropRelr(p *patcher) error {
	if l.relrSize == 0 {
		return nil
	}
	var keep []uint64
	for _, a := range l.relr {
		if !l.inTable(a) {
			keep = append(keep, a)
		}
	}
	if len(keep) == len(l.relr) {
		return nil
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i] < keep[j] })
	for _, a := range keep {
		if a%8 != 0 {
			return fmt.Errorf("%w: RELR address %#x not 8-aligned", ErrBadFile, a)
		}
	}
	enc := encodeRelr(keep)
	newSize := uint64(len(enc)) * 8
	if newSize > l.relrSize {
		return fmt.Errorf("re-encoded RELR table grows from %d to %d bytes", l.relrSize, newSize)
	}
	dst := make([]byte, l.relrSize)
	for i, e := range enc {
		l.bo.PutUint64(dst[i*8:], e)
	}
	p.put(l.relrOff, dst)
	for _, d := range l.dyn {
		if d.tag == dtRELRSZ {
			p.put64(l.bo, d.off+8, newSize)
		}
	}
	// Keep the section header consistent for readelf & co.
	for i, s := range l.f.Sections {
		if s.Offset == l.relrOff && s.Size == l.relrSize && s.Type != elf.SHT_NULL {
			shoff := l.bo.Uint64(l.data[0x28:])
			shentsize := uint64(l.bo.Uint16(l.data[0x3a:]))
			at := shoff + uint64(i)*shentsize + 32 // sh_size in Elf64_Shdr
			if shentsize >= 64 && at+8 <= uint64(len(p.buf)) {
				p.put64(l.bo, at, newSize)
			}
		}
	}
	return nil
}

// relocName names a dynamic relocation type of the file's machine.
func (l *Linked) relocName(t uint32) string {
	switch l.arch.Machine {
	case elf.EM_AARCH64:
		return elf.R_AARCH64(t).String()
	case elf.EM_386:
		return elf.R_386(t).String()
	case elf.EM_ARM:
		return elf.R_ARM(t).String()
	case elf.EM_S390:
		return elf.R_390(t).String()
	case elf.EM_PPC64:
		return elf.R_PPC64(t).String()
	}
	return elf.R_X86_64(t).String()
}

// checkNops verifies a patchable-entry site: Len bytes of nops at the site, the landing pad
// before it when the entry records one, the function's entry right there (or at the pad),
// and the area before the function. On x86-64 a 5- or 6-byte area not yet in the form of
// ftkit's nop is marked for rewriting (one instruction, patchable like a call site).
func (s *LinkedSite) checkNops(l *Linked, e Entry, code []byte) {
	n := int(e.Len)
	if len(code) < n || nopRun(l.arch, code[:n]) != n {
		s.Err = fmt.Errorf("site %#x: the %d bytes are not nops (% x)", s.Addr, n, head(code, n))
		return
	}
	s.Len, s.Kind = n, KindNops
	x86 := l.arch.Machine == elf.EM_X86_64 || l.arch.Machine == elf.EM_386
	s.Nop = !x86 || X86Nop(n) == nil || X86IsNopSite(code, n)
	entry := s.Addr
	if e.Pad {
		if c, ok := l.code(s.Addr - 4); !ok || !l.arch.IsPad(c) {
			s.Err = fmt.Errorf("site %#x: the entry records a landing pad, the code has none", s.Addr)
			return
		}
		entry -= 4
	}
	if s.Func != "" && s.FuncAt != entry {
		s.Err = fmt.Errorf("site %#x: %w: the nops are not at the entry of %s (%#x)", s.Addr, ErrNotAtEntry, s.Func, s.FuncAt)
		return
	}
	s.checkPre(l, entry)
}

// checkPre verifies the nop area the entry records before the function at entry.
func (s *LinkedSite) checkPre(l *Linked, entry uint64) bool {
	if s.Pre == 0 {
		return true
	}
	c, ok := l.code(entry - uint64(s.Pre))
	if !ok || len(c) < int(s.Pre) || nopRun(l.arch, c[:s.Pre]) != int(s.Pre) {
		s.Err = fmt.Errorf("site %#x: the %d bytes before the function are not nops", s.Addr, s.Pre)
		return false
	}
	return true
}
