// Package symbolize turns traced addresses into function names, demangled C++ names and
// source positions, using the ELF files named in a trace's memory map: .symtab (falling
// back to .dynsym) for names, DWARF line tables for file:line. Objects whose build-id does
// not match the trace, or that cannot be opened, and addresses outside any symbol are
// shown as addresses.
package symbolize

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/internal/elfsym"
	"github.com/ftkit/ftkit/mcountloc"
	"github.com/ianlancetaylor/demangle"
	"golang.org/x/sys/unix"
)

// Func is a resolved function. Funcs are shared: every address inside the same function
// of the same object resolves to the same *Func.
type Func struct {
	Name    string // demangled name, or 0x... for unknown code
	Raw     string // symbol name as in the symbol table ("" when unknown)
	Module  string // path of the object (as recorded in the trace), "" when unmapped
	Addr    uint64 // start of the function (file virtual address; runtime address if unmapped)
	Size    uint64
	File    string // source file of the function's entry, "" without DWARF
	Line    int
	Unknown bool // no symbol: Name is an address
}

// String is the name with its source position, if any.
func (f *Func) String() string {
	if f.File != "" {
		return fmt.Sprintf("%s (%s:%d)", f.Name, f.File, f.Line)
	}
	return f.Name
}

// Symbolizer resolves addresses of one trace.
type Symbolizer struct {
	// mu serialises the lookups of every LockedLookup function: a reader and the stack
	// traces of its markers look up from two goroutines.
	mu       sync.Mutex
	maps     []tracefile.Mapping
	objs     map[string]*object
	cache    map[uint64]*Func
	unknown  map[string]*Func
	warnings []string
	// OpenELF opens an object file; tests replace it. Default: OpenRegularELF.
	OpenELF func(path string) (*elf.File, error)
	// DebugDirs are searched for DIR/.build-id/xx/yyyy.debug when an object is gone,
	// differs from the recorded build-id, or has no .symtab. Default: /usr/lib/debug.
	DebugDirs []string
	// Sysroots are tried as prefixes of an object's recorded path when the path itself
	// does not give a file with the recorded build-id: a program run under qemu-user with
	// -L /usr/aarch64-linux-gnu records its libraries as /lib/libc.so.6. Default:
	// $FTRACE_SYSROOT (colon-separated), $QEMU_LD_PREFIX, then Debian's cross sysroots
	// (/usr/*-linux-gnu*); only an object whose build-id matches is taken.
	Sysroots []string
	// Shared, when set, holds the objects of every Symbolizer given it: the traces of
	// one run (a test suite's hundreds of processes) read their program and libraries
	// once, not once each (1,060 libuv traces took 7 GB and 80 s).
	Shared *Cache
}

// Cache is objects already read, by the file they were read for: its recorded path and
// build-id (without one, its size and time of change).
// Objects past a budget of their estimated memory are let go, least recently used
// first: a test suite runs many programs, each read once for its traces (grep's `make
// check`: 2,643 traces of 173 programs, 547 MB kept).
type Cache struct {
	mu     sync.Mutex
	objs   map[string]*cachedObject
	bytes  int64 // estimated, of the objects held
	budget int64
	tick   uint64
}

type cachedObject struct {
	o    *object
	err  error
	size int64
	used uint64
}

// cacheBudget is a Cache's default budget (about the objects' memory, not the process's).
const cacheBudget = 256 << 20

// NewCache returns an empty Cache for Symbolizer.Shared.
func NewCache() *Cache { return &Cache{objs: map[string]*cachedObject{}, budget: cacheBudget} }

// approxBytes is about what o holds in memory: its functions and line rows (whose file
// names are shared).
func (o *object) approxBytes() int64 {
	if o == nil {
		return 64
	}
	n := int64(len(o.funcs))*160 + int64(len(o.secEnd))*8 + int64(len(o.lines))*int64(unsafe.Sizeof(lineEntry{}))
	return n + 256
}

// add holds o under key, letting the least recently used objects go past the budget
// (the one added stays). Under c.mu.
func (c *Cache) add(key string, o *object, err error) {
	c.tick++
	co := &cachedObject{o: o, err: err, size: o.approxBytes(), used: c.tick}
	c.objs[key] = co
	c.bytes += co.size
	for c.bytes > c.budget && len(c.objs) > 1 {
		var oldK string
		var old *cachedObject
		for k, v := range c.objs {
			if v != co && (old == nil || v.used < old.used) {
				oldK, old = k, v
			}
		}
		if old == nil {
			break
		}
		delete(c.objs, oldK)
		c.bytes -= old.size
	}
}

// defaultSysroots is Symbolizer.Sysroots' default.
func defaultSysroots() []string {
	var out []string
	for _, e := range []string{"FTRACE_SYSROOT", "QEMU_LD_PREFIX"} {
		for _, d := range filepath.SplitList(os.Getenv(e)) {
			if d != "" && d != "/" {
				out = append(out, d)
			}
		}
	}
	cross, _ := filepath.Glob("/usr/*-linux-gnu*")
	for _, d := range cross {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// New returns a Symbolizer for the trace's memory map.
func New(maps []tracefile.Mapping) *Symbolizer {
	return &Symbolizer{
		maps:      maps,
		objs:      map[string]*object{},
		cache:     map[uint64]*Func{},
		unknown:   map[string]*Func{},
		OpenELF:   OpenRegularELF,
		DebugDirs: []string{"/usr/lib/debug"},
		Sysroots:  defaultSysroots(),
	}
}

// Warnings returns the problems met so far (object missing, build-id mismatch, ...), one
// per object.
func (s *Symbolizer) Warnings() []string { return s.warnings }

// Lookup resolves a runtime address (a call-site ip or a return address) to the function
// containing it.
func (s *Symbolizer) Lookup(addr uint64) *Func {
	if f, ok := s.cache[addr]; ok {
		return f
	}
	f := s.lookup(addr)
	s.cache[addr] = f
	return f
}

// LockedLookup is Lookup made safe for concurrent use, also with the functions of other
// LockedLookup calls on s.
func (s *Symbolizer) LockedLookup() func(addr uint64) *Func {
	return func(addr uint64) *Func {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.Lookup(addr)
	}
}

func (s *Symbolizer) lookup(addr uint64) *Func {
	var m *tracefile.Mapping
	for i := range s.maps {
		if s.maps[i].Contains(addr) {
			m = &s.maps[i]
			break
		}
	}
	if m == nil {
		return s.unknownFunc("", addr)
	}
	obj := s.object(m)
	vaddr := addr - m.Bias
	if obj != nil {
		if f := obj.lookup(vaddr); f != nil {
			return f
		}
	}
	return s.unknownFunc(m.Path, vaddr)
}

func (s *Symbolizer) unknownFunc(module string, addr uint64) *Func {
	key := fmt.Sprintf("%s\x00%x", module, addr)
	if f, ok := s.unknown[key]; ok {
		return f
	}
	// with its object's name when it has one ("libstdc++.so.6+0xd44a2"), as perf does:
	// a bare offset does not say where to look
	name := fmt.Sprintf("0x%x", addr)
	if module != "" {
		name = filepath.Base(module) + "+" + name
	}
	f := &Func{Name: name, Module: module, Addr: addr, Unknown: true}
	s.unknown[key] = f
	return f
}

func (s *Symbolizer) object(m *tracefile.Mapping) *object {
	key := m.Path + "\x00" + hex.EncodeToString(m.BuildID)
	if o, ok := s.objs[key]; ok {
		return o
	}
	o, err := s.sharedLoad(m, key)
	if err != nil {
		s.warnings = append(s.warnings, err.Error())
		o = nil
	}
	s.objs[key] = o
	return o
}

// sharedLoad is load through s.Shared, if set.
func (s *Symbolizer) sharedLoad(m *tracefile.Mapping, key string) (*object, error) {
	c := s.Shared
	if c == nil {
		return s.load(m)
	}
	// what load reads depends on these too
	key += fmt.Sprintf("\x00%d", m.Flags&(tracefile.MapVDSO|tracefile.MapMain))
	if len(m.BuildID) == 0 {
		if st, err := os.Stat(m.Path); err == nil {
			key += fmt.Sprintf("\x00%d\x00%d", st.Size(), st.ModTime().UnixNano())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if co, ok := c.objs[key]; ok {
		c.tick++
		co.used = c.tick
		return co.o, co.err
	}
	o, err := s.load(m)
	c.add(key, o, err)
	return o, err
}

func (s *Symbolizer) load(m *tracefile.Mapping) (*object, error) {
	if m.Flags&tracefile.MapVDSO != 0 || m.Path == "" || strings.HasPrefix(m.Path, "[") {
		if o, ok := s.loadDebug(m); ok {
			return o, nil
		}
		return nil, fmt.Errorf("%s: no file to read symbols from", displayPath(m.Path))
	}
	// the recorded path, then the same under each sysroot (a build-id to check it by)
	paths := []string{m.Path}
	if len(m.BuildID) > 0 && filepath.IsAbs(m.Path) {
		for _, root := range s.Sysroots {
			paths = append(paths, filepath.Join(root, m.Path))
		}
	}
	var o *object
	var hasSymtab bool
	var err error
	for k, p := range paths {
		po, psym, perr := s.loadFile(p, m.BuildID, wantLines(m))
		if k == 0 || perr == nil {
			o, hasSymtab, err = po, psym, perr // the recorded path's error if none is found
		}
		if perr == nil {
			break
		}
	}
	if err == nil && hasSymtab {
		return o, nil
	}
	if d, ok := s.loadDebug(m); ok {
		return d, nil
	}
	return o, err
}

// loadFile reads path's symbols if its build-id matches want (when want is known).
// lines: read its line tables even without a call-site table (wantLines).
func (s *Symbolizer) loadFile(path string, want []byte, lines bool) (o *object, hasSymtab bool, err error) {
	f, err := s.OpenELF(path)
	if err != nil {
		return nil, false, fmt.Errorf("%s: cannot read symbols: %w", path, err)
	}
	defer f.Close()
	if len(want) > 0 {
		id, err := BuildID(f)
		if err != nil {
			return nil, false, fmt.Errorf("%s: reading build-id: %w", path, err)
		}
		if id != nil && !bytes.Equal(id, want) {
			return nil, false, fmt.Errorf("%s: build-id %x does not match the trace's %x (file changed since recording); showing addresses", path, id, want)
		}
	}
	hasSymtab = f.Section(".symtab") != nil
	o, err = loadObject(path, f, lines || f.Section(mcountloc.TableSection) != nil)
	return o, hasSymtab, err
}

// wantLines: line tables are read for the main executable, objects with a call-site table
// (what ftkit traces) and objects outside the system's library directories, not for the
// system's libraries (libc, libstdc++): only their names show (callers, outermost frames),
// and the distribution's debug file for libc held some 80 MB of rows (a function trace of
// any size took ~100 MB to read).
func wantLines(m *tracefile.Mapping) bool {
	if m.Flags&tracefile.MapMain != 0 {
		return true
	}
	for _, d := range []string{"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/"} {
		if strings.HasPrefix(m.Path, d) {
			return false
		}
	}
	return true
}

// loadDebug looks for a separate debug file by build-id.
func (s *Symbolizer) loadDebug(m *tracefile.Mapping) (*object, bool) {
	if len(m.BuildID) < 2 {
		return nil, false
	}
	id := hex.EncodeToString(m.BuildID)
	for _, dir := range s.DebugDirs {
		p := filepath.Join(dir, ".build-id", id[:2], id[2:]+".debug")
		if o, _, err := s.loadFile(p, m.BuildID, wantLines(m)); err == nil {
			for _, f := range o.funcs {
				f.Module = m.Path // show the object as traced, not its debug file
			}
			return o, true
		}
	}
	return nil, false
}

func displayPath(p string) string {
	if p == "" {
		return "(anonymous mapping)"
	}
	return p
}

// OpenRegularELF opens path as an ELF file only when it is a regular file. A trace's memory
// map may name anything: opening a FIFO would block the reader for ever, and a device could
// be read without end. The first open does not block (O_NONBLOCK); once its descriptor is
// known to be a regular file, the same file is opened again through /proc/self/fd for
// elf.Open, which then owns (and closes) it.
func OpenRegularELF(path string) (*elf.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return elf.Open(fmt.Sprintf("/proc/self/fd/%d", fd))
}

// BuildID returns the GNU build-id of f, or nil when it has none.
func BuildID(f *elf.File) ([]byte, error) {
	return Note(f, "GNU", 3)
}

// Note returns the descriptor of f's first note of that name and type (in a note section,
// else in a PT_NOTE segment: stripped files keep those), or nil when it has none.
func Note(f *elf.File, name string, typ uint32) ([]byte, error) {
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_NOTE {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", sec.Name, err)
		}
		if desc := findNote(data, f.ByteOrder, name, typ); desc != nil {
			return desc, nil
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		data, err := io.ReadAll(p.Open())
		if err != nil {
			return nil, fmt.Errorf("note segment: %w", err)
		}
		if desc := findNote(data, f.ByteOrder, name, typ); desc != nil {
			return desc, nil
		}
	}
	return nil, nil
}

func findNote(data []byte, bo binary.ByteOrder, want string, wantType uint32) []byte {
	align := func(n uint32) uint32 { return (n + 3) &^ 3 }
	for len(data) >= 12 {
		namesz, descsz, typ := bo.Uint32(data), bo.Uint32(data[4:]), bo.Uint32(data[8:])
		rest := data[12:]
		if uint64(align(namesz))+uint64(align(descsz)) > uint64(len(rest)) {
			return nil
		}
		name := rest[:namesz]
		desc := rest[align(namesz) : align(namesz)+descsz]
		if typ == wantType && string(bytes.TrimRight(name, "\x00")) == want {
			return append([]byte(nil), desc...)
		}
		data = rest[align(namesz)+align(descsz):]
	}
	return nil
}

// object is the symbol table and line table of one ELF file.
type object struct {
	path  string
	funcs []*Func // sorted by Addr
	// secEnd[i]: the end of the section funcs[i] is in (0: unknown), which bounds a
	// symbol of size 0 (_fini, labels of assembly) that is the last of its section
	secEnd []uint64
	lines  []lineEntry
}

type lineEntry struct {
	addr uint64
	end  uint64 // end of the row's sequence: the row covers nothing at or after it
	file string
	line int
	stmt bool // a recommended breakpoint location (is_stmt)
}

// FuncName is the name the readers show for symbol raw: demangled, and a C++ deleting
// destructor ("D0", which destroys and frees) told from the complete one ("D1") it calls,
// which demangles the same ("~T()" twice in a report, and a call of one by the other
// looked like recursion).
func FuncName(raw string) string {
	name := demangle.Filter(raw)
	if strings.HasPrefix(raw, "_Z") && strings.Contains(raw, "D0Ev") && name != raw {
		if i := strings.LastIndex(raw, "D0Ev"); i+4 == len(raw) || raw[i+4] == '.' {
			name += " [deleting]"
		}
	}
	return name
}

func loadObject(path string, f *elf.File, lines bool) (*object, error) {
	syms, err := f.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("%s: reading .symtab: %w", path, err)
	}
	if len(syms) == 0 {
		syms, err = f.DynamicSymbols()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return nil, fmt.Errorf("%s: reading .dynsym: %w", path, err)
		}
	}
	o := &object{path: path}
	seen := map[uint64]int{}
	var chosen []elf.Symbol // the symbol naming each of o.funcs, while they are read
	for _, sym := range syms {
		if elf.ST_TYPE(sym.Info) != elf.STT_FUNC && elf.ST_TYPE(sym.Info) != elf.STT_GNU_IFUNC {
			continue
		}
		// a versioned name ("lzma_code@@XZ_5.0", "f@XZ_5.1.2alpha": .symver aliases at one
		// address): shown and matched as the source names it, as the runtime does
		if i := strings.IndexByte(sym.Name, '@'); i > 0 {
			sym.Name = sym.Name[:i]
		}
		if sym.Section == elf.SHN_UNDEF || sym.Value == 0 {
			continue
		}
		// Several names at one address (aliases, identical code folded): the one the
		// runtime names the function by
		if i, ok := seen[sym.Value]; ok {
			if elfsym.Better(sym, chosen[i]) {
				prev := o.funcs[i]
				prev.Raw, prev.Name, prev.Size = sym.Name, FuncName(sym.Name), sym.Size
				chosen[i] = sym
			}
			continue
		}
		seen[sym.Value] = len(o.funcs)
		chosen = append(chosen, sym)
		o.funcs = append(o.funcs, &Func{
			Name:   FuncName(sym.Name),
			Raw:    sym.Name,
			Module: path,
			Addr:   sym.Value,
			Size:   sym.Size,
		})
		var end uint64
		if int(sym.Section) < len(f.Sections) {
			sec := f.Sections[sym.Section]
			end = sec.Addr + sec.Size
		}
		o.secEnd = append(o.secEnd, end)
	}
	sort.Sort(byAddr{o})
	if !lines {
		return o, nil
	}
	if d, err := f.DWARF(); err == nil {
		o.lines = readLines(d, sectionSize(f, ".debug_info"), sectionSize(f, ".debug_line"))
		for _, fn := range o.funcs {
			if le, ok := o.line(fn.Addr, fn.Size); ok {
				fn.File, fn.Line = le.file, le.line
			}
		}
	}
	return o, nil
}

// lookup returns the function containing vaddr: the last symbol starting at or before it,
// if vaddr is inside its size (symbols of size 0 extend to the next symbol).
func (o *object) lookup(vaddr uint64) *Func {
	i := sort.Search(len(o.funcs), func(i int) bool { return o.funcs[i].Addr > vaddr }) - 1
	if i < 0 {
		return nil
	}
	fn := o.funcs[i]
	if fn.Size > 0 && vaddr >= fn.Addr+fn.Size || fn.Size == 0 && o.secEnd[i] != 0 && vaddr >= o.secEnd[i] {
		return nil
	}
	return fn
}

// byAddr sorts an object's functions (and their section ends) by address.
type byAddr struct{ o *object }

func (b byAddr) Len() int           { return len(b.o.funcs) }
func (b byAddr) Less(i, j int) bool { return b.o.funcs[i].Addr < b.o.funcs[j].Addr }
func (b byAddr) Swap(i, j int) {
	b.o.funcs[i], b.o.funcs[j] = b.o.funcs[j], b.o.funcs[i]
	b.o.secEnd[i], b.o.secEnd[j] = b.o.secEnd[j], b.o.secEnd[i]
}

// sectionSize is the (uncompressed) size of the named section, 0 without it.
func sectionSize(f *elf.File, name string) uint64 {
	if s := f.Section(name); s != nil {
		return s.Size
	}
	return 0
}

// readLines collects the rows of every line table, sorted by address. Every
// entry and every row takes at least one byte of its section: the walks stop after that
// many (corrupt debug info can make debug/dwarf's readers go round for ever).
func readLines(d *dwarf.Data, infoSize, lineSize uint64) []lineEntry {
	var out []lineEntry
	r := d.Reader()
	entries, rows := infoSize+1, lineSize+1
	for ; entries > 0; entries-- {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err == nil && lr != nil {
			var le dwarf.LineEntry
			seq := len(out)
			for ; rows > 0 && lr.Next(&le) == nil; rows-- {
				if le.EndSequence {
					for k := seq; k < len(out); k++ {
						out[k].end = le.Address
					}
					seq = len(out)
					continue
				}
				if le.File == nil {
					continue
				}
				out = append(out, lineEntry{addr: le.Address, file: le.File.Name, line: le.Line, stmt: le.IsStmt})
			}
			out = out[:seq] // rows of an unterminated sequence have no known end
		}
		r.SkipChildren()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// line returns the first statement row at exactly addr whose sequence goes on past it (a
// sequence may end where the next function begins, with a last row of no length there);
// else the first statement row inside the function's first bytes (arm64's patchable entry
// puts its two nops, and BTI its `bti c`, before the function's first row: a row covering
// them, if any, is the previous function's last line and no statement); else the first
// row at addr, or the first inside those bytes; else the last row
// before it if its sequence covers addr (objects without DWARF linked with ones that
// have it).  A function's first row may name an inlined header's line that is no
// statement (basic_string.h:234 for a jsoncpp reader function, whose statement row there
// is json_reader.cpp:1439); the first statement row is the function's own opening line
// (addr2line reports the last row, which may be a line of its body).
func (o *object) line(addr, size uint64) (lineEntry, bool) {
	i := sort.Search(len(o.lines), func(i int) bool { return o.lines[i].addr >= addr })
	le, ok := o.rowAt(i, addr)
	if ok && le.stmt {
		return le, true
	}
	// the function's own first row, a few instructions in (at most 16 bytes of padding):
	// a statement there wins over a row at addr that is none (arm64 with BTI: the
	// previous function's last row covers `bti c` and the patchable nops)
	j := i
	for j < len(o.lines) && o.lines[j].addr == addr {
		j++
	}
	if j < len(o.lines) && o.lines[j].addr < addr+min(size, 17) {
		if first, fok := o.rowAt(j, o.lines[j].addr); fok && (first.stmt || !ok) {
			return first, true
		}
	}
	if ok {
		return le, true
	}
	if i > 0 && addr < o.lines[i-1].end {
		return o.lines[i-1], true
	}
	return lineEntry{}, false
}

// rowAt is line's choice among the rows from index i at exactly addr.
func (o *object) rowAt(i int, addr uint64) (lineEntry, bool) {
	first := -1
	for k := i; k < len(o.lines) && o.lines[k].addr == addr; k++ {
		if o.lines[k].end > addr {
			if o.lines[k].stmt {
				return o.lines[k], true
			}
			if first < 0 {
				first = k
			}
		}
	}
	if first >= 0 {
		return o.lines[first], true
	}
	return lineEntry{}, false
}

// ParamList is where a demangled name's parameter list begins: the "(" matching its last
// ")", whatever parentheses the list holds ("add(TestCase* (*)())"); -1 without one.
func ParamList(name string) int {
	end := strings.LastIndexByte(name, ')')
	depth := 0
	for i := end; i >= 0; i-- {
		switch name[i] {
		case ')':
			depth++
		case '(':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// CutTags splits a demangled name into the name up to its parameter list and the tags
// after it: "S::~S()" and " [deleting]", "f(int)" and " [clone .isra.0]".
func CutTags(name string) (base, tags string) {
	base = name
	for strings.HasSuffix(base, "]") {
		i := strings.LastIndex(base, " [")
		if i < 0 || !strings.HasSuffix(base[:i], ")") {
			break
		}
		base = base[:i]
	}
	return base, name[len(base):]
}

// ShortFile returns the base name of a source path, for compact output.
func ShortFile(p string) string { return filepath.Base(p) }
