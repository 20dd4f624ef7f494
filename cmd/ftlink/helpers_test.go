package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// oracleSite is a call to __fentry__/mcount at the start of a function, found by
// objdump (an independent decoder) in a linked file before ftlink.
type oracleSite struct {
	fn  string
	len int
}

var (
	objdumpFunc = regexp.MustCompile(`^([0-9a-f]+) <(.+)>:$`)
	objdumpHook = regexp.MustCompile(`call.*<(__fentry__|mcount|_mcount)(@[^>]*)?>`)
	objdumpGOT  = regexp.MustCompile(`^call +\*0x[0-9a-f]+\(%rip\) +# ([0-9a-f]+) `)
)

// objdumpSites returns, by site address, every function whose first instruction (after
// endbr64) is a call to __fentry__/mcount, according to objdump.
func objdumpSites(t *testing.T, file string) map[uint64]oracleSite {
	t.Helper()
	return objdumpScan(t, file, false)
}

// objdumpNopSites is objdumpSites after ftlink: functions starting (after endbr64) with a
// call to the hook or with one of ftlink's nops. Compilers do not start functions with
// these nops (alignment padding lies before a function's symbol).
func objdumpNopSites(t *testing.T, file string) map[uint64]oracleSite {
	t.Helper()
	return objdumpScan(t, file, true)
}

func objdumpScan(t *testing.T, file string, nopsToo bool) map[uint64]oracleSite {
	t.Helper()
	out := testenv.Run(t, "", "objdump", "-d", "-w", file)
	// objdump names a GOT slot after the nearest symbol: find the slots of the hooks from
	// the dynamic relocations instead.
	hookSlots := map[string]bool{}
	for _, line := range strings.Split(testenv.Run(t, "", "readelf", "-rW", file), "\n") {
		fs := strings.Fields(line)
		if len(fs) >= 5 && (strings.HasSuffix(fs[2], "GLOB_DAT") || strings.HasSuffix(fs[2], "JUMP_SLOT")) {
			name := strings.SplitN(fs[4], "@", 2)[0]
			if name == "__fentry__" || name == "mcount" || name == "_mcount" {
				v, err := strconv.ParseUint(fs[0], 16, 64)
				if err == nil {
					hookSlots[strconv.FormatUint(v, 16)] = true
				}
			}
		}
	}
	// Only functions start with a site: a label that is not one (the runtime's template
	// markers such as ftrace_multi_caller_fallback_end, followed by alignment nops) is not.
	notFunc := map[string]bool{}
	for _, line := range strings.Split(testenv.Run(t, "", "readelf", "-sW", file), "\n") {
		fs := strings.Fields(line)
		if len(fs) >= 8 && fs[3] != "FUNC" && fs[3] != "IFUNC" {
			notFunc[strings.SplitN(fs[7], "@", 2)[0]] = true
		}
	}
	sites := map[uint64]oracleSite{}
	var fn string
	first := false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := objdumpFunc.FindStringSubmatch(line); m != nil {
			fn, first = m[2], !notFunc[m[2]]
			continue
		}
		if !first {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 3 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		asm := strings.TrimSpace(f[2])
		if asm == "endbr64" {
			continue
		}
		first = false
		hook := objdumpHook.MatchString(asm)
		if m := objdumpGOT.FindStringSubmatch(asm); m != nil && hookSlots[m[1]] {
			hook = true
		}
		if raw := strings.TrimSpace(f[1]); nopsToo && (raw == "0f 1f 44 00 00" || raw == "66 0f 1f 44 00 00") {
			hook = true
		}
		if hook {
			addr, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(f[0]), ":"), 16, 64)
			if err != nil {
				t.Fatalf("objdump line %q: %v", line, err)
			}
			sites[addr] = oracleSite{fn: fn, len: len(strings.Fields(f[1]))}
		}
	}
	return sites
}

// tableEntry is one decoded slot of an ftlink-processed table, read independently of
// the mcountloc reader.
type tableEntry struct {
	site     uint64
	len      int
	kind     int
	siteCode []byte
}

// readProcessedTable checks the layout of an ftlink-processed table (magic, order,
// uniqueness, packing, zero tail, no dynamic relocation) and returns its entries.
func readProcessedTable(t *testing.T, file string) []tableEntry {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sec := f.Section("__mcount_loc")
	if sec == nil {
		t.Fatalf("%s: no __mcount_loc", file)
	}
	data, err := sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	var out []tableEntry
	tail := false
	for i := 0; i+8 <= len(data); i += 8 {
		raw := data[i : i+8]
		if bytes.Equal(raw, make([]byte, 8)) {
			tail = true
			continue
		}
		if tail {
			t.Errorf("%s: entry %d after an empty slot (table not packed)", file, i/8)
		}
		rel := int32(binary.LittleEndian.Uint32(raw))
		magic := binary.LittleEndian.Uint16(raw[6:])
		if magic != 0xF7CB {
			t.Errorf("%s: entry %d magic %#x, want 0xF7CB", file, i/8, magic)
		}
		e := tableEntry{site: sec.Addr + uint64(i) + uint64(int64(rel)), len: int(raw[4]), kind: int(raw[5])}
		if n := len(out); n > 0 && out[n-1].site >= e.site {
			t.Errorf("%s: entry %d site %#x not above the previous %#x", file, i/8, e.site, out[n-1].site)
		}
		e.siteCode = codeAt(t, f, e.site, e.len)
		out = append(out, e)
	}
	// No dynamic relocation may target the table.
	rr := testenv.Run(t, "", "readelf", "-rW", file)
	for _, line := range strings.Split(rr, "\n") {
		fs := strings.Fields(line)
		if len(fs) < 3 {
			continue
		}
		off, err := strconv.ParseUint(fs[0], 16, 64)
		if err != nil || strings.Contains(fs[2], "NONE") {
			continue
		}
		if off >= sec.Addr && off < sec.Addr+sec.Size {
			t.Errorf("%s: dynamic relocation targets the table: %s", file, line)
		}
	}
	return out
}

func codeAt(t *testing.T, f *elf.File, addr uint64, n int) []byte {
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && addr >= s.Addr && addr+uint64(n) <= s.Addr+s.Size {
			b := make([]byte, n)
			if _, err := s.ReadAt(b, int64(addr-s.Addr)); err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Errorf("site %#x not in an executable section", addr)
	return nil
}

var nops = map[int][]byte{5: {0x0f, 0x1f, 0x44, 0x00, 0x00}, 6: {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}}

// checkLinked verifies an ftlink-processed file against the oracle taken before ftlink:
// every entry is a nop of the recorded length, and the entries are exactly the oracle's
// sites with the same lengths.
func checkLinked(t *testing.T, file string, oracle map[uint64]oracleSite) {
	t.Helper()
	ents := readProcessedTable(t, file)
	got := map[uint64]bool{}
	for _, e := range ents {
		got[e.site] = true
		if !bytes.Equal(e.siteCode, nops[e.len]) {
			t.Errorf("%s: site %#x: bytes % x, want the %d-byte nop", file, e.site, e.siteCode, e.len)
		}
		o, ok := oracle[e.site]
		switch {
		case !ok:
			t.Errorf("%s: table entry %#x is not a function's call to __fentry__ (objdump)", file, e.site)
		case o.len != e.len:
			t.Errorf("%s: %s: entry length %d, objdump found a %d-byte call", file, o.fn, e.len, o.len)
		}
		if want := map[int]int{1: 5, 2: 6, 3: 6}[e.kind]; want != e.len {
			t.Errorf("%s: site %#x: kind %d with length %d", file, e.site, e.kind, e.len)
		}
	}
	var missing []string
	for a, o := range oracle {
		if !got[a] {
			missing = append(missing, fmt.Sprintf("%s@%#x", o.fn, a))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%s: %d instrumented functions missing from the table: %v", file, len(missing), missing)
	}
	if len(ents) == 0 {
		t.Errorf("%s: empty table", file)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func srcDir(parts ...string) string {
	return filepath.Join(append([]string{testenv.Root(), "testdata", "ftlink"}, parts...)...)
}

func sources(t *testing.T, dir string, exts ...string) []string {
	t.Helper()
	var out []string
	for _, e := range exts {
		m, err := filepath.Glob(filepath.Join(dir, "*"+e))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}
