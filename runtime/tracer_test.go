// Tests of the tracers (runtime/src/tracers): they build
// the C programs runtime/tests/trace_*.c with `gcc -pg -mfentry`, run them with the
// FTRACE_* controls, and check the trace files they write (docs/trace-format.md) with the
// small reader below: exact call counts, balanced graphs, unwound frames, lost counts,
// abnormal endings, the live-control socket. Each program's output must be the same
// with and without tracing.
//
// The programs are linked with the tracer sources and a minimal stand-in for the core
// (tests/trace_mockcore.c: __fentry__ stays a call that dispatches to the registered
// ops), so these tests exercise the tracers alone.
package ftrt_test

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ftkit/ftkit/internal/testenv"
)

var traceSources = []string{
	"src/tracers/clock.c", "src/tracers/trace_buf.c", "src/tracers/trace.c", "src/tracers/trace_util.c",
	"src/tracers/fgraph.c", "src/arch/x86_64/fgraph_x86_64.S", "src/tracers/fgraph_interpose.c",
	"src/tracers/control.c", "src/tracers/trigger.c", "src/tracers/args.c",
	"src/arch/x86_64/args_x86_64.c", "src/arch/x86_64/unwind_x86_64.c", "tests/trace_mockcore.c",
}

type trLibBuild struct {
	once sync.Once
	path string
	err  error
}

// The mock-core library, plain and with ASan+UBSan.
var trLibs = map[bool]*trLibBuild{false: {}, true: {}}

var trSan = []string{"-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"}

// trLibrary compiles the tracers and the mock core into an archive (once per test run).
func trLibrary(t *testing.T, san bool) string {
	t.Helper()
	testenv.Need(t, "gcc", "g++", "ar")
	lb := trLibs[san]
	lb.once.Do(func() {
		lb.path, lb.err = trBuildLibrary(san)
	})
	if lb.err != nil {
		t.Fatal(lb.err)
	}
	return lb.path
}

func trBuildLibrary(san bool) (string, error) {
	var trLib string
	var trLibErr error
	func() {
		dir, err := os.MkdirTemp("", "ftkit-tracer-")
		if err != nil {
			trLibErr = err
			return
		}
		root := filepath.Join(testenv.Root(), "runtime")
		var objs []string
		for _, s := range traceSources {
			obj := filepath.Join(dir, strings.TrimSuffix(filepath.Base(s), filepath.Ext(s))+".o")
			args := []string{"-std=gnu11", "-O2", "-g", "-Wall", "-Wextra", "-Werror",
				"-I", filepath.Join(root, "include"), "-I", filepath.Join(root, "src"),
				"-I", filepath.Join(root, "src", "arch", "x86_64"), "-c", filepath.Join(root, s), "-o", obj}
			if san {
				args = append(args, trSan...)
			}
			cmd := exec.Command("gcc", args...)
			if out, err := cmd.CombinedOutput(); err != nil {
				trLibErr = fmt.Errorf("compiling %s: %v\n%s", s, err, out)
				return
			}
			objs = append(objs, obj)
		}
		trLib = filepath.Join(dir, "libtrmock.a")
		if out, err := exec.Command("ar", append([]string{"rcs", trLib}, objs...)...).CombinedOutput(); err != nil {
			trLibErr = fmt.Errorf("ar: %v\n%s", err, out)
		}
	}()
	return trLib, trLibErr
}

// trBuild builds runtime/tests/<src> into dir through the real flow: gcc -pg -mfentry
// (PIE), recordmcount, link with libftrt.a, ftlink.
func trBuild(t *testing.T, dir, src string) string {
	t.Helper()
	testenv.Need(t, "gcc", "g++")
	lib, inc := testenv.Runtime(t)
	root := filepath.Join(testenv.Root(), "runtime")
	cc := "gcc"
	if strings.HasSuffix(src, ".cc") {
		cc = "g++"
	}
	name := strings.TrimSuffix(src, filepath.Ext(src))
	obj := filepath.Join(dir, name+".o")
	prog := filepath.Join(dir, name)
	testenv.Run(t, dir, cc, "-O2", "-g", "-pg", "-mfentry", "-I", inc, "-c",
		filepath.Join(root, "tests", src), "-o", obj)
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
	testenv.Run(t, dir, cc, obj, "-L"+lib, "-lftrt", "-lpthread", "-ldl", "-o", prog)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)
	return prog
}

// trBuildMock builds runtime/tests/<src> non-PIE with the tracer sources and the mock
// core instead of libftrt.a: the tracers on their own, without the core's patching.
func trBuildMock(t *testing.T, dir, src string) string {
	return trBuildMockSan(t, dir, src, false)
}

// trBuildMockASan is trBuildMock with ASan and UBSan (program and tracers).
func trBuildMockASan(t *testing.T, dir, src string) string {
	return trBuildMockSan(t, dir, src, true)
}

func trBuildMockSan(t *testing.T, dir, src string, san bool) string {
	t.Helper()
	lib := trLibrary(t, san)
	var sf []string
	if san {
		sf = trSan
	}
	root := filepath.Join(testenv.Root(), "runtime")
	cc := "gcc"
	if strings.HasSuffix(src, ".cc") {
		cc = "g++"
	}
	name := strings.TrimSuffix(src, filepath.Ext(src))
	obj := filepath.Join(dir, name+".o")
	prog := filepath.Join(dir, name)
	testenv.Run(t, dir, cc, append([]string{"-O2", "-g", "-pg", "-mfentry", "-fno-pie",
		"-I", filepath.Join(root, "include"), "-c", filepath.Join(root, "tests", src), "-o", obj}, sf...)...)
	testenv.Run(t, dir, cc, append([]string{"-no-pie", "-rdynamic", obj, "-Wl,--whole-archive", lib,
		"-Wl,--no-whole-archive", "-pthread", "-o", prog}, sf...)...)
	return prog
}

// trRun runs prog with the environment additions; it returns stdout and the wait status.
func trRun(t *testing.T, dir, prog string, env []string, args ...string) (string, syscall.WaitStatus) {
	t.Helper()
	return trRunCmd(t, dir, prog, exec.Command(prog, args...), env)
}

// trRunCmd runs cmd (prog itself, or qemu-user running it) as trRun does.
func trRunCmd(t *testing.T, dir, prog string, cmd *exec.Cmd, env []string) (string, syscall.WaitStatus) {
	t.Helper()
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A program that hangs is killed before go test's own timeout, which would leave it
	// (a qemu-user process) running after the test binary: the test fails instead.
	limit := trRunLimit
	if d, ok := t.Deadline(); ok && time.Until(d)-30*time.Second < limit {
		limit = max(time.Until(d)-30*time.Second, time.Second)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", prog, err)
	}
	var hung atomic.Bool
	watchdog := time.AfterFunc(limit, func() {
		hung.Store(true)
		cmd.Process.Kill()
	})
	err := cmd.Wait()
	watchdog.Stop()
	if errb.Len() > 0 {
		t.Logf("%s stderr:\n%s", filepath.Base(prog), errb.String())
	}
	if hung.Load() {
		t.Fatalf("%s: still running after %v: killed", prog, limit)
	}
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("%s: %v", prog, err)
		}
	}
	return out.String(), cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// trRunLimit bounds one run of a test program (the slowest, under qemu-user with
// function_graph on a loaded host, take about a minute).
const trRunLimit = 10 * time.Minute

func trCleanEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "FTRACE_") {
			env = append(env, e)
		}
	}
	return env
}

// ---- a small reader of the trace format (independent of cmd/ftrace's) ----

type trRec struct {
	TS, IP, Aux uint64
	Depth       uint32
	Type, Flags uint16 // Type 5: a marker (Text), 6: a stack trace (PCs)
	Text        string
	PCs         []uint64
}

type trThread struct {
	TID, Flags      uint32
	Lost, LostDepth uint64
	Name            string
	Recs            []trRec
	Seqs            []uint64        // its blocks in the file
	Ring            map[uint64]bool // the blocks flagged RING
}

type trMap struct {
	Start, End, Bias uint64
	Flags            uint8
	Path             string
	BuildID          []byte
}

type trTrace struct {
	Flags, PID, Signal, Clock, Reason, Tracer uint32
	NsPerTick                                 float64
	RefTicks, RefMono, RefReal                uint64
	StartTicks, EndTicks, TscHz               uint64
	LostNoBuf                                 uint64
	Cmdline                                   []string
	Maps                                      []trMap
	Threads                                   []*trThread
	Chunks                                    map[uint32]int // chunks of each type
	DataBytes, BlockBytes                     uint64         // event data in EVENTS+MORE chunks; in the blocks read
}

func trRead(t *testing.T, path string) *trTrace {
	t.Helper()
	d, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if len(d) < 256 || string(d[:8]) != "FTKITTRC" || le.Uint32(d[8:]) != 4 {
		t.Fatalf("%s: not a version-4 trace", path)
	}
	tr := &trTrace{
		Flags: le.Uint32(d[16:]), PID: le.Uint32(d[20:]), Signal: le.Uint32(d[24:]),
		Clock: le.Uint32(d[28:]), NsPerTick: math.Float64frombits(le.Uint64(d[32:])),
		Tracer: le.Uint32(d[80:]), Reason: le.Uint32(d[84:]), LostNoBuf: le.Uint64(d[104:]),
		RefTicks: le.Uint64(d[40:]), RefMono: le.Uint64(d[48:]), RefReal: le.Uint64(d[56:]),
		StartTicks: le.Uint64(d[64:]), EndTicks: le.Uint64(d[72:]), TscHz: le.Uint64(d[96:]),
	}
	if rs := le.Uint32(d[88:]); rs != 0 {
		t.Fatalf("record_size %d", rs)
	}
	if bs := le.Uint32(d[112:]); bs == 0 || bs%8 != 0 {
		t.Fatalf("block_size %d", bs)
	}
	threads := map[uint32]*trThread{}
	thread := func(tid uint32) *trThread {
		if threads[tid] == nil {
			threads[tid] = &trThread{TID: tid}
		}
		return threads[tid]
	}
	type block struct {
		seq  uint64
		nev  uint32
		data []byte
	}
	blocks := map[uint32]map[uint64]block{}
	tr.Chunks = map[uint32]int{}
	off := uint64(le.Uint32(d[12:]))
	for off+16 <= uint64(len(d)) {
		typ, size := le.Uint32(d[off:]), le.Uint64(d[off+8:])
		if typ == 0 && size == 0 {
			break
		}
		if size < 16 || size%8 != 0 || off+size > uint64(len(d)) {
			t.Fatalf("%s: chunk at %d: bad size %d", path, off, size)
		}
		c := d[off : off+size]
		tr.Chunks[typ]++
		switch typ {
		case 1:
			tr.Maps = nil // the last MAPS chunk is the most complete
			if hs := le.Uint32(c[4:]); hs != 32 {
				t.Fatalf("%s: MAPS hdr_size %d", path, hs)
			}
			n := le.Uint32(c[16:])
			o := uint64(32)
			for i := uint32(0); i < n; i++ {
				es := uint64(le.Uint32(c[o:]))
				pl, bl := uint64(le.Uint16(c[o+4:])), uint64(c[o+6])
				m := trMap{Flags: c[o+7], Start: le.Uint64(c[o+8:]), End: le.Uint64(c[o+16:]), Bias: le.Uint64(c[o+24:])}
				m.BuildID = append([]byte(nil), c[o+32:o+32+bl]...)
				m.Path = string(c[o+32+bl : o+32+bl+pl])
				tr.Maps = append(tr.Maps, m)
				o += es
			}
		case 5: // THREAD: the last one of a tid wins
			th := thread(le.Uint32(c[16:]))
			th.Flags, th.Lost, th.LostDepth = le.Uint32(c[20:]), le.Uint64(c[24:]), le.Uint64(c[32:])
			th.Name = strings.TrimRight(string(c[48:64]), "\x00")
		case 4: // EVENTS: a PARTIAL chunk is superseded by one of the same seq with more events
			tid, seq, nev := le.Uint32(c[16:]), le.Uint64(c[24:]), le.Uint32(c[48:])
			hs, dl := uint64(le.Uint32(c[4:])), uint64(le.Uint32(c[56:]))
			if hs != 72+16*uint64(le.Uint32(c[52:])) || hs+dl > size || dl%4 != 0 {
				t.Fatalf("%s: EVENTS chunk at %d: hdr_size %d, data_len %d, size %d", path, off, hs, dl, size)
			}
			thread(tid)
			tr.DataBytes += dl
			if blocks[tid] == nil {
				blocks[tid] = map[uint64]block{}
			}
			if old, ok := blocks[tid][seq]; !ok || old.nev < nev {
				blocks[tid][seq] = block{seq, nev, append([]byte(nil), c[:hs+dl]...)}
			}
		case 6: // MORE: the next bytes of a block's data
			tid, seq, from := le.Uint32(c[16:]), le.Uint64(c[24:]), le.Uint32(c[32:])
			nev, dl := le.Uint32(c[36:]), uint64(le.Uint32(c[40:]))
			b, ok := blocks[tid][seq]
			if le.Uint32(c[4:]) != 48 || 48+dl > size || !ok || le.Uint32(b.data[56:]) != from {
				t.Fatalf("%s: MORE chunk at %d (tid %d seq %d from %d) does not continue a block", path, off, tid, seq, from)
			}
			tr.DataBytes += dl
			b.data = append(b.data, c[48:48+dl]...)
			b.nev += nev
			le.PutUint32(b.data[48:], b.nev)
			le.PutUint32(b.data[56:], from+uint32(dl))
			blocks[tid][seq] = b
		case 3:
			tr.Cmdline = strings.Split(strings.TrimRight(string(c[16:]), "\x00"), "\x00")
		}
		off += size
	}
	for tid, bs := range blocks {
		th := threads[tid]
		var run []trFrame
		var seqs []uint64
		for s := range bs {
			seqs = append(seqs, s)
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		th.Seqs, th.Ring = seqs, map[uint64]bool{}
		for _, s := range seqs {
			if le.Uint32(bs[s].data[20:])&1 != 0 {
				th.Ring[s] = true
			}
			tr.BlockBytes += uint64(le.Uint32(bs[s].data[56:]))
			th.Recs = append(th.Recs, trDecodeBlock(t, path, bs[s].data, &run)...)
		}
	}
	for _, th := range threads {
		tr.Threads = append(tr.Threads, th)
	}
	sort.Slice(tr.Threads, func(i, j int) bool { return tr.Threads[i].TID < tr.Threads[j].TID })
	return tr
}

type trFrame struct{ ip, ts uint64 }

// trDecodeBlock decodes one EVENTS chunk into records as version 1 had them: FUNC (aux:
// parent), ENTRY (aux 0), EXIT (ip of the frame, aux: its entry time); depth is the
// recorded frames' nesting.  run is the thread's open frames after its previous block:
// where the block's header differs (events dropped or overwritten in between), records
// with flag 2 (gap) close the frames that ended unseen and open those entered unseen.
// trPairSlot is the FUNC_AGAIN cache slot of a (function, parent) pair.
func trPairSlot(ip, parent uint64) uint64 { return (ip ^ parent) * 0x9E3779B97F4A7C15 >> 56 }

func trDecodeBlock(t *testing.T, path string, c []byte, run *[]trFrame) []trRec {
	t.Helper()
	le := binary.LittleEndian
	var stack []trFrame
	var recs []trRec
	depth := le.Uint32(c[52:])
	for i := uint32(0); i < depth; i++ {
		stack = append(stack, trFrame{le.Uint64(c[72+16*i:]), le.Uint64(c[80+16*i:])})
	}
	ts, ipHi, parentHi := le.Uint64(c[32:]), uint64(le.Uint32(c[60:])), uint64(le.Uint32(c[64:]))
	k := 0
	for k < len(*run) && k < len(stack) && (*run)[k] == stack[k] {
		k++
	}
	for i := len(*run) - 1; i >= k; i-- {
		recs = append(recs, trRec{TS: ts, IP: (*run)[i].ip, Aux: (*run)[i].ts, Depth: uint32(i), Type: 3, Flags: 2})
	}
	for i := k; i < len(stack); i++ {
		recs = append(recs, trRec{TS: stack[i].ts, IP: stack[i].ip, Depth: uint32(i), Type: 2, Flags: 2})
	}
	defer func() { *run = stack }()
	hs, dl := le.Uint32(c[4:]), le.Uint32(c[56:])
	w := c[hs : hs+dl]
	word := func(i int) uint64 {
		if 4*i+4 > len(w) {
			t.Fatalf("%s: block seq %d: event runs past the data", path, le.Uint64(c[24:]))
		}
		return uint64(le.Uint32(w[4*i:]))
	}
	nev := uint32(0)
	var pairs [256]trRec    // FUNC_AGAIN's cache: (IP, Aux) pairs, empty at the block's start
	var entries [256]uint64 // ENTRY_AGAIN's: functions
	for i := 0; 4*i < len(w); {
		x := word(i)
		typ, delta := x&7, x>>3
		if typ != 7 { // EXT records are not counted as events
			nev++
		}
		switch typ {
		case 0, 1:
			if len(stack) == 0 {
				t.Fatalf("%s: block seq %d: an exit with no open frame", path, le.Uint64(c[24:]))
			}
			ts += delta
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			r := trRec{TS: ts, IP: f.ip, Aux: f.ts, Depth: uint32(len(stack)), Type: 3}
			if typ == 1 {
				r.Flags = 1
			}
			recs = append(recs, r)
			i++
		case 2, 6: // ENTRY; ENTRY_AGAIN: the function of slot x>>24, stored by an ENTRY
			var ip uint64
			if typ == 2 {
				ts += delta
				ip = ipHi<<32 | word(i+1)
				entries[ip*0x9E3779B97F4A7C15>>56] = ip
				i += 2
			} else {
				if ip = entries[x>>24]; ip == 0 {
					t.Fatalf("%s: block seq %d: ENTRY_AGAIN of slot %d, which no entry filled", path, le.Uint64(c[24:]), x>>24)
				}
				ts += delta & (1<<21 - 1)
				i++
			}
			recs = append(recs, trRec{TS: ts, IP: ip, Depth: uint32(len(stack)), Type: 2})
			stack = append(stack, trFrame{ip, ts})
		case 3:
			ts += delta
			r := trRec{TS: ts, IP: ipHi<<32 | word(i+1), Aux: parentHi<<32 | word(i+2), Type: 1}
			pairs[trPairSlot(r.IP, r.Aux)] = r
			recs = append(recs, r)
			i += 3
		case 4:
			ts += delta & 0x1fff
			ip := ipHi<<32 | word(i+1)
			r := trRec{TS: ts, IP: ip, Aux: ip + uint64(int64(int16(x>>16))), Type: 1}
			pairs[trPairSlot(r.IP, r.Aux)] = r
			recs = append(recs, r)
			i += 2
		case 5: // FUNC_AGAIN: the pair of slot x>>24, stored by a FUNC or FUNC_NEAR of the block
			r := pairs[x>>24]
			if r.IP == 0 {
				t.Fatalf("%s: block seq %d: FUNC_AGAIN of an empty slot %d", path, le.Uint64(c[24:]), x>>24)
			}
			ts += delta & (1<<21 - 1)
			recs = append(recs, trRec{TS: ts, IP: r.IP, Aux: r.Aux, Type: 1})
			i++
		case 7:
			sub, n, arg := (x>>3)&31, int((x>>8)&0xff), int(x>>16)
			switch sub {
			case 0:
				ts = word(i+1) | word(i+2)<<32
			case 1:
				ipHi = word(i + 1)
			case 2:
				parentHi = word(i + 1)
			case 3:
				if arg < len(stack) {
					stack = stack[:arg]
				}
			case 5: // MARKER: u64 time, arg bytes of text
				if n < 2 || 4*(n-2) < arg {
					t.Fatalf("%s: marker of %d bytes in %d words", path, arg, n)
				}
				text := make([]byte, 4*(n-2))
				for k := 0; k < n-2; k++ {
					le.PutUint32(text[4*k:], uint32(word(i+3+k)))
				}
				recs = append(recs, trRec{TS: word(i+1) | word(i+2)<<32, Type: 5, Text: string(text[:arg])})
			case 6: // STACK: u64 time, arg addresses
				if n != 2+2*arg {
					t.Fatalf("%s: stack of %d addresses in %d words", path, arg, n)
				}
				r := trRec{TS: word(i+1) | word(i+2)<<32, Type: 6}
				for k := 0; k < arg; k++ {
					r.PCs = append(r.PCs, word(i+3+2*k)|word(i+4+2*k)<<32)
				}
				recs = append(recs, r)
			}
			i += 1 + n
		default:
			t.Fatalf("%s: block seq %d: reserved event type %d", path, le.Uint64(c[24:]), typ)
		}
	}
	if nev != le.Uint32(c[48:]) {
		t.Fatalf("%s: block seq %d: %d events, header says %d", path, le.Uint64(c[24:]), nev, le.Uint32(c[48:]))
	}
	return recs
}

// trSyms maps run-time addresses of the main program to symbol names.
type trSyms struct {
	bias uint64
	syms []elf.Symbol
}

func trSymbols(t *testing.T, tr *trTrace, prog string) *trSyms {
	t.Helper()
	var bias uint64
	found := false
	for _, m := range tr.Maps {
		if m.Flags&1 != 0 {
			bias, found = m.Bias, true
			if m.Path != prog {
				t.Errorf("main map path %q, want %q", m.Path, prog)
			}
			if len(m.BuildID) == 0 {
				t.Errorf("main map has no build-id")
			}
		}
	}
	if !found {
		t.Fatalf("no main-program entry in the memory map: %+v", tr.Maps)
	}
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var fn []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			fn = append(fn, s)
		}
	}
	return &trSyms{bias: bias, syms: fn}
}

func (s *trSyms) name(addr uint64) string {
	a := addr - s.bias
	for _, sym := range s.syms {
		if a >= sym.Value && a < sym.Value+sym.Size {
			return sym.Name
		}
	}
	return fmt.Sprintf("%#x", addr)
}

// stack names a STACK record's addresses as the readers do: return addresses by their
// call, a traced function's site (bit 63) only when the return address before it does
// not name it already.
func (s *trSyms) stack(pcs []uint64) []string {
	var names []string
	prev := ""
	for k, pc := range pcs {
		entry := pc&(1<<63) != 0
		pc &^= 1 << 63
		if k > 0 && !entry {
			pc-- // a return address: its call
		}
		name := s.name(pc)
		if entry && name == prev {
			continue
		}
		names = append(names, name)
		prev = ""
		if k > 0 && !entry {
			prev = name
		}
	}
	return names
}

// trGraph checks a thread's graph stream: time never goes back, every exit closes the most
// recent open entry (same ip, aux = the entry's time). It returns the entries per function,
// the exits flagged unwound per function and the frames left open at the end.
func trGraph(t *testing.T, th *trThread, s *trSyms) (entries, unwound map[string]int, open int) {
	t.Helper()
	entries, unwound = map[string]int{}, map[string]int{}
	type fr struct{ ip, ts uint64 }
	var stack []fr
	var last uint64
	for i, r := range th.Recs {
		if r.TS < last && r.Flags&2 == 0 {
			t.Errorf("tid %d rec %d: time goes back", th.TID, i)
		}
		if r.Flags&2 == 0 {
			last = r.TS
		}
		switch r.Type {
		case 5, 6: // a marker, a stack trace
		case 2:
			if int(r.Depth) < len(stack) {
				t.Errorf("tid %d rec %d: entry depth %d below %d open frames", th.TID, i, r.Depth, len(stack))
			}
			stack = append(stack, fr{r.IP, r.TS})
			if r.Flags&2 == 0 { // not one entered in a gap
				entries[s.name(r.IP)]++
			}
		case 3:
			if len(stack) == 0 {
				t.Fatalf("tid %d rec %d: exit of %s without an entry", th.TID, i, s.name(r.IP))
			}
			top := stack[len(stack)-1]
			if top.ip != r.IP || top.ts != r.Aux {
				t.Fatalf("tid %d rec %d: exit of %s closes %s", th.TID, i, s.name(r.IP), s.name(top.ip))
			}
			if r.Flags&1 != 0 {
				unwound[s.name(r.IP)]++
			}
			stack = stack[:len(stack)-1]
		default:
			t.Errorf("tid %d rec %d: type %d in a graph trace", th.TID, i, r.Type)
		}
	}
	return entries, unwound, len(stack)
}

func trCheckComplete(t *testing.T, tr *trTrace, reason uint32) {
	t.Helper()
	if tr.Flags&1 == 0 || tr.Reason != reason {
		t.Errorf("flags %#x reason %d, want COMPLETE and reason %d", tr.Flags, tr.Reason, reason)
	}
	if tr.NsPerTick <= 0 || tr.NsPerTick > 10 {
		t.Errorf("ns_per_tick %v", tr.NsPerTick)
	}
}

// ---- tests ----

func TestTracerFunctionFib(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	plain, _ := trRun(t, dir, prog, nil, "20")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function"}, "20")
	if out != plain || ws.ExitStatus() != 0 {
		t.Fatalf("traced output %q (status %v), plain %q", out, ws, plain)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat")) // the default output
	trCheckComplete(t, tr, 1)
	if len(tr.Cmdline) != 2 || tr.Cmdline[1] != "20" {
		t.Errorf("cmdline %q", tr.Cmdline)
	}
	s := trSymbols(t, tr, prog)
	if len(tr.Threads) != 1 {
		t.Fatalf("%d threads", len(tr.Threads))
	}
	counts := map[string]int{}
	for _, r := range tr.Threads[0].Recs {
		if r.Type != 1 {
			t.Fatalf("record type %d in a function trace", r.Type)
		}
		counts[s.name(r.IP)]++
		if s.name(r.IP) == "fib" {
			if caller := s.name(r.Aux); caller != "fib" && caller != "main" {
				t.Errorf("fib called from %s", caller)
			}
		}
	}
	if counts["fib"] != 21891 || counts["main"] != 1 {
		t.Errorf("counts %v, want fib 21891 and main 1", counts)
	}
}

func TestTracerMapsDlopen(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_dlopen.c")
	out, _ := trRun(t, dir, prog, []string{"FTRACE_TRACER=function"})
	if out != "loaded=1\n" {
		t.Fatalf("output %q", out)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	var late []string
	for _, m := range tr.Maps {
		if m.Flags&4 != 0 {
			late = append(late, filepath.Base(m.Path))
		}
		if m.Flags&2 == 0 && (len(m.BuildID) == 0 || !filepath.IsAbs(m.Path)) {
			t.Errorf("map entry %+v: no build-id or relative path", m)
		}
	}
	if len(late) != 1 || !(strings.HasPrefix(late[0], "libz.so") || strings.HasPrefix(late[0], "libm.so")) {
		t.Errorf("objects loaded after start-up: %v", late)
	}

	// loaded by a relative name, then the program changes directory: the map still
	// names the file absolutely (the trace is read from elsewhere)
	src := filepath.Join(dir, "rel.c")
	if err := os.WriteFile(src, []byte("int rel_answer(void) { return 42; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "librel.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	trace := filepath.Join(dir, "rel.dat")
	if out, _ := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=" + trace}, "./librel.so"); out != "loaded=1\n" {
		t.Fatalf("output %q", out)
	}
	want, err := filepath.EvalSymlinks(lib)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range trRead(t, trace).Maps {
		if m.Flags&4 != 0 {
			paths = append(paths, m.Path)
		}
	}
	if len(paths) != 1 || paths[0] != want {
		t.Errorf("object loaded as ./librel.so recorded as %q, want [%s]", paths, want)
	}
}

func TestTracerGraphFib(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	out, _ := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=fib.%p.dat"}, "20")
	if out != "fib(20) = 6765\n" {
		t.Fatalf("output %q", out)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "fib.*.dat"))
	if len(m) != 1 {
		t.Fatalf("trace files %v", m)
	}
	// format v2: a graph call is 12 bytes (ENTRY 8 + EXIT 4) plus block headers, and the
	// file is written as it grows, with no pre-sized (sparse) region
	var st syscall.Stat_t
	if err := syscall.Stat(m[0], &st); err != nil {
		t.Fatal(err)
	}
	if used := st.Blocks * 512; st.Size > 21892*12+16<<10 || float64(st.Size) < 0.9*float64(used) {
		t.Errorf("%s: size %d, %d bytes allocated: want ≤ %d bytes, not sparse", m[0], st.Size, used, 21892*12+16<<10)
	}
	tr := trRead(t, m[0])
	if fmt.Sprintf("fib.%d.dat", tr.PID) != filepath.Base(m[0]) {
		t.Errorf("%s: pid %d", m[0], tr.PID)
	}
	trCheckComplete(t, tr, 1)
	s := trSymbols(t, tr, prog)
	ent, unw, open := trGraph(t, tr.Threads[0], s)
	if ent["fib"] != 21891 || ent["main"] != 1 || len(unw) != 0 || open != 0 {
		t.Errorf("entries %v unwound %v open %d", ent, unw, open)
	}
	// the tracer's own writing is not on the traced thread any more: nothing to record
	if n := ent[testenv.TraceFlush]; n != 0 {
		t.Errorf("%d buffer flushes recorded on the traced thread", n)
	}
	// durations: main encloses everything
	recs := tr.Threads[0].Recs
	last := recs[len(recs)-1]
	if s.name(last.IP) != "main" || last.Type != 3 || last.TS-last.Aux == 0 {
		t.Errorf("last record %+v", last)
	}
	// main's own time is a printf: the thread's buffer setup at its first event (ms on a
	// VM) is not charged to it, so it is below the time of the fib(20) it calls.
	var fibDur uint64
	for _, r := range recs {
		if r.Type == 3 && r.Depth == 1 {
			fibDur += r.TS - r.Aux
		}
	}
	if mainSelf := last.TS - last.Aux - fibDur; fibDur == 0 || mainSelf >= fibDur {
		t.Errorf("main's self time %d ticks, fib(20) %d ticks: setup charged to main?", mainSelf, fibDur)
	}
}

func TestTracerGraphDepthFilter(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_GRAPH_DEPTH=3"}, "10")
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	s := trSymbols(t, tr, prog)
	ent, _, open := trGraph(t, tr.Threads[0], s)
	// depth 0 main, 1 fib(10), 2 fib(9) fib(8): 1+1+2 frames recorded; fib(10) makes 177 calls
	if ent["main"] != 1 || ent["fib"] != 3 || open != 0 {
		t.Errorf("entries %v open %d", ent, open)
	}
	if got := tr.Threads[0].LostDepth; got != 177-3 {
		t.Errorf("lost_depth %d, want %d", got, 177-3)
	}

	trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_FILTER=main", "FTRACE_OUTPUT=f.dat"}, "10")
	tr = trRead(t, filepath.Join(dir, "f.dat"))
	ent, _, _ = trGraph(t, tr.Threads[0], trSymbols(t, tr, prog))
	if len(ent) != 1 || ent["main"] != 1 {
		t.Errorf("filter main: entries %v", ent)
	}

	trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_NOTRACE=fi?", "FTRACE_OUTPUT=n.dat"}, "10")
	tr = trRead(t, filepath.Join(dir, "n.dat"))
	if s, n := trSymbols(t, tr, prog), len(tr.Threads[0].Recs); n != 1 || s.name(tr.Threads[0].Recs[0].IP) != "main" {
		t.Errorf("notrace fi?: %d records", n)
	}
}

// Start-up filters: a glob that matches nothing is named once on stderr and left out; a
// filter none of whose globs matches traces nothing (not everything).
func TestTracerFilterNoMatch(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	for _, c := range []struct {
		filter, notrace string
		want            map[string]int // entries
		warnings        []string       // each exactly once
	}{
		{"nosuch_fn,fib", "", map[string]int{"fib": 177},
			[]string{"ftkit: filter 'nosuch_fn': matches no function"}},
		{"nosuch*", "", map[string]int{},
			[]string{"ftkit: filter 'nosuch*': matches no function", "ftkit: no function matches the filter 'nosuch*': nothing is traced"}},
		{"nosuch*,!fib", "", map[string]int{},
			[]string{"ftkit: filter 'nosuch*': matches no function", "nothing is traced"}},
		{"", "nosuch_fn, fi?", map[string]int{"main": 1},
			[]string{"ftkit: notrace 'nosuch_fn': matches no function"}},
	} {
		cmd := exec.Command(prog, "10")
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=nm.dat",
			"FTRACE_FILTER="+c.filter, "FTRACE_NOTRACE="+c.notrace)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err != nil || string(out) != "fib(10) = 55\n" {
			t.Fatalf("filter %q: %v, output %q", c.filter, err, out)
		}
		for _, w := range c.warnings {
			if n := strings.Count(stderr.String(), w); n != 1 {
				t.Errorf("filter %q notrace %q: %q said %d times in:\n%s", c.filter, c.notrace, w, n, stderr.String())
			}
		}
		tr := trRead(t, filepath.Join(dir, "nm.dat"))
		ent := map[string]int{}
		for _, th := range tr.Threads {
			e, _, open := trGraph(t, th, trSymbols(t, tr, prog))
			for k, v := range e {
				ent[k] += v
			}
			if open != 0 {
				t.Errorf("filter %q: %d frames open", c.filter, open)
			}
		}
		if fmt.Sprint(ent) != fmt.Sprint(c.want) {
			t.Errorf("filter %q notrace %q: entries %v, want %v", c.filter, c.notrace, ent, c.want)
		}
	}
}

// Traced code at exit (trace_late.cc): a static's destructor, run by exit() before the
// runtime finalises in its own ELF destructor, is recorded; code and a thread's end after
// finalisation (an ELF destructor that runs after the runtime's) do not change the
// finalised file, even when they record more than a staging buffer holds.
func TestTracerAfterFinish(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_late.cc")
	for _, tracer := range []string{"function", "function_graph"} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "LATE_N=40000", "VERY_LATE_N=40000", "WAITER=1"})
		if out != "main 1\nfinal file kept: 1\n" || ws.ExitStatus() != 0 {
			t.Fatalf("%s: output %q status %v", tracer, out, ws)
		}
		tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
		trCheckComplete(t, tr, 1)
		s := trSymbols(t, tr, prog)
		counts := map[string]int{}
		for _, th := range tr.Threads {
			for _, r := range th.Recs {
				counts[fmt.Sprintf("%s/%d", s.name(r.IP), r.Type)]++
			}
			if th.Lost != 0 || th.Flags&2 != 0 {
				t.Errorf("%s: thread %d lost %d flags %#x after finalisation", tracer, th.TID, th.Lost, th.Flags)
			}
		}
		// main's call, the waiter's and the static destructor's 40000; not very_late's 40000
		leaf, kind := counts["_Z4leafi/1"], "calls"
		if tracer == "function_graph" {
			leaf, kind = counts["_Z4leafi/2"], "entries"
			if counts["_Z4leafi/3"] != leaf {
				t.Errorf("%s: leaf %d entries, %d exits", tracer, leaf, counts["_Z4leafi/3"])
			}
		}
		if leaf != 40002 || counts["main/1"]+counts["main/2"] != 1 {
			t.Errorf("%s: leaf %d %s, want 40002 (main's, the waiter's and the static destructor's; not those after finalisation): %v", tracer, leaf, kind, counts)
		}
	}
}

// The runtime keeps its descriptors out of the low numbers and the program's errno intact,
// even when writing the trace fails (it then stops recording once, with one message).
func TestTracerProgramFds(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_errno.c")
	want := "first fd 3\nsum 300000 errno changed 0\n"
	for _, tracer := range []string{"", "function", "function_graph"} {
		cmd := exec.Command(prog)
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER="+tracer)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || string(out) != want {
			t.Errorf("tracer %q: %v, output %q, want %q\nstderr:\n%s", tracer, err, out, want, stderr.String())
		}
		if n := strings.Count(stderr.String(), "cannot write the trace file, events are lost"); tracer != "" && n != 1 {
			t.Errorf("tracer %q: write failure reported %d times:\n%s", tracer, n, stderr.String())
		}
	}
}

// exec finalises the trace (reason 5, exec) with the calls made before it; a failed exec
// leaves the process running untraced.
func TestTracerExec(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_exec.c")
	for _, arg := range []string{"", "fail"} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=x%p.dat"}, arg)
		want := ""
		if arg == "fail" {
			want = "exec failed, sink 20\n"
		}
		if out != want || ws.ExitStatus() != 0 {
			t.Fatalf("exec %q: output %q status %v", arg, out, ws)
		}
		m, _ := filepath.Glob(filepath.Join(dir, "x*.dat*"))
		if len(m) != 1 || strings.HasSuffix(m[0], ".part") {
			t.Fatalf("exec %q: trace files %v, want one finalised", arg, m)
		}
		tr := trRead(t, m[0])
		trCheckComplete(t, tr, 5)
		s := trSymbols(t, tr, prog)
		n := 0
		for _, th := range tr.Threads {
			for _, r := range th.Recs {
				if s.name(r.IP) == "work" {
					n++
				}
			}
		}
		if n != 5 {
			t.Errorf("exec %q: %d calls of work recorded, want the 5 before the exec", arg, n)
		}
		os.Remove(m[0])
	}
}

// An image exec'd by a traced image of the same pid gets its own file, <output>.exec<n>:
// it replaced the trace finalised at the exec (the last image's file won).  The
// variable that tells it is gone from its environment.
func TestTracerExecSelf(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_exec.c")
	for _, tracer := range []string{"function", "function_graph"} {
		sub := t.TempDir()
		out, ws := trRun(t, sub, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=x%p.dat"}, "self")
		if out != "last: FTRACE_EXEC unset\n" || ws.ExitStatus() != 0 {
			t.Fatalf("%s: output %q status %v", tracer, out, ws)
		}
		m, _ := filepath.Glob(filepath.Join(sub, "x*"))
		if len(m) != 3 {
			t.Fatalf("%s: trace files %v, want x<pid>.dat, .exec1, .exec2", tracer, m)
		}
		typ := uint16(1)
		if tracer == "function_graph" {
			typ = 2
		}
		var pid uint32
		for i, c := range []struct {
			suffix string
			reason uint32
			work   int
		}{{"", 5, 5}, {".exec1", 5, 4}, {".exec2", 1, 3}} {
			tr := trRead(t, m[0]+c.suffix)
			trCheckComplete(t, tr, c.reason)
			if i == 0 {
				pid = tr.PID
			}
			if tr.PID != pid {
				t.Errorf("%s%s: pid %d, want %d", m[0], c.suffix, tr.PID, pid)
			}
			n := 0
			s := trSymbols(t, tr, prog)
			for _, th := range tr.Threads {
				for _, r := range th.Recs {
					if r.Type == typ && s.name(r.IP) == "work" {
						n++
					}
				}
			}
			if n != c.work {
				t.Errorf("%s%s: %d calls of work, want %d", m[0], c.suffix, n, c.work)
			}
		}
	}
}

// A fork child that execs a traced program (a shell running a command) with the same
// FTRACE_OUTPUT: the new image writes <output>.<pid>.exec1, beside the child's trace up to
// the exec (<output>.<pid>), and never replaces the parent's <output> (the dash trial lost
// the inner program's trace that way).
func TestTracerForkExec(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_exec.c")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=f.dat"}, "forkexec")
	if out != "last: FTRACE_EXEC unset\n" || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v", out, ws)
	}
	kids, _ := filepath.Glob(filepath.Join(dir, "f.dat.*"))
	sort.Strings(kids)
	if len(kids) != 2 || kids[1] != kids[0]+".exec1" {
		t.Fatalf("child traces %v, want f.dat.<pid> and f.dat.<pid>.exec1", kids)
	}
	for _, c := range []struct {
		path   string
		reason uint32
		work   int
	}{{filepath.Join(dir, "f.dat"), 1, 7}, {kids[0], 5, 0}, {kids[1], 1, 3}} {
		n, tr := countWork(t, c.path, prog)
		trCheckComplete(t, tr, c.reason)
		if n != c.work {
			t.Errorf("%s: %d calls of work, want %d", c.path, n, c.work)
		}
	}
}

// countWork counts the calls of work (function tracer) in the trace at path.
func countWork(t *testing.T, path, prog string) (int, *trTrace) {
	t.Helper()
	tr := trRead(t, path)
	n := 0
	s := trSymbols(t, tr, prog)
	for _, th := range tr.Threads {
		for _, r := range th.Recs {
			if r.Type == 1 && s.name(r.IP) == "work" {
				n++
			}
		}
	}
	return n, tr
}

// Traces of a chain: an image exec'd by the first forks a child that execs: every image
// keeps its own file, and the first image's is not replaced (review), nor is the parent's
// by a child run through system(), which finishes first and no exec naming reaches (it
// moves to <output>.<pid>).
func TestTracerExecChain(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_exec.c")
	for _, c := range []struct {
		mode  string
		files []string // relative to c.mode.dat, the child's pid as P
		work  []int
	}{
		{"chain", []string{"", ".exec1", ".exec1.P", ".exec1.P.exec1"}, []int{5, 7, 0, 3}},
		{"system", []string{"", ".P"}, []int{7, 3}},
	} {
		sub := filepath.Join(dir, c.mode)
		os.Mkdir(sub, 0o755)
		out, ws := trRun(t, sub, prog, []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=" + c.mode + ".dat"}, c.mode)
		if out != "last: FTRACE_EXEC unset\n" || ws.ExitStatus() != 0 {
			t.Fatalf("%s: output %q status %v", c.mode, out, ws)
		}
		all, _ := filepath.Glob(filepath.Join(sub, c.mode+".dat*"))
		if len(all) != len(c.files) {
			t.Fatalf("%s: traces %v, want %d", c.mode, all, len(c.files))
		}
		pid := ""
		for _, f := range all {
			if m := regexp.MustCompile(`\.dat(\.exec1)?\.([0-9]+)$`).FindStringSubmatch(f); m != nil {
				pid = m[2]
			}
		}
		for i, suffix := range c.files {
			path := filepath.Join(sub, c.mode+".dat"+strings.ReplaceAll(suffix, "P", pid))
			if n, _ := countWork(t, path, prog); n != c.work[i] {
				t.Errorf("%s: %s: %d calls of work, want %d", c.mode, path, n, c.work[i])
			}
		}
	}
}

// The same from a vfork child (dash runs commands so): the new image writes
// <output>.<pid>, the name a fork child would have had (the vfork child traces nothing).
func TestTracerVforkExec(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_exec.c")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=v.dat"}, "vforkexec")
	if out != "last: FTRACE_EXEC unset\n" || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v", out, ws)
	}
	kids, _ := filepath.Glob(filepath.Join(dir, "v.dat.*"))
	if len(kids) != 1 || !regexp.MustCompile(`/v\.dat\.[0-9]+$`).MatchString(kids[0]) {
		t.Fatalf("child traces %v, want v.dat.<pid>", kids)
	}
	for _, c := range []struct {
		path         string
		reason, work int
	}{{filepath.Join(dir, "v.dat"), 1, 7}, {kids[0], 1, 3}} {
		n, tr := countWork(t, c.path, prog)
		trCheckComplete(t, tr, uint32(c.reason))
		if n != c.work {
			t.Errorf("%s: %d calls of work, want %d", c.path, n, c.work)
		}
	}
}

// Signals that arrive while the program is inside fork() (a shell's SIGCHLD while it forks
// the next child) run their handlers after the fork window, recorded: nothing is lost (the
// dash trial lost 1-4 events a run, counted as "no buffer").
func TestTracerForkSignals(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_forksig.c")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=s.dat", "FTRACE_NO_LOSS=1"}, "400")
	var handled int
	if _, err := fmt.Sscanf(out, "handled %d", &handled); err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v", out, ws)
	}
	tr := trRead(t, filepath.Join(dir, "s.dat"))
	trCheckComplete(t, tr, 1)
	s := trSymbols(t, tr, prog)
	n := 0
	for _, th := range tr.Threads {
		if th.Lost != 0 {
			t.Errorf("thread %d: %d events lost", th.TID, th.Lost)
		}
		for _, r := range th.Recs {
			if r.Type == 2 && s.name(r.IP) == "on_child" {
				n++
			}
		}
	}
	if n != handled {
		t.Errorf("on_child entered %d times in the trace, the handler ran %d times", n, handled)
	}
}

// FTRACE_SIZE with FTRACE_NO_LOSS: threads waiting for a free block must not hold up the
// writer stopping the session (it waits for their callbacks to end: the program hung,
// found by review). Each run ends, finalised at the size.
func TestTracerLimitNoLoss(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_limitthreads.c")
	// the hang took about one run in eight
	for i := 0; i < 10; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, prog, "1")
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=l.dat", "FTRACE_NO_LOSS=1",
			"FTRACE_SIZE=1M", "FTRACE_BUFFER_KB=256", "FTRACE_CONTROL=0")
		out, err := cmd.Output()
		cancel()
		if err != nil || string(out) != "done\n" {
			t.Fatalf("run %d: %v, output %q (a hang ends in the timeout)", i, err, out)
		}
		trCheckComplete(t, trRead(t, filepath.Join(dir, "l.dat")), 6)
	}
}

// Streaming with the smallest per-thread buffer (4 blocks): every call is either recorded
// or counted lost, exactly; with FTRACE_NO_LOSS=1 none is lost.
func TestTracerBufferFull(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	for _, noLoss := range []string{"0", "1"} {
		// +args: a value record with each call; one dropped is not a lost event
		for _, variant := range []string{"function_graph", "function", "function+args", "function_graph+args"} {
			tracer, args := strings.CutSuffix(variant, "+args")
			out := variant + noLoss + ".dat"
			env := []string{"FTRACE_TRACER=" + tracer, "FTRACE_BUFFER_KB=64",
				"FTRACE_NO_LOSS=" + noLoss, "FTRACE_OUTPUT=" + out}
			if args {
				env = append(env, "FTRACE_ARGS=fib@arg1/i32", "FTRACE_RETVAL=fib@retval/i32")
			}
			trRun(t, dir, prog, env, "25")
			tr := trRead(t, filepath.Join(dir, out))
			trCheckComplete(t, tr, 1)
			th := tr.Threads[0]
			// fib(25): 242785 calls of fib, and main: one event each, or two (entry
			// and exit); an entry dropped takes its exit along, and both count as lost
			want, got := uint64(242786), uint64(0)
			for _, r := range th.Recs {
				if r.Type >= 1 && r.Type <= 3 && r.Flags&2 == 0 { // not made up from a block's header
					got++
				}
			}
			if tracer == "function_graph" {
				want *= 2
				if _, _, open := trGraph(t, th, trSymbols(t, tr, prog)); open != 0 && th.Lost == 0 {
					t.Errorf("%s: %d frames open at the end", out, open)
				}
			}
			if got+th.Lost != want || (th.Lost != 0) != (th.Flags&2 != 0) || (th.Lost != 0) != (tr.Flags&8 != 0) {
				t.Errorf("%s: recorded %d + lost %d events, want %d; thread flags %#x file flags %#x",
					out, got, th.Lost, want, th.Flags, tr.Flags)
			}
			if noLoss == "1" && th.Lost != 0 {
				t.Errorf("%s: %d events lost with FTRACE_NO_LOSS=1", out, th.Lost)
			}
		}
	}
}

// The flight recorder keeps the newest blocks of each thread: a ring of 4 blocks holds the
// end of a run whose graph trace takes about 28 of them (the oldest is not written: the
// thread may be overwriting it), and what it holds is the same as
// the end of a full streaming trace of the same run, its first frames (whose entries were
// overwritten) carried in the first block's header.
func TestTracerRing(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=full.dat"}, "24")
	trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=ring.dat", "FTRACE_RING=256k"}, "24")
	full, ring := trRead(t, filepath.Join(dir, "full.dat")), trRead(t, filepath.Join(dir, "ring.dat"))
	trCheckComplete(t, ring, 1)
	d, err := os.ReadFile(filepath.Join(dir, "ring.dat"))
	if err != nil {
		t.Fatal(err)
	}
	if mode, rb := binary.LittleEndian.Uint32(d[116:]), binary.LittleEndian.Uint64(d[120:]); mode != 1 || rb != 256<<10 {
		t.Errorf("ring header: mode %d ring_bytes %d", mode, rb)
	}
	// a ring below the 4-block minimum is raised to it, and the program is told once
	small := exec.Command(prog, "10")
	small.Dir = dir
	small.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=small.dat", "FTRACE_RING=100k")
	if b, err := small.CombinedOutput(); err != nil || strings.Count(string(b), "KiB kept: 256\n") != 1 {
		t.Errorf("FTRACE_RING=100k: %v, %q", err, b)
	}
	f, r := full.Threads[0].Recs, ring.Threads[0].Recs
	for len(r) > 0 && r[0].Flags&2 != 0 {
		r = r[1:] // the frames open at the ring's start, from its first block's header
	}
	if len(r) < 2*65536/6 || len(r) >= len(f)/4 {
		t.Fatalf("ring holds %d of %d events", len(r), len(f))
	}
	tail := f[len(f)-len(r):]
	fb, rb := trSymbols(t, full, prog).bias, trSymbols(t, ring, prog).bias
	for i := range r {
		if r[i].Type != tail[i].Type || r[i].IP-rb != tail[i].IP-fb || r[i].Depth != tail[i].Depth {
			t.Fatalf("ring event %d: %+v, the full trace has %+v", i, r[i], tail[i])
		}
	}
	// the exits of frames entered before the ring's first event close them (main's last)
	last := r[len(r)-1]
	if last.Type != 3 || last.Depth != 0 || last.Aux == 0 || last.Aux > r[0].TS {
		t.Errorf("last event %+v: main's exit with its entry time from the block header", last)
	}
}

// The control-flow cases: output unchanged, graphs balanced, frames left without a return
// closed as unwound.
func TestTracerGraphControlFlow(t *testing.T) {
	cases := []struct {
		src     string
		args    []string
		threads int
		unwound map[string]int // per function, all threads
		partial bool           // only the functions in unwound are checked
		entries map[string]int
	}{
		{src: "trace_longjmp.c", threads: 1,
			// c3 jumps for odd i (5x): c3 c2 c1 unwound; the SIGUSR1 handler siglongjmps (3x)
			unwound: map[string]int{"c1": 5, "c2": 5, "c3": 5, "s1": 3, "s2": 3, "on_usr1": 3},
			entries: map[string]int{"c1": 10, "after": 13, "run": 1}},
		{src: "trace_ljret.c", threads: 1,
			// 100 jumps from 6 frames of g, noticed at protected_call's return
			unwound: map[string]int{"g": 600},
			entries: map[string]int{"g": 600, "protected_call": 100, "outer": 100}},
		{src: "trace_cxx.cc", threads: 1,
			// 4 throws: thrower and mid unwound to rethrower's catch, rethrower to outer's;
			// 2 more from thrower to capture's catch, rethrown by std::rethrow_exception
			// from replay to replay_outer's catch
			unwound: map[string]int{"_Z7throweri": 4 + 2, "_Z3midi": 4, "_Z9rethroweri": 4,
				"_Z6replayNSt15__exception_ptr13exception_ptrE": 2},
			entries: map[string]int{"_Z5outeri": 10, "_Z9lib_throwv": 1, "_Z12replay_outeri": 6}},
		{src: "trace_cxx.cc", args: []string{"future"}, threads: 5, partial: true,
			// worker throws in 2 of 4 async threads; std::future::get rethrows each in main
			// (std::rethrow_exception) through getter to future_get's catch
			unwound: map[string]int{"_Z6workeri": 2, "_Z10future_geti": 0, "_Z6getterRSt6futureIiE": 2},
			entries: map[string]int{"_Z10future_geti": 4, "_Z6workeri": 4}},
		{src: "trace_threads.c", threads: 5,
			// worker 0 leaves with pthread_exit from deep3
			unwound: map[string]int{"deep1": 1, "deep2": 1, "deep3": 1, "worker": 1},
			entries: map[string]int{"work": 1000 + 2000 + 3000 + 4000 + 1, "worker": 4}},
		{src: "trace_misc.c", args: []string{"exit", "10000"}, threads: 1,
			unwound: map[string]int{},
			entries: map[string]int{"on_usr2": 1, "tail_a": 1, "tail_b": 1, "forker": 1}},
	}
	flows := []struct {
		name  string
		build func(t *testing.T, dir, src string) string
	}{{"real", trBuild}, {"mock", trBuildMock}, {"mock-asan-ubsan", trBuildMockASan}}
	for _, fl := range flows {
		for _, tc := range cases {
			fl, tc := fl, tc
			t.Run(fl.name+"/"+tc.src, func(t *testing.T) {
				dir := t.TempDir()
				prog := fl.build(t, dir, tc.src)
				plain, pws := trRun(t, dir, prog, nil, tc.args...)
				out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph"}, tc.args...)
				if out != plain || ws != pws {
					t.Fatalf("traced: %q %v; plain: %q %v", out, ws, plain, pws)
				}
				tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
				trCheckComplete(t, tr, 1)
				s := trSymbols(t, tr, prog)
				if len(tr.Threads) != tc.threads {
					t.Fatalf("%d threads, want %d", len(tr.Threads), tc.threads)
				}
				allEnt, allUnw := map[string]int{}, map[string]int{}
				for _, th := range tr.Threads {
					// a thread's times never go back: frames left by a longjmp are
					// closed at their parent's exit, not after it (lua trial)
					for i := 1; i < len(th.Recs); i++ {
						if th.Recs[i].TS < th.Recs[i-1].TS {
							t.Errorf("tid %d: record %d (type %d flags %d, %s) at %d, before the one ahead at %d",
								th.TID, i, th.Recs[i].Type, th.Recs[i].Flags, s.name(th.Recs[i].IP), th.Recs[i].TS, th.Recs[i-1].TS)
							break
						}
					}
					ent, unw, open := trGraph(t, th, s)
					if open != 0 {
						t.Errorf("tid %d: %d frames open at the end", th.TID, open)
					}
					for k, v := range ent {
						allEnt[k] += v
					}
					for k, v := range unw {
						allUnw[k] += v
					}
				}
				for k, v := range tc.entries {
					if allEnt[k] != v {
						t.Errorf("entries of %s: %d, want %d", k, allEnt[k], v)
					}
				}
				if tc.partial {
					for k, v := range tc.unwound {
						if allUnw[k] != v {
							t.Errorf("unwound %s: %d, want %d (all: %v)", k, allUnw[k], v, allUnw)
						}
					}
				} else if fmt.Sprint(allUnw) != fmt.Sprint(tc.unwound) {
					t.Errorf("unwound %v, want %v", allUnw, tc.unwound)
				}
				switch tc.src {
				case "trace_threads.c":
					names := map[string]bool{}
					for _, th := range tr.Threads {
						names[th.Name] = true
						if th.TID != tr.PID && th.Flags&1 == 0 {
							t.Errorf("thread %d not marked exited", th.TID)
						}
					}
					for i := 0; i < 4; i++ {
						if !names[fmt.Sprintf("worker-%d", i)] {
							t.Errorf("thread names %v lack worker-%d", names, i)
						}
					}
				case "trace_misc.c":
					th := tr.Threads[0]
					// 10001 recursive calls: the shadow stack holds 4096 frames
					if uint64(allEnt["recurse"])+th.LostDepth != 10001 || th.LostDepth == 0 {
						t.Errorf("recurse: %d recorded + %d lost_depth, want 10001", allEnt["recurse"], th.LostDepth)
					}
					// the fork child wrote its own file with its own calls
					m, _ := filepath.Glob(filepath.Join(dir, "ftrace.dat.*"))
					if len(m) != 1 {
						t.Fatalf("child trace files: %v", m)
					}
					ct := trRead(t, m[0])
					trCheckComplete(t, ct, 1)
					if ct.PID == tr.PID || len(ct.Threads) != 1 {
						t.Fatalf("child trace pid %d threads %d", ct.PID, len(ct.Threads))
					}
					ent, _, open := trGraph(t, ct.Threads[0], s)
					if ent["leaf"] != 2 || len(ent) != 1 || open != 0 {
						t.Errorf("child entries %v open %d", ent, open)
					}
				}
			})
		}
	}
}

// Abnormal endings: fatal signals finalise the file (flag, signal number) and the process
// still dies of the signal; _exit (interposed) finalises it too. The program's own
// breakpoint and SIGTRAP (googletest's --gtest_break_on_failure) and SIGSYS left the trace
// a .part with nothing of a short run in it.
func TestTracerAbnormalExit(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_misc.c")
	for _, tc := range []struct {
		how string
		sig syscall.Signal
	}{{"segv", syscall.SIGSEGV}, {"abort", syscall.SIGABRT}, {"int3", syscall.SIGTRAP},
		{"sigtrap", syscall.SIGTRAP}, {"sigsys", syscall.SIGSYS}, {"_exit", 0}} {
		out := "t-" + strings.TrimPrefix(tc.how, "_") + ".dat"
		_, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=" + out}, tc.how, "100")
		tr := trRead(t, filepath.Join(dir, out))
		if tc.sig != 0 {
			if !ws.Signaled() || ws.Signal() != tc.sig {
				t.Errorf("%s: status %v, want death by %v", tc.how, ws, tc.sig)
			}
			if tr.Flags&3 != 3 || tr.Signal != uint32(tc.sig) || tr.Reason != 2 {
				t.Errorf("%s: flags %#x signal %d reason %d", tc.how, tr.Flags, tr.Signal, tr.Reason)
			}
		} else {
			if ws.ExitStatus() != 5 {
				t.Errorf("_exit: status %v", ws)
			}
			trCheckComplete(t, tr, 1)
		}
		s := trSymbols(t, tr, prog)
		ent, _, open := trGraph(t, tr.Threads[0], s)
		// main and crash were running
		if open != 2 || ent["crash"] != 1 || ent["recurse"] != 101 {
			t.Errorf("%s: entries %v open %d", tc.how, ent, open)
		}
	}
}

// SIGKILL: nothing runs; the live file <output>.<pid>.part keeps every event the writer
// thread flushed (at least every 100 ms), with a valid header.
func TestTracerKilled(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	cmd := exec.Command(prog)
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_CONTROL=0")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	fmt.Fprintf(stdin, "call 20000\n")
	for _, want := range []string{"ready\n", "done\n"} {
		if line, err := rd.ReadString('\n'); err != nil || line != want {
			t.Fatalf("program said %q (%v), want %q", line, err, want)
		}
	}
	// the writer flushes what the thread has recorded at least every 100 ms
	time.Sleep(400 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	m, _ := filepath.Glob(filepath.Join(dir, "ftrace.dat.*.part"))
	if len(m) != 1 {
		t.Fatalf("part files %v", m)
	}
	tr := trRead(t, m[0])
	if tr.Flags&1 != 0 || tr.Reason != 0 || len(tr.Threads) != 1 {
		t.Fatalf("flags %#x reason %d threads %d", tr.Flags, tr.Reason, len(tr.Threads))
	}
	s := trSymbols(t, tr, prog)
	n := len(tr.Threads[0].Recs)
	ticks := 0
	for _, r := range tr.Threads[0].Recs {
		if s.name(r.IP) == "tick" {
			ticks++
		}
	}
	// 20002 events (main, call, 20000 ticks), all flushed before the kill
	if n != 20002 || ticks != 20000 {
		t.Errorf("%d records (%d ticks), want 20002 (20000)", n, ticks)
	}
}

// A thread that records a little at a time: the writer flushes its block every 100 ms,
// the first time as a PARTIAL chunk, then only what is new as MORE chunks; no byte of
// event data is in the file twice, and a SIGKILL keeps every flushed event.
func TestTracerFlushTail(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	for _, kill := range []bool{true, false} {
		cmd := exec.Command(prog)
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_CONTROL=0")
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(stdout)
		const rounds, per = 5, 300
		if line, err := rd.ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("program said %q (%v)", line, err)
		}
		for i := 0; i < rounds; i++ {
			fmt.Fprintf(stdin, "call %d\n", per)
			if line, err := rd.ReadString('\n'); err != nil || line != "done\n" {
				t.Fatalf("program said %q (%v)", line, err)
			}
			time.Sleep(250 * time.Millisecond) // a flush or two in between
		}
		var path string
		if kill {
			cmd.Process.Kill()
			cmd.Wait()
			m, _ := filepath.Glob(filepath.Join(dir, "ftrace.dat.*.part"))
			if len(m) != 1 {
				t.Fatalf("part files %v", m)
			}
			path = m[0]
		} else {
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			path = filepath.Join(dir, "ftrace.dat")
		}
		tr := trRead(t, path)
		s := trSymbols(t, tr, prog)
		ticks := 0
		for _, r := range tr.Threads[0].Recs {
			if s.name(r.IP) == "tick" {
				ticks++
			}
		}
		if ticks != rounds*per {
			t.Errorf("kill %v: %d ticks, want %d", kill, ticks, rounds*per)
		}
		if tr.Chunks[4] != 1 || tr.Chunks[6] < rounds-1 {
			t.Errorf("kill %v: %d EVENTS and %d MORE chunks, want 1 and at least %d", kill, tr.Chunks[4], tr.Chunks[6], rounds-1)
		}
		if tr.DataBytes != tr.BlockBytes {
			t.Errorf("kill %v: %d bytes of event data written for %d bytes of blocks", kill, tr.DataBytes, tr.BlockBytes)
		}
		os.Remove(path)
	}
}

// liveProc is trace_live.c running with the control socket: its stdin, what it says,
// and requests to the socket.
type liveProc struct {
	sock   string   // the control socket's path
	conn   net.Conn // ask's connection (the runtime serves one at a time)
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	expect func(want string)
	ask    func(req string) string
}

// trDial connects to a control socket, waiting up to 2 s for it to appear.
func trDial(t *testing.T, sock string) net.Conn {
	t.Helper()
	for i := 0; ; i++ {
		conn, err := net.Dial("unix", sock)
		if err == nil {
			return conn
		}
		if i == 100 {
			t.Fatalf("control socket: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// trStartLive starts prog (trace_live.c) with env and run as its XDG_RUNTIME_DIR and waits
// until it is ready; expect checks its next line.
func trStartLive(t *testing.T, dir, prog, run string, env ...string) (p *liveProc) {
	t.Helper()
	return trStartLiveCmd(t, dir, exec.Command(prog), run, env...)
}

// trStartLiveCmd is trStartLive with the command that runs the program (an emulator's).
func trStartLiveCmd(t *testing.T, dir string, cmd *exec.Cmd, run string, env ...string) (p *liveProc) {
	t.Helper()
	cmd.Dir = dir
	cmd.Env = append(append(trCleanEnv(), env...), "XDG_RUNTIME_DIR="+run)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	rd := bufio.NewReader(stdout)
	p = &liveProc{cmd: cmd, stdin: stdin}
	p.expect = func(want string) {
		t.Helper()
		if line, err := rd.ReadString('\n'); err != nil || line != want+"\n" {
			t.Fatalf("program said %q (%v), want %q", line, err, want)
		}
	}
	p.expect("ready")
	return p
}

// trLive starts prog (trace_live.c) with env and connects to its control socket.
func trLive(t *testing.T, dir, prog string, env ...string) *liveProc {
	t.Helper()
	run := t.TempDir()
	os.Chmod(run, 0o700) // an XDG_RUNTIME_DIR is the user's alone, or the runtime does not use it
	p := trStartLive(t, dir, prog, run, env...)
	cmd := p.cmd
	sock := filepath.Join(run, fmt.Sprintf("ftkit-%d.sock", cmd.Process.Pid))
	p.sock = sock
	conn := trDial(t, sock)
	t.Cleanup(func() { conn.Close() })
	p.conn = conn
	cr := bufio.NewReader(conn)
	p.ask = func(req string) string {
		t.Helper()
		fmt.Fprintf(conn, "%s\n", req)
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, err := cr.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", req, err)
		}
		return strings.TrimSuffix(line, "\n")
	}
	return p
}

// Live dumps of a flight recorder while its thread records flat out: a block the thread
// reuses while the dump copies it is marked skipped, never torn; every dump reads, and
// its blocks follow on from one another but where the ring overwrote.
func TestTracerRingDumpTorn(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	p := trLive(t, dir, prog, "FTRACE_TRACER=function", "FTRACE_RING=1M")
	fmt.Fprintf(p.stdin, "call 40000000\n") // a second or more of ticks
	for i := 0; i < 12; i++ {
		path := filepath.Join(dir, fmt.Sprintf("d%d.dat", i))
		if r := p.ask("dump " + path); r != "ok "+path {
			t.Fatalf("dump: %q", r)
		}
		tr := trRead(t, path) // fails on a block that does not decode
		if len(tr.Threads) != 1 {
			t.Fatalf("dump %d: %d threads", i, len(tr.Threads))
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.expect("done")
}

// Live `ring SIZE` and `ring off`: a streaming thread moves to a flight-recorder ring at
// its next block and back.  The file keeps every event streamed before and after, of the
// ring period its newest blocks, and numbers the thread's blocks on across the changes
// (the gap is the ring's overwritten blocks); nothing counts as lost.
func TestTracerRingSwitch(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	// the block counts below are in FUNC_NEAR events (8 bytes), not FUNC_AGAIN's 4
	p := trLive(t, dir, prog, "FTRACE_TRACER=function", "FTRT_AGAIN=0")
	stdin, expect, ask, cmd := p.stdin, p.expect, p.ask, p.cmd
	for _, bad := range []string{"ring", "ring 0", "ring -1", "ring 12Q", "ring 99999999999999999999"} {
		if r := ask(bad); !strings.HasPrefix(r, "error ring needs a size") {
			t.Errorf("%q: %q", bad, r)
		}
	}
	for _, bad := range []string{"time_filter", "time_filter 10", "time_filter 10xs", "time_filter -1us", "time_filter us"} {
		if r := ask(bad); !strings.HasPrefix(r, "error time_filter needs a duration") {
			t.Errorf("%q: %q", bad, r)
		}
	}
	if r := ask("time_filter 1.5us"); r != "ok" {
		t.Errorf("time_filter 1.5us: %q", r)
	}
	if r := ask("status"); !strings.Contains(r, " time_filter=1500ns ") {
		t.Errorf("status %q, want time_filter=1500ns", r)
	}
	ask("time_filter 0")
	for _, bad := range []string{"threads a,,b", "threads [ab", "threads 0", "threads x,-5"} {
		if r := ask(bad); !strings.HasPrefix(r, "error threads:") {
			t.Errorf("%s: %q", bad, r)
		}
	}
	if r := ask("threads 1,x*"); r != "ok" {
		t.Errorf("threads 1,x*: %q", r)
	}
	if r := ask("status"); !strings.Contains(r, " thread_filter=1,x* ") {
		t.Errorf("status %q, want thread_filter=1,x*", r)
	}
	for _, bad := range []string{"trigger tick@bogus", "trigger nosuch@traceoff"} {
		if r := ask(bad); !strings.HasPrefix(r, "error trigger '") {
			t.Errorf("%q: %q", bad, r)
		}
	}
	if r := ask("trigger tick@stacktrace:1"); r != "ok" {
		t.Errorf("trigger: %q", r)
	}
	if r := ask("trigger"); r != "ok" {
		t.Errorf("trigger (none): %q", r)
	}
	if r := ask("threads"); r != "ok" {
		t.Errorf("threads: %q", r)
	}
	if r := ask("status"); !strings.Contains(r, " thread_filter=* ") {
		t.Errorf("status %q, want thread_filter=*", r)
	}
	const per = 65536 / 8 // FUNC_NEAR ticks a block holds
	fmt.Fprintf(stdin, "call 20000\n")
	expect("done")
	// the reply says the ring the threads get: whole 64 KiB blocks, at least 4
	if r := ask("ring 100k"); r != "ok ring:262144" {
		t.Fatalf("ring 100k: %q, want the 256 KiB minimum said", r)
	}
	if r := ask("ring 256k"); r != "ok ring:262144" {
		t.Fatalf("ring 256k: %q", r)
	}
	if r := ask("status"); !strings.Contains(r, " mode=ring:262144 ") {
		t.Errorf("status %q, want mode=ring:262144", r)
	}
	fmt.Fprintf(stdin, "call 100000\n") // 12 blocks' worth: the 4-block ring wraps
	expect("done")
	if r := ask("ring off"); r != "ok stream" {
		t.Fatalf("ring off: %q", r)
	}
	if r := ask("status"); !strings.Contains(r, " mode=stream ") || !strings.HasSuffix(r, " lost=0 lost_depth=0") {
		t.Errorf("status %q, want mode=stream, nothing lost", r)
	}
	fmt.Fprintf(stdin, "call 30000\n")
	expect("done")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	if len(tr.Threads) != 1 {
		t.Fatalf("%d threads", len(tr.Threads))
	}
	th := tr.Threads[0]
	s := trSymbols(t, tr, prog)
	ticks := 0
	for _, r := range th.Recs {
		if s.name(r.IP) == "tick" {
			ticks++
		}
	}
	// streamed in full: the 20000 and 30000 ticks and the rest of the blocks being
	// filled at each change; of the ring, its newest 3 blocks at least (4 at most)
	if ticks < 50000+3*per-10 || ticks > 50000+2*per+4*per {
		t.Errorf("%d ticks, want 50000 + the ring's 3 newest blocks + the blocks in progress at each change", ticks)
	}
	if th.Lost != 0 || tr.Flags&8 != 0 || tr.Reason != 1 {
		t.Errorf("lost %d, thread flags %#x, file flags %#x reason %d", th.Lost, th.Flags, tr.Flags, tr.Reason)
	}
	d, _ := os.ReadFile(filepath.Join(dir, "ftrace.dat"))
	if mode, rb := binary.LittleEndian.Uint32(d[116:]), binary.LittleEndian.Uint64(d[120:]); mode != 0 || rb != 0 {
		t.Errorf("header mode %d ring_bytes %d, want streaming at the end", mode, rb)
	}
	// block numbers: 0.. streamed, a gap, the ring's (flagged RING, contiguous), then
	// streamed on to the end
	var ring []uint64
	for _, q := range th.Seqs {
		if th.Ring[q] {
			ring = append(ring, q)
		}
	}
	if len(ring) < 3 || len(ring) > 4 || ring[len(ring)-1]-ring[0] != uint64(len(ring)-1) {
		t.Fatalf("ring blocks %v of %v", ring, th.Seqs)
	}
	gaps := 0
	for i := 1; i < len(th.Seqs); i++ {
		q, p := th.Seqs[i], th.Seqs[i-1]
		if q != p+1 {
			gaps++
			if q != ring[0] || q-p < 6 {
				t.Errorf("blocks %v: a gap before %d, want one before the ring's first block, of its overwritten blocks", th.Seqs, q)
			}
		}
	}
	if gaps != 1 {
		t.Errorf("blocks %v: %d gaps, want 1", th.Seqs, gaps)
	}
	t.Logf("%d ticks; blocks %v, ring %v", ticks, th.Seqs, ring)
}

// The time filter (FTRACE_TIME_FILTER, the kernel's tracing_thresh): only the calls that
// lasted the threshold are in the trace, each with its recorded times and nested as they
// ran; with the filter off, the same run records every call.
func TestTracerTimeFilter(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_timefilter.c")
	const rounds, naps = 12, 4 // mid(k) naps 3 ms for k = 0, 3, 6, 9
	for _, tf := range []string{"", "1ms", "1000us"} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_TIME_FILTER=" + tf}, fmt.Sprint(rounds))
		if ws.ExitStatus() != 0 || out == "" {
			t.Fatalf("%q: output %q, status %v", tf, out, ws)
		}
		tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
		s := trSymbols(t, tr, prog)
		ent, _, open := trGraph(t, tr.Threads[0], s)
		if open != 0 {
			t.Errorf("%q: %d frames left open", tf, open)
		}
		// each marker inside the nap that made it (the filter writes the waiting
		// entries first)
		var stack []string
		markers := 0
		for _, r := range tr.Threads[0].Recs {
			switch r.Type {
			case 2:
				stack = append(stack, s.name(r.IP))
			case 3:
				stack = stack[:len(stack)-1]
			case 5:
				markers++
				if len(stack) == 0 || stack[len(stack)-1] != "nap" || r.Text != "nap 3" {
					t.Errorf("%q: marker %q in %v", tf, r.Text, stack)
				}
			}
		}
		if markers != naps {
			t.Errorf("%q: %d markers, want %d", tf, markers, naps)
		}
		if tf == "" {
			want := map[string]int{"main": 1, "mid": rounds, "nap": naps, "leaf": 50*rounds + 2*naps}
			if fmt.Sprint(ent) != fmt.Sprint(want) {
				t.Errorf("no filter: entries %v, want %v", ent, want)
			}
			continue
		}
		// every call recorded lasted 1 ms (exits carry their entry's time)
		short := 0
		for _, r := range tr.Threads[0].Recs {
			if r.Type == 3 && float64(r.TS-r.Aux)*tr.NsPerTick < 1e6-tr.NsPerTick {
				short++
			}
		}
		// the naps, the mids around them and main are there; a mid or leaf that did not
		// nap is there only if it was held up a millisecond (a loaded machine)
		if short != 0 || ent["main"] != 1 || ent["nap"] != naps || ent["mid"] < naps || ent["mid"] > rounds || ent["leaf"] > 3 {
			t.Errorf("%q: entries %v, %d calls shorter than 1 ms", tf, ent, short)
		}
	}
}

// The time filter switched off (live, or by the program) while calls are held back: they
// are open and last long enough now, so their entries are written first, with their own
// times, and every call from then on is recorded. (The next entry used to take the first
// held-back frame's place: the held-back calls came out later, inside an unrelated call,
// back in time, and that call's exit was lost; a libevent trial found it.)
func TestTracerTimeFilterOff(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_timefilter.c")
	const rounds, off = 12, 7 // rounds/2 + 1: switched after 25 of that round's 50 leaves
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_TIME_FILTER=1ms"}, fmt.Sprint(rounds), "off")
	if ws.ExitStatus() != 0 || out == "" {
		t.Fatalf("output %q, status %v", out, ws)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	trCheckComplete(t, tr, 1)
	s := trSymbols(t, tr, prog)
	ent, _, open := trGraph(t, tr.Threads[0], s) // nesting, times, each exit's entry
	if open != 0 {
		t.Errorf("%d frames left open", open)
	}
	// main and round off's mid (held back at the switch), round off's last 25 leaves,
	// then every call of the rounds after it (k = 9 naps: its 2 leaves); before the
	// switch, the naps' mids (k = 0, 3, 6) and any call a loaded machine held up 1 ms
	after := rounds - off - 1
	if ent["main"] != 1 || ent["nap"] != 4 || ent["mid"] < 3+1+after || ent["leaf"] < 25+50*after+2 {
		t.Errorf("entries %v", ent)
	}
}

// ftrace_trace_marker: each marker is in its thread's stream where it was made (between
// the calls around it, inside the call that made it), with its text (cut at 1000 bytes),
// also from a signal handler; none while recording is off (-ENODEV).
func TestTracerMarker(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_marker.c")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph"})
	if out != fmt.Sprintf("0 0 0 %d\n", -int(syscall.ENODEV)) || ws.ExitStatus() != 0 {
		t.Fatalf("output %q (want 0 0 0 -ENODEV), status %v", out, ws)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	s := trSymbols(t, tr, prog)
	got := map[int][]string{}
	for k, th := range tr.Threads {
		// no frame stays open: main's, hooked before recording was turned off and on
		// again, still gets its exit (the graph tracer drains, TestTracerSwitchClosesOpenCalls)
		if _, _, open := trGraph(t, th, s); open != 0 {
			t.Errorf("thread %d: %d frames open", th.TID, open)
		}
		// each marker with the function it was made in (the innermost open call)
		var stack []string
		var last uint64
		for _, r := range th.Recs {
			switch r.Type {
			case 2:
				stack = append(stack, s.name(r.IP))
			case 3:
				stack = stack[:len(stack)-1]
			case 5:
				if r.TS < last {
					t.Errorf("marker %q at %d, before the event before it (%d)", r.Text, r.TS, last)
				}
				in := ""
				if len(stack) > 0 {
					in = stack[len(stack)-1]
				}
				text := r.Text
				if strings.Trim(text, "x") == "" {
					text = fmt.Sprintf("x*%d", len(text))
				}
				got[k] = append(got[k], in+": "+text)
			}
			last = r.TS
		}
	}
	want := map[int][]string{
		0: {"main: start", "work: step 0 of work", "work: step 1 of work", "work: step 2 of work", "main: x*1000", "on_usr1: from a handler"},
		1: {"worker: worker says 7", "work: step 10 of work"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("markers\n got %v\nwant %v", got, want)
	}
	// the reader shows them: graph comments, chrome instant events, report's list
	ftrace := testenv.Tool(t, "ftrace")
	g := testenv.Run(t, dir, ftrace, "graph", "ftrace.dat")
	for _, line := range []string{"/* start */", "/* step 1 of work */", "/* worker says 7 */", "/* from a handler */"} {
		if !strings.Contains(g, line) {
			t.Errorf("graph has no %q:\n%s", line, g)
		}
	}
	if r := testenv.Run(t, dir, ftrace, "report", "ftrace.dat"); !strings.Contains(r, "# 8 markers") || !strings.Contains(r, "step 2 of work") {
		t.Errorf("report:\n%s", r)
	}
	if j := testenv.Run(t, dir, ftrace, "dump", "--chrome", "ftrace.dat"); strings.Count(j, `"cat":"marker"`) != 8 {
		t.Errorf("chrome: %d marker events, want 8", strings.Count(j, `"cat":"marker"`))
	}
}

// The thread filter (FTRACE_THREADS, the kernel's set_ftrace_pid for threads): only the
// threads named or numbered record, judged again when one is renamed (pthread_setname_np,
// prctl); a malformed filter is refused with a message and every thread records.
func TestTracerThreadFilter(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_thrfilter.c")
	for _, tc := range []struct {
		spec string
		want map[string]int // leaf calls per recording thread (by name)
	}{
		{"", map[string]int{"trace_thrfilter": 10, "alpha": 20, "beta": 30, "trace_thrfilt-c": 40}},
		{"alpha", map[string]int{"alpha": 20}},
		{"beta,alp*", map[string]int{"alpha": 20, "beta": 30}},
		{"[ab]e*", map[string]int{"beta": 30}},
		{"$$", map[string]int{"trace_thrfilter": 10}}, // main: its tid is the pid
		{"nothing", map[string]int{}},
		{"a,,b", map[string]int{"trace_thrfilter": 10, "alpha": 20, "beta": 30, "trace_thrfilt-c": 40}},
		{"[abc", map[string]int{"trace_thrfilter": 10, "alpha": 20, "beta": 30, "trace_thrfilt-c": 40}},
		{"-1", map[string]int{"trace_thrfilter": 10, "alpha": 20, "beta": 30, "trace_thrfilt-c": 40}},
	} {
		os.Remove(filepath.Join(dir, "ftrace.dat"))
		cmd := exec.Command("sh", "-c", "FTRACE_THREADS="+tc.spec+" exec "+prog)
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%q: %v\n%s", tc.spec, err, stderr.String())
		}
		if bad := strings.Contains(stderr.String(), "ignoring FTRACE_THREADS"); bad != (tc.spec == "a,,b" || tc.spec == "[abc" || tc.spec == "-1") {
			t.Errorf("%q: stderr %q", tc.spec, stderr.String())
		}
		tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
		s := trSymbols(t, tr, prog)
		got, marks, wantMarks := map[string]int{}, map[string]int{}, map[string]int{}
		for _, th := range tr.Threads {
			name := th.Name
			if name != "alpha" && name != "beta" && th.TID != tr.PID {
				name = "trace_thrfilt-c" // the unnamed thread
			}
			for _, r := range th.Recs {
				switch {
				case r.Type == 5:
					marks[name]++
				case s.name(r.IP) == "leaf":
					got[name]++
				}
			}
		}
		for name := range tc.want {
			wantMarks[name] = 1
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || fmt.Sprint(marks) != fmt.Sprint(wantMarks) {
			t.Errorf("%q: leaf calls %v, markers %v; want %v, one marker each", tc.spec, got, marks, tc.want)
		}
	}
}

// Triggers (FTRACE_TRIGGER): traceoff and traceon bracket calls that are not recorded,
// stacktrace records the caller chain at its first two hits (count 2), finish stops
// recording when the call returns, and a snapshot trigger still fires after that.
func TestTracerTrigger(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_trigger.c")
	for _, tracer := range []string{"function", "function_graph"} {
		os.Remove(filepath.Join(dir, "ftrace.dat.snap.1"))
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer,
			"FTRACE_TRIGGER=off@traceoff;on@traceon;deep@stacktrace:2;tailee@stacktrace;probe@stacktrace:1;fin@finish;snap@snapshot"})
		if ws.ExitStatus() != 0 || out == "" {
			t.Fatalf("%s: output %q, status %v", tracer, out, ws)
		}
		tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
		s := trSymbols(t, tr, prog)
		leaves := 0
		var stacks [][]string
		for _, r := range tr.Threads[0].Recs {
			switch {
			case r.Type == 6:
				stacks = append(stacks, s.stack(r.PCs))
			case r.Type != 3 && s.name(r.IP) == "leaf":
				leaves++
			}
		}
		// 5, then on's leaf, 9, deep's, tailee's and fin's: not off's, the 7 or the 11
		if leaves != 18 {
			t.Errorf("%s: %d leaf calls recorded, want 18", tracer, leaves)
		}
		// the graph tracer's shadow stack gives the traced callers, the function tracer
		// the caller, and frame pointers that -O2 does not keep. tailer jumped to
		// tailee: tailee returns into main (the graph tracer had hooked that return
		// when it entered tailer, and the trace showed its hook's address), and the
		// shadow stack names tailer too. cmp returns into libc's qsort, which returns into
		// sorter: the shadow stack names sorter (memcached's worker_libevent was left out
		// of its chains through libevent)
		want := [][]string{{"deep", "main"}, {"deep", "deep", "main"}, {"tailee", "tailer", "main"},
			{"probe", "cmp", "libc", "sorter", "main"}}
		if tracer == "function" {
			want[1] = want[1][:2]
			want[2] = []string{"tailee", "main"}
			want[3] = want[3][:2]
		}
		ok := len(stacks) == 4
		for k := 0; ok && k < 4; k++ {
			var got []string // the program's frames: all named; libc's as "libc"
			for _, name := range stacks[k] {
				if strings.HasPrefix(name, "0x") && (len(got) == 0 || got[len(got)-1] != "libc") {
					name = "libc"
				} else if strings.HasPrefix(name, "0x") {
					continue
				}
				got = append(got, name)
				if name == "main" {
					break
				}
			}
			ok = len(got) >= len(want[k]) && fmt.Sprint(got[:len(want[k])]) == fmt.Sprint(want[k])
		}
		if !ok {
			t.Errorf("%s: stack traces %v, want them to begin %v", tracer, stacks, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "ftrace.dat.snap.1")); err != nil {
			t.Errorf("%s: the snapshot trigger wrote no snapshot: %v", tracer, err)
		}
	}
	// a malformed trigger: a message, tracing goes on; one that matches nothing waits for a
	// library loaded later (TestTracerDlopenNames), said so
	for _, bad := range []string{"off@bogus", "nosuchfunc@traceoff", "off", "off@depth", "off@traceoff:0"} {
		cmd := exec.Command(prog)
		cmd.Dir = dir
		cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_TRIGGER="+bad)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		want := "ignoring FTRACE_TRIGGER"
		if strings.HasPrefix(bad, "nosuchfunc") {
			want = "trigger 'nosuchfunc': matches no function yet: it waits for a library loaded later"
		}
		if err := cmd.Run(); err != nil || !strings.Contains(stderr.String(), want) {
			t.Errorf("%q: %v, stderr %q", bad, err, stderr.String())
		}
	}
	// a snapshot that cannot be written is said once, with where it was tried (the nginx
	// trial: workers that dropped root spent the count in silence); the program goes on
	snap := filepath.Join(dir, "ftrace.dat.snap.1")
	os.Remove(snap)
	if err := os.Mkdir(snap, 0o700); err != nil {
		t.Fatal(err)
	}
	plain, _ := trRun(t, dir, prog, nil)
	cmd := exec.Command(prog)
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "FTRACE_TRIGGER=snap@snapshot;leaf@snapshot:3")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	want := "ftkit: trigger snapshot: cannot write " + snap + ": "
	if err := cmd.Run(); err != nil || stdout.String() != plain || strings.Count(stderr.String(), want) != 1 {
		t.Errorf("snapshot into a directory: %v, stdout %q (plain %q), stderr %q, want one %q", err, stdout.String(), plain, stderr.String(), want)
	}
}

// The function tracer's stack traces walk frame pointers: through code that keeps none, the
// walk stops at the first word that is no return address (gawk's -O2 code gave chains
// like "make_str_node <- main <- 0x54e0ba" and "<- _fini").
func TestTracerStackNoFramePointers(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86-64 inline assembly")
	}
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fpwalk.c")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_TRIGGER=victim@stacktrace"})
	if out != "2\n" || ws.ExitStatus() != 0 {
		t.Fatalf("output %q, status %v", out, ws)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	s := trSymbols(t, tr, prog)
	var stacks []string
	for _, r := range tr.Threads[0].Recs {
		if r.Type == 6 {
			stacks = append(stacks, strings.Join(s.stack(r.PCs), " <- "))
		}
	}
	if want := "victim <- bad_fp"; len(stacks) != 2 || stacks[0] != want || stacks[1] != want {
		t.Errorf("stack traces %q, want two %q", stacks, want)
	}
}

// A fork child killed before it finalises leaves <output>.<childpid>.part: its pid once,
// next to the parent's finished file.
func TestTracerKilledForkChildName(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_misc.c")
	_, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=k.dat"}, "killchild", "10")
	if ws.ExitStatus() != 0 {
		t.Fatalf("status %v", ws)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "k.dat.*"))
	if len(m) != 1 || !regexp.MustCompile(`/k\.dat\.[0-9]+\.part$`).MatchString(m[0]) {
		t.Fatalf("child files %v, want one k.dat.<pid>.part", m)
	}
	tr := trRead(t, m[0])
	pid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m[0]), "k.dat."), ".part")
	if fmt.Sprint(tr.PID) != pid {
		t.Errorf("file %s holds pid %d", m[0], tr.PID)
	}
}

// An output that names a device, FIFO or socket, or a file that is not a trace, is never
// replaced by the trace (as root, FTRACE_OUTPUT=/dev/null once turned /dev/null into a
// regular file): the program runs untraced and says so.
func TestTracerOutputNotRegular(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_misc.c")
	want, wantWS := trRun(t, dir, prog, nil, "exit", "10")
	fifo := filepath.Join(dir, "fifo.dat")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prog, "exit", "10")
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT="+fifo)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws != wantWS || stdout.String() != want {
		t.Errorf("traced: %q %v (%v), untraced: %q %v", stdout.String(), ws, err, want, wantWS)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
	if !strings.Contains(stderr.String(), "not a regular file") {
		t.Errorf("stderr %q does not say why nothing was traced", stderr.String())
	}
	if m, _ := filepath.Glob(fifo + ".*"); len(m) != 0 {
		t.Errorf("files left: %v", m)
	}
	// nor a regular file that is not a trace (the user's data, the program): kept as it was
	data := filepath.Join(dir, "data.txt")
	os.WriteFile(data, []byte("1\n2\n"), 0o644)
	cmd = exec.Command(prog, "exit", "10")
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_OUTPUT="+data)
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws != wantWS || stdout.String() != want {
		t.Errorf("traced onto data: %q %v (%v), untraced: %q %v", stdout.String(), ws, err, want, wantWS)
	}
	if b, err := os.ReadFile(data); err != nil || string(b) != "1\n2\n" {
		t.Errorf("the data file was replaced: %q %v", b, err)
	}
	if !strings.Contains(stderr.String(), "exists and is not an ftkit trace") {
		t.Errorf("stderr %q does not say why nothing was traced", stderr.String())
	}
	if m, _ := filepath.Glob(data + ".*"); len(m) != 0 {
		t.Errorf("files left: %v", m)
	}
}

// Callers built with interprocedural register allocation keep values in caller-saved
// registers their callee does not touch; the graph tracer's return path preserves them.
func TestTracerIPARA(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_ipara.c")
	want, _ := trRun(t, dir, prog, nil)
	if want != "22039000\n" {
		t.Fatalf("untraced: %q", want)
	}
	for _, tracer := range []string{"function", "function_graph"} {
		if got, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=t.dat"}); got != want || ws.ExitStatus() != 0 {
			t.Errorf("%s: %q (%v), want %q", tracer, got, ws, want)
		}
	}
}

func TestTracerGraphUsers(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_users.c")
	out, ws := trRun(t, dir, prog, nil)
	want := "a: ent=3 ret=3 bad=0\nb: ent=5 ret=5 bad=0 depth=0\nc: ent=28 ret=28 bad=0\nparent ip changed: 0\n"
	if out != want || ws.ExitStatus() != 0 {
		t.Errorf("got %q (%v), want %q", out, ws, want)
	}
}

// Live control through the unix socket of a real running process: status, disable/enable,
// tracer switch, snapshot, depth (limit and bad values), notrace (set, cleared),
// finish; the socket is private to the user and removed at the end.
func TestTracerLiveControl(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	run := t.TempDir()
	os.Chmod(run, 0o700) // an XDG_RUNTIME_DIR is the user's alone, or the runtime does not use it
	cmd := exec.Command(prog)
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function", "XDG_RUNTIME_DIR="+run)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	rd := bufio.NewReader(stdout)
	expect := func(want string) {
		t.Helper()
		line, err := rd.ReadString('\n')
		if err != nil || line != want+"\n" {
			t.Fatalf("program said %q (%v), want %q", line, err, want)
		}
	}
	expect("ready")
	sock := filepath.Join(run, fmt.Sprintf("ftkit-%d.sock", cmd.Process.Pid))
	conn := trDial(t, sock)
	defer conn.Close()
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0600 {
		t.Errorf("socket mode: %v %v", st.Mode(), err)
	}
	cr := bufio.NewReader(conn)
	ask := func(req string) string {
		t.Helper()
		fmt.Fprintf(conn, "%s\n", req)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := cr.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", req, err)
		}
		return strings.TrimSuffix(line, "\n")
	}
	call := func(n int) { fmt.Fprintf(stdin, "call %d\n", n); expect("done") }

	if r := ask("status"); !strings.HasPrefix(r, "ok tracer=function enabled=1 recording=1 pid=") {
		t.Errorf("status: %q", r)
	}
	call(10)
	if r := ask("disable"); r != "ok" {
		t.Errorf("disable: %q", r)
	}
	call(100) // not recorded
	// a tracer switch keeps the on/off state: still off, and on again as function
	for _, req := range []string{"tracer function_graph", "tracer nop", "tracer function"} {
		if r := ask(req); r != "ok" {
			t.Errorf("%s: %q", req, r)
		}
		if r := ask("status"); !strings.Contains(r, " enabled=0 recording=0 ") {
			t.Errorf("after disable, %s: status %q", req, r)
		}
	}
	call(100) // not recorded
	if r := ask("enable"); r != "ok" {
		t.Errorf("enable: %q", r)
	}
	call(20)
	snap := filepath.Join(dir, "snap.dat")
	if r := ask("snapshot " + snap); r != "ok "+snap {
		t.Errorf("snapshot: %q", r)
	}
	if r := ask("tracer function_graph"); r != "ok" {
		t.Errorf("tracer: %q", r)
	}
	call(5)
	// depth 1: calls (depth 0) is graphed, its ticks are counted over depth
	// (strtoul takes "-1" and wraps: 2^32 would have become 0, no limit)
	for _, req := range []string{"depth 1", "depth x", "depth", "depth -1", "depth 4294967296", "depth 1x"} {
		r := ask(req)
		if (req == "depth 1") != (r == "ok") || (r != "ok" && !strings.HasPrefix(r, "error depth needs a number")) {
			t.Errorf("%s: %q", req, r)
		}
	}
	call(7)
	// the 7 ticks over the depth limit are frames not recorded, not lost events
	if r := ask("status"); !strings.HasSuffix(r, " lost=0 lost_depth=7") {
		t.Errorf("status after depth 1: %q", r)
	}
	// notrace tick (unlimited depth again): calls only
	if r := ask("depth 0"); r != "ok" {
		t.Errorf("depth 0: %q", r)
	}
	if r := ask("notrace tick"); r != "ok" {
		t.Errorf("notrace: %q", r)
	}
	call(9)
	// the function tracer follows the notrace list too
	if r := ask("tracer function"); r != "ok" {
		t.Errorf("tracer function: %q", r)
	}
	// refused changes change nothing (a partly applied filter would now trace only tick,
	// which notrace excludes: calls/1 would be one short)
	for req, want := range map[string]string{
		"filter nosuch_fn,tick": "error filter 'nosuch_fn': matches no function (nothing changed)",
		"filter tick,nosuch*":   "error filter 'nosuch*': matches no function (nothing changed)",
		"notrace calls,[x":      "error notrace '[x': matches no function (nothing changed)",
	} {
		if r := ask(req); r != want {
			t.Errorf("%s: %q, want %q", req, r, want)
		}
	}
	call(4)
	// an empty notrace list: everything again
	if r := ask("notrace"); r != "ok" {
		t.Errorf("empty notrace: %q", r)
	}
	call(3)
	if r := ask("bogus"); !strings.HasPrefix(r, "error unknown command") {
		t.Errorf("bogus: %q", r)
	}
	if r := ask("finish"); r != "ok" {
		t.Errorf("finish: %q", r)
	}
	fmt.Fprintf(stdin, "quit\n")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket still there: %v", err)
	}

	count := func(tr *trTrace) map[string]int {
		s := trSymbols(t, tr, prog)
		c := map[string]int{}
		for _, th := range tr.Threads {
			for _, r := range th.Recs {
				c[fmt.Sprintf("%s/%d", s.name(r.IP), r.Type)]++
			}
		}
		return c
	}
	st := trRead(t, snap)
	if st.Flags&(1|4) != 5 || st.Reason != 3 {
		t.Errorf("snapshot flags %#x reason %d", st.Flags, st.Reason)
	}
	if c := count(st); c["tick/1"] != 30 || c["calls/1"] != 2 {
		t.Errorf("snapshot counts %v, want 30 ticks in 2 calls", c)
	}
	ft := trRead(t, filepath.Join(dir, "ftrace.dat"))
	trCheckComplete(t, ft, 4)
	// function tracer: main at start-up, 10+20+3 ticks, calls 10 20 4 3 (ticks of call(4) not traced)
	// graph: call(5) all, call(7) calls only (depth 1), call(9) calls only (notrace)
	want := map[string]int{"main/1": 1, "tick/1": 30 + 3, "calls/1": 4, "tick/2": 5, "tick/3": 5, "calls/2": 3, "calls/3": 3}
	if c := count(ft); fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("final counts %v, want %v", c, want)
	}
	var overDepth uint64
	for _, th := range ft.Threads {
		overDepth += th.LostDepth
	}
	if overDepth != 7 {
		t.Errorf("over depth %d, want the 7 ticks of call(7)", overDepth)
	}
}

// Real world: Debian's tinyxml2 test program (C++, 463 checks, 3.2M calls) through the real
// flow passes unchanged under both tracers, and the traces agree: every call the function
// tracer saw (recorded or counted lost) is an entry of the graph (recorded or counted lost),
// and every graph entry has its exit.
func TestTracerTinyXML2(t *testing.T) {
	if testing.Short() {
		t.Skip("real-world build")
	}
	testenv.Need(t, "g++")
	src := testenv.DebianSource(t, "tinyxml2")
	dir := t.TempDir()
	testenv.CopyTree(t, src, dir)
	lib, inc := testenv.Runtime(t)
	var objs []string
	for _, f := range []string{"tinyxml2", "xmltest"} {
		obj := filepath.Join(dir, f+".o")
		testenv.Run(t, dir, "g++", "-O2", "-g", "-pg", "-mfentry", "-I", inc,
			"-c", f+".cpp", "-o", obj)
		testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), obj)
		objs = append(objs, obj)
	}
	prog := filepath.Join(dir, "xmltest")
	testenv.Run(t, dir, "g++", append(objs, "-L"+lib, "-lftrt", "-lpthread", "-ldl", "-o", prog)...)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), prog)

	plain, pws := trRun(t, dir, prog, nil)
	if pws.ExitStatus() != 0 || !strings.Contains(plain, "Pass 463, Fail 0") {
		t.Fatalf("untraced xmltest: %v\n%s", pws, plain)
	}
	total := map[string]uint64{}
	for _, tracer := range []string{"function", "function_graph"} {
		// 256 MiB buffers: the graph's 6.4M records fit, nothing is lost
		// every call kept: the threads wait for the writer rather than drop (a busy
		// machine can starve the writer thread)
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + tracer + ".dat", "FTRACE_NO_LOSS=1"})
		if trNoTimes(out) != trNoTimes(plain) || ws != pws {
			t.Fatalf("%s: output or status changed (%v)", tracer, ws)
		}
		tr := trRead(t, filepath.Join(dir, tracer+".dat"))
		trCheckComplete(t, tr, 1)
		for _, th := range tr.Threads {
			if tracer == "function" {
				total[tracer] += uint64(len(th.Recs)) + th.Lost
				continue
			}
			ent, _, open := trGraph(t, th, trSymbols(t, tr, prog))
			if open != 0 {
				t.Errorf("graph: %d frames open at the end", open)
			}
			for _, n := range ent {
				total[tracer] += uint64(n)
			}
			total[tracer] += th.Lost + th.LostDepth
		}
	}
	if total["function"] != total["function_graph"] || total["function"] < 1000000 {
		t.Errorf("calls: function tracer %d, graph %d", total["function"], total["function_graph"])
	}

	// The same through `ftrace report --format json`, per function: nothing lost, no
	// call without its return or return without its call, and the same calls of the
	// same functions under both tracers.
	calls := map[string]map[string]uint64{}
	for _, tracer := range []string{"function", "function_graph"} {
		out := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "report", "--format", "json", tracer+".dat")
		var r testenv.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("ftrace report: %v", err)
		}
		if r.Tracer != tracer || !r.Complete || r.Lost != 0 || r.LostNoBuf != 0 || r.LostDepth != 0 || r.Unmatched != 0 || r.Unfinished != 0 {
			t.Errorf("ftrace report %s: tracer %s complete %v lost %d/%d/%d unmatched %d unfinished %d", tracer,
				r.Tracer, r.Complete, r.Lost, r.LostNoBuf, r.LostDepth, r.Unmatched, r.Unfinished)
		}
		calls[tracer] = map[string]uint64{}
		for _, f := range r.Functions {
			if f.Name != testenv.TraceFlush {
				calls[tracer][f.Name] += f.Calls
			}
		}
	}
	fn, fg := calls["function"], calls["function_graph"]
	if len(fn) < 100 || len(fn) != len(fg) {
		t.Errorf("functions: %d traced by function, %d by function_graph", len(fn), len(fg))
	}
	for name, n := range fn {
		if fg[name] != n {
			t.Errorf("%s: %d calls traced by function, %d by function_graph", name, n, fg[name])
		}
	}

	// --auto-args on the real C++ program: each XMLTest(const char *testString, const char
	// *expected, const char *found, bool echo, bool extraNL) call prints
	// "[pass] testString [expected][found]" ([fail] when it returns false); the arguments
	// and return value the trace recorded must say the same (strings cut at 64 bytes
	// excepted). Only XMLTest is traced (-F), every function's plan is passed.
	args := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "record", "-q", "-a", "-F", "XMLTest*", "-o", "args.dat", "--", prog)
	if trNoTimes(args) != trNoTimes(plain) {
		t.Fatalf("--auto-args: output changed")
	}
	// how often each line is still to be matched (a line may follow other output, and a
	// string may hold a newline)
	printed := map[string]int{}
	str := `"((?:[^"\\]|\\.)*)"`
	re := regexp.MustCompile(`XMLTest\(testString=` + str + `, expected=` + str + `, found=` + str + `, echo=true, extraNL=false\) = (true|false);`)
	matched := 0
	for _, m := range re.FindAllStringSubmatch(testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "graph", "args.dat"), -1) {
		var v [3]string
		for k := range v {
			u, err := strconv.Unquote(`"` + m[k+1] + `"`)
			if err != nil {
				t.Fatalf("%q: %v", m[0], err)
			}
			v[k] = u
		}
		line := fmt.Sprintf("[pass] %s [%s][%s]", v[0], v[1], v[2])
		if m[4] == "false" {
			line = "[fail]" + line[6:]
		}
		if _, ok := printed[line]; !ok {
			printed[line] = strings.Count(args, line)
		}
		if printed[line] == 0 {
			t.Errorf("graph shows %s; the program printed no %q", m[0], line)
			continue
		}
		printed[line]--
		matched++
	}
	if matched < 300 {
		t.Errorf("%d XMLTest calls with their arguments shown, want 300 or more", matched)
	}
}

// trNoTimes drops xmltest's timing lines ("... milli-seconds").
func trNoTimes(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasSuffix(l, "milli-seconds") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// Switching tracers (function_graph, function, off) 200 times while three threads run traced
// calls: no crash, the threads compute what they would untraced, every switch succeeds.
func TestTracerToggleUnderThreads(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_toggle.c")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=nop", "FTRACE_CONTROL=0"}, "200")
	if out != "ok=1 errors=0\n" || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v", out, ws)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	trCheckComplete(t, tr, 1)
	var funcs, entries, exits int
	for _, th := range tr.Threads {
		for _, r := range th.Recs {
			switch r.Type {
			case 1:
				funcs++
			case 2:
				entries++
			case 3:
				exits++
			}
		}
	}
	if funcs == 0 || entries == 0 || exits > entries {
		t.Errorf("records: %d function, %d entries, %d exits", funcs, entries, exits)
	}
}

// The tracers' own trampolines are clones of the lean template (no vector registers
// saved: their callbacks are proven integer-only leaves), the graph tracer's through its
// fused entry; FTRT_NOVEC=0 or FTRT_GRAPH_FUSED=0 give the full one. A change that makes a
// callback use a vector register or call out directly would silently cost ~2 ns a call.
func TestTracerLeanTrampoline(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_lean.c")
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"FTRACE_TRACER=function"}, "lean 1 full 0 6.0\n"},
		{[]string{"FTRACE_TRACER=function_graph"}, "lean 1 full 0 6.0\n"},
		{[]string{"FTRACE_TRACER=function_graph", "FTRACE_ARGS=work@fparg1,arg1", "FTRACE_RETVAL=work@retval/f64"}, "lean 1 full 0 6.0\n"},
		{[]string{"FTRACE_TRACER=function_graph", "FTRT_NOVEC=0"}, "lean 0 full 1 6.0\n"},
		{[]string{"FTRACE_TRACER=function_graph", "FTRT_GRAPH_FUSED=0"}, "lean 0 full 1 6.0\n"},
	} {
		out, ws := trRun(t, dir, prog, append(c.env, "FTRACE_CONTROL=0", "FTRACE_OUTPUT=l.dat"))
		if out != c.want || ws.ExitStatus() != 0 {
			t.Errorf("%v: %q (status %v), want %q", c.env, out, ws, c.want)
		}
	}
}

// The graph tracer switched to the function tracer, off, or to no tracer while calls it
// recorded are open: each still gets its exit at its real return, in order with what the
// other tracer recorded meanwhile, and nothing is recorded while off (the kernel drops
// such exits; a report then showed the calls open until the thread's last event).
func TestTracerSwitchClosesOpenCalls(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_switch_open.c")
	plain, _ := trRun(t, dir, prog, nil)
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_CONTROL=0"})
	if out != plain || ws.ExitStatus() != 0 {
		t.Fatalf("output %q status %v, untraced %q", out, ws, plain)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	trCheckComplete(t, tr, 1)
	s := trSymbols(t, tr, prog)
	if len(tr.Threads) != 1 {
		t.Fatalf("%d threads", len(tr.Threads))
	}
	var got []string
	var entries []uint64
	for _, r := range tr.Threads[0].Recs {
		kind := map[uint16]string{1: "F", 2: "E", 3: "X"}[r.Type]
		if kind == "" {
			continue
		}
		switch r.Type {
		case 2:
			entries = append(entries, r.TS)
		case 3:
			if n := len(entries); n == 0 || r.Aux != entries[n-1] || r.Flags&1 != 0 {
				t.Errorf("exit of %s: entry time %d, open %v, flags %#x", s.name(r.IP), r.Aux, entries, r.Flags)
			} else {
				entries = entries[:n-1]
			}
		}
		got = append(got, kind+" "+s.name(r.IP))
	}
	want := []string{"E main",
		"E to_function", "E inner", "X inner", "F inner", "F inner", "X to_function",
		"E to_off", "E inner", "X inner", "X to_off",
		"E to_nop", "E inner", "X inner", "E inner", "X inner", "X to_nop",
		"X main"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("records:\n got %s\nwant %s", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}

// Signals whose default action ends the process (SIGTERM, SIGINT, SIGHUP, SIGPIPE...):
// the runtime finalises the file (the records staged since the last flush included) and
// the process still dies of the signal, as it does untraced. A signal the program
// inherited as ignored stays ignored.
func TestTracerTermSignals(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_term.c")
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   io.ReadCloser
		rd    *bufio.Reader
	}
	start := func(env []string, args ...string) *proc {
		t.Helper()
		p := &proc{cmd: exec.Command(args[0], args[1:]...)}
		p.cmd.Dir = dir
		p.cmd.Env = append(trCleanEnv(), env...)
		p.stdin, _ = p.cmd.StdinPipe()
		p.out, _ = p.cmd.StdoutPipe()
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.rd = bufio.NewReader(p.out)
		return p
	}
	expect := func(p *proc, want string) {
		t.Helper()
		if line, err := p.rd.ReadString('\n'); err != nil || line != want+"\n" {
			t.Fatalf("program said %q (%v), want %q", line, err, want)
		}
	}
	wait := func(p *proc) syscall.WaitStatus {
		p.cmd.Wait()
		return p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	// killed runs the program (waiter mode) and sends sig once it is waiting.
	killed := func(env []string, sig syscall.Signal, args ...string) syscall.WaitStatus {
		p := start(env, append([]string{prog, "wait"}, args...)...)
		expect(p, "ready")
		p.cmd.Process.Signal(sig)
		return wait(p)
	}
	checkTrace := func(name string, sig syscall.Signal, open int) {
		t.Helper()
		tr := trRead(t, filepath.Join(dir, name))
		if sig != 0 && (tr.Flags&3 != 3 || tr.Signal != uint32(sig) || tr.Reason != 2) {
			t.Errorf("%s: flags %#x signal %d reason %d, want complete+abnormal, signal %d, reason 2", name, tr.Flags, tr.Signal, tr.Reason, sig)
		}
		if sig == 0 {
			trCheckComplete(t, tr, 1)
		}
		ent, unw, o := trGraph(t, tr.Threads[0], trSymbols(t, tr, prog))
		if ent["main"] != 1 || ent["work"] != 1 || ent["leaf"] < 100 || len(unw) != 0 || o != open {
			t.Errorf("%s: entries %v unwound %v, %d frames open (want %d)", name, ent, unw, o, open)
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		if signal.Ignored(sig) {
			// inherited ignored (nohup, a shell's background job): the program would
			// ignore it too and never end
			t.Logf("%v is ignored by this test's process and its children: not tried", sig)
			continue
		}
		// with the default action as inherited, or set by the program (dash sets it at
		// start-up: its processes killed by another left a .part)
		for _, how := range [][]string{nil, {"sigaction"}, {"signal"}} {
			plain := killed(nil, sig, how...)
			name := strings.ToLower(sig.String()[:3]) + strings.Join(how, "") + ".dat"
			ws := killed([]string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=" + name}, sig, how...)
			if ws != plain || !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("%v %v: traced status %v, untraced %v", sig, how, ws, plain)
			}
			// main and waiter were running
			checkTrace(name, sig, 2)
		}
	}

	// SIGPIPE: the reader goes away
	pipe := func(env []string, args ...string) syscall.WaitStatus {
		p := start(env, append([]string{prog, "pipe"}, args...)...)
		expect(p, "line 0")
		p.out.Close()
		return wait(p)
	}
	for _, how := range [][]string{nil, {"sigaction"}, {"signal"}} {
		plain := pipe(nil, how...)
		name := "pipe" + strings.Join(how, "") + ".dat"
		ws := pipe([]string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=" + name}, how...)
		if ws != plain || !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
			t.Errorf("SIGPIPE %v: traced status %v, untraced %v", how, ws, plain)
		}
		checkTrace(name, syscall.SIGPIPE, 2)
	}

	// SIGINT ignored by the parent (a shell's background job): still ignored
	p := start([]string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=ign.dat"},
		"sh", "-c", `trap "" INT; exec "$0" wait`, prog)
	expect(p, "ready")
	p.cmd.Process.Signal(syscall.SIGINT)
	fmt.Fprintf(p.stdin, "ping\n")
	expect(p, "pong")
	p.stdin.Close()
	expect(p, "bye")
	if ws := wait(p); ws.ExitStatus() != 0 {
		t.Errorf("ignored SIGINT: status %v", ws)
	}
	checkTrace("ign.dat", 0, 0)
}

// Signal handlers on an alternate stack (below and above the interrupted frames), entered
// synchronously and asynchronously while traced code runs, calling traced functions: the
// output is unchanged, the graph balanced (no frame taken for unwound), every handler
// call recorded and nested in the frame it interrupted.
func TestTracerSigaltstack(t *testing.T) {
	flows := []struct {
		name  string
		build func(t *testing.T, dir, src string) string
	}{{"real", trBuild}, {"mock", trBuildMock}, {"mock-asan-ubsan", trBuildMockASan}}
	for _, fl := range flows {
		for _, mode := range []string{"below", "above"} {
			fl, mode := fl, mode
			t.Run(fl.name+"/"+mode, func(t *testing.T) {
				dir := t.TempDir()
				prog := fl.build(t, dir, "trace_altstack.c")
				want := fmt.Sprintf("%s: altstack %s the frames, handled=205 off-altstack=0 sink-ok=1\n", mode, mode)
				plain, pws := trRun(t, dir, prog, nil, mode)
				if plain != want || pws.ExitStatus() != 0 {
					t.Fatalf("untraced: %q %v, want %q", plain, pws, want)
				}
				out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph"}, mode)
				if out != plain || ws != pws {
					t.Fatalf("traced: %q %v; untraced: %q %v", out, ws, plain, pws)
				}
				tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
				trCheckComplete(t, tr, 1)
				s := trSymbols(t, tr, prog)
				all := map[string]int{}
				parents := map[string]int{}
				var lostDepth uint64
				for _, th := range tr.Threads {
					ent, unw, open := trGraph(t, th, s)
					if open != 0 || len(unw) != 0 || th.Lost != 0 {
						t.Errorf("tid %d: %d open, unwound %v, lost %d", th.TID, open, unw, th.Lost)
					}
					lostDepth += th.LostDepth
					for k, v := range ent {
						all[k] += v
					}
					var stack []string
					for _, r := range th.Recs {
						if r.Type == 3 {
							stack = stack[:len(stack)-1]
							continue
						}
						n := s.name(r.IP)
						if n == "on_usr1" && len(stack) > 0 {
							parents[stack[len(stack)-1]]++
						}
						stack = append(stack, n)
					}
				}
				// A handler that interrupts the graph tracer itself is not graphed: its 4
				// calls are counted over depth.
				// (The mock core drops calls made while its own dispatcher runs, uncounted:
				// the counts are exact with the real core only.)
				if n := all["on_usr1"]; fl.name == "real" && n+int(lostDepth/4) != 205 || lostDepth%4 != 0 || all["h_mid"] != n || all["h_leaf"] != 2*n {
					t.Errorf("handler calls %d (+ %d over depth), h_mid %d, h_leaf %d; want 205 in all, h_leaf twice", n, lostDepth, all["h_mid"], all["h_leaf"])
				}
				// 5 synchronous raises from deep(0); the asynchronous ones land anywhere
				if parents["deep"] < 5 {
					t.Errorf("handler nested in %v: want at least 5 in deep", parents)
				}
				t.Logf("handler interrupted: %v; not graphed: %d", parents, lostDepth/4)
			})
		}
	}
}

// Coroutines switching with makecontext/swapcontext in the middle of traced calls (issue
// 13): the program computes and exits as untraced, the trace is complete and balanced,
// calls that do not cross a switch keep their exits. "raw" switches with libc's own
// swapcontext, which the runtime does not see: frames are then found on other stacks
// when they return.
func TestTracerUcontext(t *testing.T) {
	flows := []struct {
		name  string
		build func(t *testing.T, dir, src string) string
	}{{"real", trBuild}, {"mock", trBuildMock}, {"mock-asan-ubsan", trBuildMockASan}}
	for _, fl := range flows {
		fl := fl
		t.Run(fl.name, func(t *testing.T) {
			dir := t.TempDir()
			prog := fl.build(t, dir, "trace_ucontext.c")
			for _, mode := range []string{"seen", "raw"} {
				var args []string
				if mode == "raw" {
					args = []string{"raw"}
				}
				plain, pws := trRun(t, dir, prog, nil, args...)
				var nleaf, nbetween int
				if _, err := fmt.Sscanf(plain[strings.Index(plain, "\n")+1:], "jumps 4 sum %d leaf %d between %d",
					new(uint64), &nleaf, &nbetween); err != nil || pws.ExitStatus() != 0 {
					t.Fatalf("%s untraced: %q %v (%v)", mode, plain, pws, err)
				}
				for _, tracer := range []string{"function_graph", "function"} {
					out := mode + "-" + tracer + ".dat"
					got, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + out}, args...)
					if got != plain || ws != pws {
						t.Fatalf("%s %s: traced %q %v; untraced %q %v", mode, tracer, got, ws, plain, pws)
					}
					tr := trRead(t, filepath.Join(dir, out))
					trCheckComplete(t, tr, 1)
					s := trSymbols(t, tr, prog)
					if len(tr.Threads) != 1 || tr.Threads[0].Lost != 0 {
						t.Fatalf("%s %s: %d threads", mode, tracer, len(tr.Threads))
					}
					th := tr.Threads[0]
					if tracer == "function" {
						n := map[string]int{}
						for _, r := range th.Recs {
							n[s.name(r.IP)]++
						}
						if n["leaf"] != nleaf || n["between"] != nbetween || n["co_main"] != 3 {
							t.Errorf("%s function: leaf %d between %d co_main %d, want %d %d 3",
								mode, n["leaf"], n["between"], n["co_main"], nleaf, nbetween)
						}
						continue
					}
					ent, unw, open := trGraph(t, th, s)
					if open != 0 {
						t.Errorf("%s: %d frames open at the end", mode, open)
					}
					// leaf and between never switch: every call has its own exit
					if ent["leaf"] != nleaf || unw["leaf"] != 0 || ent["between"] != nbetween || unw["between"] != 0 {
						t.Errorf("%s: leaf %d (%d unwound), between %d (%d unwound); want %d and %d, none unwound",
							mode, ent["leaf"], unw["leaf"], ent["between"], unw["between"], nleaf, nbetween)
					}
					if mode == "seen" {
						// level2 switches for even i only: 25 + 2*100 calls of the 450 do not
						if ent["level2"] != 450 || ent["level2"]-unw["level2"] != 225 || ent["co_main"] != 3 {
							t.Errorf("level2 %d, %d unwound; co_main %d; want 450, 225, 3", ent["level2"],
								unw["level2"], ent["co_main"])
						}
					}
				}
			}
		})
	}
}

// The trace clock: FTRACE_CLOCK=mono records CLOCK_MONOTONIC nanoseconds (clock 2, 1 ns
// per tick, no TSC rate); the default and FTRACE_CLOCK=tsc use the calibrated TSC (clock
// 1) when CPUID reports it invariant (Linux's constant_tsc + nonstop_tsc flags), else
// fall back to the monotonic clock. Either way: timestamps lie between start-up and
// finalisation, never go back on a thread, convert to wall-clock times within the run,
// and measure three 20 ms sleeps as 20 ms (± what a loaded machine adds).
func TestTracerClock(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_clock.c")
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	invariant := strings.Contains(string(cpuinfo), " constant_tsc") && strings.Contains(string(cpuinfo), " nonstop_tsc")
	for _, tc := range []struct {
		env   string
		clock uint32
	}{
		{"FTRACE_CLOCK=mono", 2},
		{"FTRACE_CLOCK=tsc", map[bool]uint32{true: 1, false: 2}[invariant]},
		{"", map[bool]uint32{true: 1, false: 2}[invariant]},
	} {
		name := "default"
		if tc.env != "" {
			name = strings.TrimPrefix(tc.env, "FTRACE_CLOCK=")
		}
		t.Run(name, func(t *testing.T) {
			env := []string{"FTRACE_TRACER=function_graph"}
			if tc.env != "" {
				env = append(env, tc.env)
			}
			before := time.Now()
			out, _ := trRun(t, dir, prog, env)
			after := time.Now()
			if out != "slept 3 times\n" {
				t.Fatalf("output %q", out)
			}
			tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
			trCheckComplete(t, tr, 1)
			if tr.Clock != tc.clock {
				t.Fatalf("clock %d, want %d (invariant TSC: %v)", tr.Clock, tc.clock, invariant)
			}
			switch tr.Clock {
			case 2:
				if tr.NsPerTick != 1 || tr.RefTicks != tr.RefMono || tr.TscHz != 0 {
					t.Errorf("monotonic clock: ns_per_tick %v, ref_ticks %d, ref_mono_ns %d, tsc_hz %d", tr.NsPerTick, tr.RefTicks, tr.RefMono, tr.TscHz)
				}
			case 1:
				if tr.NsPerTick < 0.05 || tr.NsPerTick > 5 || math.Abs(float64(tr.TscHz)*tr.NsPerTick/1e9-1) > 1e-3 {
					t.Errorf("TSC: ns_per_tick %v, tsc_hz %d", tr.NsPerTick, tr.TscHz)
				}
			}
			wall := func(ticks uint64) time.Time {
				ns := float64(tr.RefMono) + (float64(ticks)-float64(tr.RefTicks))*tr.NsPerTick
				return time.Unix(0, int64(ns)+int64(tr.RefReal)-int64(tr.RefMono))
			}
			// wall clock (CLOCK_REALTIME): allow for NTP slewing, not for nonsense
			slack := 50 * time.Millisecond
			if w := wall(tr.StartTicks); w.Before(before.Add(-slack)) || w.After(after.Add(slack)) {
				t.Errorf("start %v not within the run [%v, %v]", w, before, after)
			}
			if w := wall(tr.EndTicks); w.Before(before.Add(-slack)) || w.After(after.Add(slack)) {
				t.Errorf("end %v not within the run [%v, %v]", w, before, after)
			}
			if len(tr.Threads) != 1 {
				t.Fatalf("%d threads", len(tr.Threads))
			}
			s := trSymbols(t, tr, prog)
			ent, _, open := trGraph(t, tr.Threads[0], s) // checks that time never goes back
			if ent["nap"] != 3 || ent["leaf"] != 306 || open != 0 {
				t.Errorf("entries %v, %d open", ent, open)
			}
			var naps []time.Duration
			for _, r := range tr.Threads[0].Recs {
				if r.TS < tr.StartTicks || r.TS > tr.EndTicks {
					t.Errorf("record at %d outside [%d, %d]", r.TS, tr.StartTicks, tr.EndTicks)
				}
				if r.Type == 3 && s.name(r.IP) == "nap" {
					naps = append(naps, time.Duration(float64(r.TS-r.Aux)*tr.NsPerTick))
				}
			}
			for _, d := range naps {
				if d < 20*time.Millisecond || d > 200*time.Millisecond {
					t.Errorf("nap took %v, want 20 ms (and not much more)", d)
				}
			}
			t.Logf("clock %d, %.4f ns/tick, naps %v", tr.Clock, tr.NsPerTick, naps)
		})
	}
}

// Unwinders under function_graph: _Unwind_Backtrace and backtrace() called three traced
// frames deep see the same frames as without tracing (both are interposed: the real
// return addresses are put back for the duration of the call).
func TestTracerUnwinders(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_unwind.c")
	plain, pws := trRun(t, dir, prog, nil)
	lines := strings.Split(strings.TrimSpace(plain), "\n")
	// u3 u2 u1 main, then libc's start-up frames
	if len(lines) != 2 || strings.Count(lines[0], " ") < 5 || strings.Count(lines[1], " ") < 5 {
		t.Fatalf("untraced output %q", plain)
	}
	for _, tracer := range []string{"function_graph", "function"} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer})
		if out != plain || ws != pws {
			t.Errorf("%s: output %q, untraced %q", tracer, out, plain)
		}
	}
	out, _ := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_OUTPUT=g.dat"})
	if out != plain {
		t.Fatalf("graph: %q", out)
	}
	g := trRead(t, filepath.Join(dir, "g.dat"))
	ent, unw, open := trGraph(t, g.Threads[0], trSymbols(t, g, prog))
	if ent["u3"] != 1 || ent["u1"] != 1 || len(unw) != 0 || open != 0 {
		t.Errorf("graph entries %v unwound %v open %d", ent, unw, open)
	}
}

// trSubtreeWant derives, from a full function_graph trace of one thread, the entries a
// graph_function list `in` (nil: none) and a graph_notrace list `out` should leave: the
// calls with a function of `in` among themselves and their callers, less those with a
// function of `out` there.
func trSubtreeWant(t *testing.T, th *trThread, s *trSyms, in, out []string) map[string]int {
	t.Helper()
	has := func(list []string, name string) bool {
		for _, n := range list {
			if n == name {
				return true
			}
		}
		return false
	}
	want := map[string]int{}
	var stack []string
	for _, r := range th.Recs {
		switch r.Type {
		case 2:
			stack = append(stack, s.name(r.IP))
			inside, hidden := in == nil, false
			for _, n := range stack {
				inside = inside || has(in, n)
				hidden = hidden || has(out, n)
			}
			if inside && !hidden {
				want[stack[len(stack)-1]]++
			}
		case 3:
			stack = stack[:len(stack)-1]
		}
	}
	return want
}

// graph_function / graph_notrace (the kernel's set_graph_function / set_graph_notrace):
// only the subtrees of the first list are graphed, the subtrees of the second are left
// out, a longjmp out of a graph_function subtree ends it, and the first function of a
// subtree is at depth 0. What each case should record is derived from the full graph of
// the same run.
func TestTracerGraphSubtree(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_subtree.c")
	const output = "sink 52\n"
	run := func(env ...string) (*trThread, *trSyms) {
		t.Helper()
		out, ws := trRun(t, dir, prog, append([]string{"FTRACE_TRACER=function_graph"}, env...))
		if out != output || ws.ExitStatus() != 0 {
			t.Fatalf("%v: output %q, status %v", env, out, ws)
		}
		tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
		trCheckComplete(t, tr, 1)
		if len(tr.Threads) != 1 {
			t.Fatalf("%v: %d threads", env, len(tr.Threads))
		}
		return tr.Threads[0], trSymbols(t, tr, prog)
	}
	full, s := run()
	if ent, _, _ := trGraph(t, full, s); ent["outer"] != 2 || ent["hidden"] != 2 || ent["escape"] != 1 || ent["other"] != 3 {
		t.Fatalf("full graph: entries %v", ent)
	}
	for _, c := range []struct {
		in, out string
		depth0  string // the function every depth-0 entry must be ("": not checked)
	}{
		{"outer", "", "outer"},
		{"escape", "", "escape"}, // left by longjmp: nothing after it is graphed
		{"outer,escape", "", ""},
		{"", "hidden", ""},
		{"", "hidden,escape", ""},
		{"outer", "hidden", "outer"},
		{"inner", "leaf", "inner"},
		{"inner", "hidden", "inner"}, // inner under hidden is hidden too
	} {
		env := []string{"FTRACE_GRAPH_FUNCTION=" + c.in, "FTRACE_GRAPH_NOTRACE=" + c.out}
		th, s2 := run(env...)
		got, unw, open := trGraph(t, th, s2)
		var in, out []string
		if c.in != "" {
			in = strings.Split(c.in, ",")
		}
		if c.out != "" {
			out = strings.Split(c.out, ",")
		}
		want := trSubtreeWant(t, full, s, in, out)
		if fmt.Sprint(got) != fmt.Sprint(want) || open != 0 {
			t.Errorf("graph_function %q graph_notrace %q: entries %v (%d open), want %v", c.in, c.out, got, open, want)
		}
		if c.in == "escape" && unw["escape"] != 1 {
			t.Errorf("graph_function escape: unwound %v, want escape closed as unwound", unw)
		}
		for _, r := range th.Recs {
			if r.Type == 2 && r.Depth == 0 && c.depth0 != "" && s2.name(r.IP) != c.depth0 {
				t.Errorf("graph_function %q: %s at depth 0", c.in, s2.name(r.IP))
			}
		}
	}
	// a list none of whose functions exists graphs nothing, and says so once
	cmd := exec.Command(prog)
	cmd.Dir = dir
	cmd.Env = append(trCleanEnv(), "FTRACE_TRACER=function_graph", "FTRACE_GRAPH_FUNCTION=nosuch*")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil || string(out) != output {
		t.Fatalf("nosuch*: %v, output %q", err, out)
	}
	if n := strings.Count(stderr.String(), "no function matches graph_function 'nosuch*': nothing is graphed"); n != 1 {
		t.Errorf("nosuch*: message said %d times in:\n%s", n, stderr.String())
	}
	if tr := trRead(t, filepath.Join(dir, "ftrace.dat")); len(tr.Threads) != 0 {
		t.Errorf("nosuch*: %d threads recorded", len(tr.Threads))
	}

	// Lists changed while running (the C API; the control socket's commands call the same):
	// the tracer stays registered, so main's frame, open throughout, gets its exit.
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph"}, "live")
	if out != "live 0 0 0 0\n" || ws.ExitStatus() != 0 {
		t.Fatalf("live: output %q, status %v", out, ws)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	ent, unw, open := trGraph(t, tr.Threads[0], trSymbols(t, tr, prog))
	// all: main, other, inner, 5 leaf; filter other,leaf: other, 5 leaf (inner's too);
	// graph_function outer: outer, inner ×2 (its own, hidden's), hidden, 6 leaf;
	// all: other, inner, 5 leaf
	want := map[string]int{"main": 1, "other": 3, "outer": 1, "hidden": 1, "inner": 4, "leaf": 21}
	if fmt.Sprint(ent) != fmt.Sprint(want) || len(unw) != 0 || open != 0 || len(tr.Threads) != 1 {
		t.Errorf("live: entries %v (unwound %v, %d open), want %v", ent, unw, open, want)
	}
}

// A snapshot of a process with several threads holds every thread, each with what it had
// recorded and its name at the snapshot (main renames itself just before: the redis
// trial's snapshots named renamed threads by their first name), including when the
// buffers are full (the chunk walk used to step by the
// snapshot's trimmed sizes: it stopped after the first thread, or failed reading past the
// end of the file).
func TestTracerSnapshotThreads(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_threads.c")
	for _, kb := range []string{"16384", "64"} {
		for _, tracer := range []string{"function", "function_graph"} {
			snap := filepath.Join(dir, "snap.dat")
			out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_BUFFER_KB=" + kb, "FTRACE_NO_LOSS=1", "SNAP=" + snap})
			if out != "ret=7\n" || ws.ExitStatus() != 0 {
				t.Fatalf("%s %s KiB: output %q, status %v", tracer, kb, out, ws)
			}
			final, st := trRead(t, filepath.Join(dir, "ftrace.dat")), trRead(t, snap)
			if len(st.Threads) != 5 || len(final.Threads) != 5 {
				t.Fatalf("%s %s KiB: %d threads in the snapshot, %d in the final trace, want 5", tracer, kb, len(st.Threads), len(final.Threads))
			}
			for i, th := range st.Threads {
				f := final.Threads[i]
				if th.Name != f.Name || th.TID == st.PID && th.Name != "snapper" {
					t.Errorf("%s %s KiB: thread %d named %q in the snapshot, %q in the final trace", tracer, kb, th.TID, th.Name, f.Name)
				}
				// the workers had ended: the same records; main has recorded more since
				if th.TID != f.TID || (th.TID != st.PID && len(th.Recs) != len(f.Recs)) || len(th.Recs) > len(f.Recs) || len(th.Recs) == 0 {
					t.Errorf("%s %s KiB: snapshot thread %d has %d records, final thread %d %d", tracer, kb, th.TID, len(th.Recs), f.TID, len(f.Recs))
				}
			}
		}
	}
}

// A normal exit removes the control sockets that killed processes left behind (a dead
// pid's ftkit-PID.sock, or ftkit-PID.sock.new, the name it is bound under until it
// listens), and leaves those of live processes and other files alone.
func TestTracerSweepsStaleSockets(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_fib.c")
	run := t.TempDir()
	os.Chmod(run, 0o700) // the runtime uses only a private XDG_RUNTIME_DIR
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	bind := func(name string) string {
		t.Helper()
		p := filepath.Join(run, name)
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: p}); err != nil {
			t.Fatal(err)
		}
		return p // closed without unlink: what a killed process leaves
	}
	stale := bind(fmt.Sprintf("ftkit-%d.sock", gone.Process.Pid))
	staleNew := bind(fmt.Sprintf("ftkit-%d.sock.new", gone.Process.Pid)) // killed before it listened
	live := bind(fmt.Sprintf("ftkit-%d.sock", os.Getpid()))
	liveNew := bind(fmt.Sprintf("ftkit-%d.sock.new", os.Getpid()))
	other := bind("other-1.sock")
	if out, _ := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "XDG_RUNTIME_DIR=" + run}, "5"); out != "fib(5) = 5\n" {
		t.Fatalf("output %q", out)
	}
	for p, want := range map[string]bool{stale: false, staleNew: false, live: true, liveNew: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(run, "*")); len(m) != 3 {
		t.Errorf("left in the socket directory: %v", m)
	}
}

// A thread cancelled inside graphed frames: its output and the cleanup handler are as
// without tracing, and the frames the forced unwind left are closed as unwound when the
// thread exits (a balanced graph, nothing unfinished).
func TestTracerCancel(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_cancel.c")
	plain, pws := trRun(t, dir, prog, nil)
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph"})
	if out != plain || ws != pws || plain != "cleanup ran\njoined: canceled\n" {
		t.Fatalf("traced %q %v; plain %q %v", out, ws, plain, pws)
	}
	tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
	trCheckComplete(t, tr, 1)
	s := trSymbols(t, tr, prog)
	unwound := map[string]int{}
	for _, th := range tr.Threads {
		_, unw, open := trGraph(t, th, s)
		if open != 0 {
			t.Errorf("thread %d: %d frames open", th.TID, open)
		}
		for k, v := range unw {
			unwound[k] += v
		}
	}
	if len(tr.Threads) != 2 || fmt.Sprint(unwound) != fmt.Sprint(map[string]int{"body": 1, "mid": 1, "waiter": 1}) {
		t.Errorf("%d threads, unwound %v, want body, mid and waiter once", len(tr.Threads), unwound)
	}
}

// A function that tail-calls back into itself through untraced code is entered again at
// its own, already hooked, return-address slot: each entry is a call of its own (it was
// taken for a second graph user of the same call, recording four entries and one exit).
func TestTracerTailSelf(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_tailself.c")
	for _, filter := range []string{"f", ""} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph", "FTRACE_FILTER=" + filter})
		if out != "0\n" || ws.ExitStatus() != 0 {
			t.Fatalf("filter %q: output %q, status %v", filter, out, ws)
		}
		tr := trRead(t, filepath.Join(dir, "ftrace.dat"))
		ent, unw, open := trGraph(t, tr.Threads[0], trSymbols(t, tr, prog))
		want := map[string]int{"f": 4}
		if filter == "" {
			want = map[string]int{"main": 1, "f": 4, "g": 3}
		}
		if fmt.Sprint(ent) != fmt.Sprint(want) || len(unw) != 0 || open != 0 {
			t.Errorf("filter %q: entries %v, unwound %v, %d open; want %v", filter, ent, unw, open, want)
		}
		// each f nests in the one before (the same slot, returning in turn)
		for i, r := range tr.Threads[0].Recs {
			if r.Type == 2 && filter == "f" && int(r.Depth) != i {
				t.Errorf("filter f: entry %d at depth %d", i, r.Depth)
			}
		}
	}
}

// Snapshots taken while a thread records and flushes without pause: each holds, for that
// thread, exactly a prefix of what the final file holds (the staged records used to be
// copied after the file's, by when the thread had refilled the buffer with later ones).
func TestTracerSnapshotRace(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_snaprace.c")
	out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_BUFFER_KB=131072", "FTRACE_NO_LOSS=1"}, "4")
	if out != "snapshots 4 failed 0\n" || ws.ExitStatus() != 0 {
		t.Fatalf("output %q, status %v", out, ws)
	}
	final := trRead(t, filepath.Join(dir, "ftrace.dat"))
	worker := func(tr *trTrace) *trThread {
		for _, th := range tr.Threads {
			if th.TID != tr.PID {
				return th
			}
		}
		t.Fatalf("no worker thread in %d threads", len(tr.Threads))
		return nil
	}
	all := worker(final).Recs
	for i := 1; i <= 4; i++ {
		snap := worker(trRead(t, filepath.Join(dir, fmt.Sprintf("snap.%d", i)))).Recs
		if len(snap) > len(all) {
			t.Fatalf("snapshot %d: %d records, final %d", i, len(snap), len(all))
		}
		for k := range snap {
			if !reflect.DeepEqual(snap[k], all[k]) {
				t.Errorf("snapshot %d: record %d of %d differs from the final file's (ts %d, want %d)", i, k, len(snap), snap[k].TS, all[k].TS)
				break
			}
		}
	}
}

// A live flight recorder: `dump` writes the rings as they are (the newest events of each
// thread, older blocks overwritten), `clear` drops all but the block being filled.
func TestTracerRingLive(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	// the block counts below are in FUNC_NEAR events (8 bytes), not FUNC_AGAIN's 4
	p := trLive(t, dir, prog, "FTRACE_TRACER=function", "FTRACE_RING=256k", "FTRT_AGAIN=0")
	stdin, expect, ask := p.stdin, p.expect, p.ask
	ticks := func(name string) (int, uint64) {
		t.Helper()
		p := filepath.Join(dir, name)
		if r := ask("dump " + p); r != "ok "+p {
			t.Fatalf("dump: %q", r)
		}
		tr := trRead(t, p)
		s := trSymbols(t, tr, prog)
		n := 0
		for _, th := range tr.Threads {
			for _, r := range th.Recs {
				if s.name(r.IP) == "tick" {
					n++
				}
			}
		}
		d, _ := os.ReadFile(p)
		return n, binary.LittleEndian.Uint64(d[120:])
	}
	fmt.Fprintf(stdin, "call 5000\n")
	expect("done")
	if n, rb := ticks("d1.dat"); n != 5000 || rb != 256<<10 {
		t.Errorf("first dump: %d ticks (want 5000), ring_bytes %d", n, rb)
	}
	// 100000 ticks: 800 KB of FUNC_NEAR events, more than the ring's 4 blocks
	fmt.Fprintf(stdin, "call 100000\n")
	expect("done")
	if n, _ := ticks("d2.dat"); n < 2*65536/8-10 || n >= 4*65536/8 {
		t.Errorf("ring dump: %d ticks, want the newest 2-3 blocks' worth", n)
	}
	if r := ask("clear"); r != "ok" {
		t.Fatalf("clear: %q", r)
	}
	fmt.Fprintf(stdin, "call 10\n")
	expect("done")
	if n, _ := ticks("d3.dat"); n < 10 || n > 65536/8 {
		t.Errorf("after clear: %d ticks, want the 10 new ones and at most a block before", n)
	}
}

// The graph tracer's fused hot path (fgraph_fast.h) records what fgraph's generic paths
// record: for programs with longjmp, signal handlers, C++ exceptions, tail calls, fork,
// recursion past the shadow stack and pthread_exit, each thread's calls and exits (names,
// nesting, unwound flags) and its lost counts are the same with FTRT_GRAPH_FUSED=0.
func TestTracerGraphFused(t *testing.T) {
	cases := []struct {
		src  string
		args []string
		env  []string
	}{
		{"trace_longjmp.c", nil, nil},
		{"trace_cxx.cc", nil, nil},
		{"trace_misc.c", []string{"exit", "10000"}, nil},
		{"trace_threads.c", nil, nil},
		{"trace_tailself.c", nil, nil},
		{"trace_ucontext.c", nil, nil},
		{"trace_ucontext.c", []string{"raw"}, nil},
		// a depth limit, and a time filter every call lasts (each entry held back, then
		// written at its return) or none does (every return forgotten): the outcome of a
		// filter in between would hang on the machine's timing
		{"trace_longjmp.c", nil, []string{"FTRACE_GRAPH_DEPTH=3"}},
		{"trace_threads.c", nil, []string{"FTRACE_GRAPH_DEPTH=2"}},
		{"trace_longjmp.c", nil, []string{"FTRACE_TIME_FILTER=1ns"}},
		{"trace_cxx.cc", nil, []string{"FTRACE_TIME_FILTER=1ns"}},
		{"trace_tailself.c", nil, []string{"FTRACE_TIME_FILTER=1ns"}},
		{"trace_misc.c", []string{"exit", "10000"}, []string{"FTRACE_TIME_FILTER=1h"}},
		// graph_function: the calls inside a -G subtree (left by longjmp, exceptions)
		{"trace_longjmp.c", nil, []string{"FTRACE_GRAPH_FUNCTION=c2,s1"}},
		{"trace_cxx.cc", nil, []string{"FTRACE_GRAPH_FUNCTION=mid,replay_outer"}},
		{"trace_threads.c", nil, []string{"FTRACE_GRAPH_FUNCTION=worker", "FTRACE_GRAPH_DEPTH=3"}},
		{"trace_longjmp.c", nil, []string{"FTRACE_GRAPH_FUNCTION=c1", "FTRACE_GRAPH_NOTRACE=c3"}},
	}
	// one line per record: what it is, of which function, how deep; no times
	shape := func(tr *trTrace, s *trSyms) map[string]string {
		m := map[string]string{}
		for _, th := range tr.Threads {
			var b strings.Builder
			fmt.Fprintf(&b, "lost %d lost_depth %d\n", th.Lost, th.LostDepth)
			for _, r := range th.Recs {
				fmt.Fprintf(&b, "%d %d %s %d\n", r.Type, r.Flags, s.name(r.IP), r.Depth)
			}
			m[th.Name] += b.String()
		}
		return m
	}
	for _, tc := range cases {
		tc := tc
		t.Run(strings.Join(append([]string{tc.src}, tc.env...), ","), func(t *testing.T) {
			dir := t.TempDir()
			prog := trBuild(t, dir, tc.src)
			var got [2]map[string]string
			var outs [2]string
			for i, env := range [][]string{nil, {"FTRT_GRAPH_FUSED=0"}} {
				rdir := filepath.Join(dir, fmt.Sprint(i))
				if err := os.Mkdir(rdir, 0o755); err != nil {
					t.Fatal(err)
				}
				outs[i], _ = trRun(t, rdir, prog, append(append(env, tc.env...), "FTRACE_TRACER=function_graph"), tc.args...)
				tr := trRead(t, filepath.Join(rdir, "ftrace.dat"))
				trCheckComplete(t, tr, 1)
				got[i] = shape(tr, trSymbols(t, tr, prog))
			}
			if outs[0] != outs[1] {
				t.Errorf("output: fused %q, generic %q", outs[0], outs[1])
			}
			// the filters keep something (but for the filter no call lasts): equal empty
			// traces would prove nothing
			entries := 0
			for _, g := range got[0] {
				entries += strings.Count(g, "\n2 ")
			}
			if (entries == 0) != strings.Contains(strings.Join(tc.env, ","), "=1h") {
				t.Errorf("%d entries recorded", entries)
			}
			if len(got[0]) != len(got[1]) {
				t.Fatalf("threads: fused %d, generic %d", len(got[0]), len(got[1]))
			}
			for name, g := range got[1] {
				if f := got[0][name]; f != g {
					fl, gl := strings.Split(f, "\n"), strings.Split(g, "\n")
					for i := 0; i < len(fl) && i < len(gl); i++ {
						if fl[i] != gl[i] {
							t.Errorf("thread %s, line %d: fused %q, generic %q (%d and %d lines)",
								name, i, fl[i], gl[i], len(fl), len(gl))
							break
						}
					}
					if len(fl) != len(gl) {
						t.Errorf("thread %s: fused %d lines, generic %d", name, len(fl), len(gl))
					}
				}
			}
		})
	}
}

// Names of a library loaded later in the start-up lists: applied again at the dlopen, so a
// filter naming only the library's function traces it from then on (at start it matched
// nothing), a glob takes the library's functions too, notrace keeps its function out and a
// trigger on it fires (before, globs that matched nothing at start-up were dropped).
// buildDlfilter builds trace_dlfilter.c's program and its library libext.so in dir.
func buildDlfilter(t *testing.T, dir string) string {
	return trBuildWithLib(t, dir, "trace_dlfilter.c", "ext", false)
}

// trBuildWithLib builds runtime/tests/<src> twice through the real flow: with -DLIB as
// the shared library lib<lib>.so, and as the program prog, which links it (found next to
// it) if link, else may dlopen it.
func trBuildWithLib(t *testing.T, dir, src, lib string, link bool) string {
	t.Helper()
	testenv.Need(t, "gcc")
	rtlib, inc := testenv.Runtime(t)
	src = filepath.Join(testenv.Root(), "runtime", "tests", src)
	so := "lib" + lib + ".so"
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-fPIC", "-DLIB", "-c", src, "-o", lib+".o")
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), lib+".o")
	testenv.Run(t, dir, "gcc", "-shared", lib+".o", "-o", so)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), so)
	testenv.Run(t, dir, "gcc", "-O2", "-pg", "-mfentry", "-I", inc, "-c", src, "-o", "main.o")
	testenv.Run(t, dir, testenv.Tool(t, "recordmcount"), "main.o")
	args := []string{"main.o", "-rdynamic"}
	if link {
		args = append(args, "-L.", "-l"+lib, "-Wl,-rpath,$ORIGIN")
	}
	testenv.Run(t, dir, "gcc", append(args, "-L"+rtlib, "-lftrt", "-lpthread", "-ldl", "-o", "prog")...)
	testenv.Run(t, dir, testenv.Tool(t, "ftlink"), "prog")
	return filepath.Join(dir, "prog")
}

func TestTracerDlopenNames(t *testing.T) {
	dir := t.TempDir()
	prog := buildDlfilter(t, dir)
	plain, _ := trRun(t, dir, prog, nil, "./libext.so")
	for _, c := range []struct {
		env  []string
		want map[string]int // calls recorded per function (every function recorded listed)
	}{
		{[]string{"FTRACE_TRACER=function", "FTRACE_FILTER=ext_fn"}, map[string]int{"ext_fn": 3}},
		{[]string{"FTRACE_TRACER=function_graph", "FTRACE_FILTER=ext_fn"}, map[string]int{"ext_fn": 3}},
		{[]string{"FTRACE_TRACER=function", "FTRACE_FILTER=lib_*"}, map[string]int{"lib_local": 4, "lib_ext": 2}},
		{[]string{"FTRACE_TRACER=function_graph", "FTRACE_FILTER=lib_*,ext_fn", "FTRACE_NOTRACE=lib_ext"},
			map[string]int{"lib_local": 4, "ext_fn": 3}},
		{[]string{"FTRACE_TRACER=function_graph", "FTRACE_GRAPH_FUNCTION=ext_fn"}, map[string]int{"ext_fn": 3}},
		// a trigger on the library's function waits for it: recording stops at its first
		// call, so nothing after (lib_ext) is recorded
		{[]string{"FTRACE_TRACER=function", "FTRACE_FILTER=lib_*", "FTRACE_TRIGGER=ext_fn@traceoff"},
			map[string]int{"lib_local": 4}},
	} {
		t.Run(strings.Join(c.env, ","), func(t *testing.T) {
			trace := filepath.Join(dir, "t.dat")
			os.Remove(trace)
			out, ws := trRun(t, dir, prog, append(c.env, "FTRACE_OUTPUT="+trace), "./libext.so")
			if out != plain || ws.ExitStatus() != 0 {
				t.Fatalf("output %q (%v), untraced %q", out, ws, plain)
			}
			tr := trRead(t, trace)
			s := trSymbols(t, tr, prog)
			// the library's names: its symbols at the bias its map entry gives
			f, err := elf.Open(filepath.Join(dir, "libext.so"))
			if err != nil {
				t.Fatal(err)
			}
			libSyms, _ := f.Symbols()
			f.Close()
			name := func(ip uint64) string {
				for _, m := range tr.Maps {
					if filepath.Base(m.Path) == "libext.so" && ip >= m.Start && ip < m.End {
						for _, sym := range libSyms {
							if a := ip - m.Bias; a >= sym.Value && a < sym.Value+sym.Size {
								return sym.Name
							}
						}
					}
				}
				return s.name(ip)
			}
			got := map[string]int{}
			for _, th := range tr.Threads {
				for _, r := range th.Recs {
					if r.Type == 1 || r.Type == 2 { // a call (function) or an entry (graph)
						got[name(r.IP)]++
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("recorded %v, want %v", got, c.want)
			}
		})
	}
}

// FTRACE_FILTER takes names as the readers print them: C++ signatures with spaces and
// commas (a template's with its return type, or without), and a gcc clone by its source
// name (C and C++), as a glob too; a comma outside brackets still separates (the
// tinyxml2 and less trials).
func TestTracerFilterNames(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_names.cc")
	want, _ := trRun(t, dir, prog, nil, "3")
	ftrace := testenv.Tool(t, "ftrace")
	for _, c := range []struct{ filter, want string }{
		{"ns::two(char const*, int)", "ns::two(char const*, int)"},
		{"bool ns::pick<int>(char const*, char const*, int)", "bool ns::pick<int>(char const*, char const*, int)"},
		{"ns::pick<double>*", "bool ns::pick<double>(char const*, char const*, double)"},
		{"scaled", "scaled.constprop.0"},
		{"sca?ed", "scaled.constprop.0"},
		{"cscaled(int, int)", "cscaled(int, int) [clone .constprop.0]"},
		{"ns::two(char const*, int),scaled", "ns::two(char const*, int)|scaled.constprop.0"},
		// an operator template: its "<" opens brackets, its comma splits nothing
		{"ns::operator+<*", "ns::V ns::operator+<long, int>(ns::V, int)"},
		{"ns::operator+<long, int>,scaled", "ns::V ns::operator+<long, int>(ns::V, int)|scaled.constprop.0"},
		{"int>,scaled", "scaled.constprop.0"},
	} {
		out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function", "FTRACE_OUTPUT=n.dat", "FTRACE_FILTER=" + c.filter}, "3")
		if out != want || ws.ExitStatus() != 0 {
			t.Fatalf("%s: output %q (%v), untraced %q", c.filter, out, ws, want)
		}
		var got []string
		for _, l := range strings.Split(testenv.Run(t, dir, ftrace, "report", "n.dat"), "\n")[1:] {
			if f := strings.Fields(l); len(f) > 1 {
				name := strings.Join(f[1:], " ")
				got = append(got, name[:strings.LastIndex(name, " [")])
			}
		}
		sort.Strings(got)
		if strings.Join(got, "|") != c.want {
			t.Errorf("FTRACE_FILTER=%s: traced %q, want %q", c.filter, got, c.want)
		}
	}
}

// `size` live: a size limit for a trace that had none (an attached process has none: the
// leveldb trial's attach wrote 1.86 GB in 3 s): the trace stops near it and is finalised
// as a size limit, the program running on; a bad size is refused.
func TestTracerLiveSize(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_live.c")
	trace := filepath.Join(dir, "sz.dat")
	p := trLive(t, dir, prog, "FTRACE_TRACER=function", "FTRACE_OUTPUT="+trace)
	if r := p.ask("size lots"); !strings.HasPrefix(r, "error size needs a size") {
		t.Errorf("size lots: %q", r)
	}
	if r := p.ask("size 256K"); r != "ok" {
		t.Fatalf("size: %q", r)
	}
	fmt.Fprintf(p.stdin, "call 1000000\n") // 8 MB of FUNC_NEAR events
	p.expect("done")
	var st os.FileInfo
	for i := 0; i < 100; i++ { // the writer stops it at its next pass
		if st, _ = os.Stat(trace); st != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st == nil {
		t.Fatal("no finalised trace")
	}
	tr := trRead(t, trace)
	trCheckComplete(t, tr, 6) // FTKIT_R_SIZE
	if st.Size() > 4<<20 {
		t.Errorf("trace of %d bytes: the 256 KiB limit did not stop it", st.Size())
	}
	fmt.Fprintf(p.stdin, "call 10\n") // the program runs on
	p.expect("done")
}

// A daemon's start while the writer thread is in the middle of a batch (trace_forkbusy.c:
// a process records, forks and exits at once, 25 times): the child starts its own trace
// and writer, and must not flush the parent's half-built batch, whose chunks point into
// buffers the child unmaps (the redis trial: a daemon died of SIGSEGV in the writer in 5
// runs of 16). Every process exits 0 and leaves a complete trace.
func TestTracerForkWhileWriting(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_forkbusy.c")
	for _, tracer := range []string{"function", "function_graph"} {
		t.Run(tracer, func(t *testing.T) {
			out := filepath.Join(dir, tracer+".dat")
			got, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=" + out}, "25", "250000")
			if got != "ok 25\n" || ws.ExitStatus() != 0 {
				t.Fatalf("output %q, status %v", got, ws)
			}
			kids, _ := filepath.Glob(out + ".*")
			if len(kids) != 50 {
				t.Fatalf("%d child traces, want 50: %v", len(kids), kids)
			}
			for _, k := range kids {
				tr := trRead(t, k)
				trCheckComplete(t, tr, 1)
			}
		})
	}
}

// A tail call from a frame the graph tracer hooked, after a live switch to the function
// tracer (trace_switch_tail.c): the call's parent is return_to_handler by its return slot;
// the function tracer records the real one from the shadow stack (the re2 trial showed
// `g <- tail+0x2ce8f`, the runtime's own address).
func TestTracerSwitchTailCallParent(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_switch_tail.c")
	if dis, err := exec.Command("objdump", "-d", "--no-show-raw-insn", prog).Output(); err == nil &&
		!regexp.MustCompile(`(?m)^\s+[0-9a-f]+:\s+jmp\s+[0-9a-f]+ <g>`).Match(dis) {
		t.Skip("gcc made no tail call of g")
	}
	if out, ws := trRun(t, dir, prog, []string{"FTRACE_TRACER=function_graph"}); ws.ExitStatus() != 0 {
		t.Fatalf("output %q, status %v", out, ws)
	}
	d := testenv.Run(t, dir, testenv.Tool(t, "ftrace"), "dump", "ftrace.dat")
	if !regexp.MustCompile(`(?m)\sg <- main$`).MatchString(d) {
		t.Errorf("g's caller, want main:\n%s", d)
	}
}

// FUNC_AGAIN and ENTRY_AGAIN (format version 4): the function tracer writes a call whose
// function and parent an earlier call of the block had as one word, the graph tracer an
// entry of a function an earlier entry of the block entered. The same calls are recorded
// with and without them (FTRT_AGAIN=0), in under 60 % of the bytes (function tracer: fib
// about 4 bytes a call against 8) or 75 % (graph: 8 against 12) on programs that repeat
// their calls, threads and blocks cut every 64 KiB included (TestTracerSignalStorm has a
// library's calls between them).
func TestTracerFuncAgain(t *testing.T) {
	dir := t.TempDir()
	progs := []struct {
		prog string
		args []string
	}{
		{trBuild(t, dir, "trace_fib.c"), []string{"25"}},
		{trBuild(t, dir, "trace_threads.c"), nil},
	}
	for _, tracer := range []string{"function", "function_graph"} {
		for _, c := range progs {
			var recs [2][]string
			var bytes [2]uint64
			for i, env := range [][]string{nil, {"FTRT_AGAIN=0"}} {
				out := filepath.Join(dir, fmt.Sprintf("a%d.dat", i))
				trRun(t, dir, c.prog, append(env, "FTRACE_TRACER="+tracer, "FTRACE_NO_LOSS=1", "FTRACE_OUTPUT="+out), c.args...)
				tr := trRead(t, out)
				trCheckComplete(t, tr, 1)
				s := trSymbols(t, tr, c.prog)
				for _, th := range tr.Threads {
					if th.Lost != 0 {
						t.Errorf("%s %s: thread %d lost %d", tracer, filepath.Base(c.prog), th.TID, th.Lost)
					}
					for _, r := range th.Recs {
						parent := s.name(r.Aux) // the caller (libc's, at an address of this run, for main)
						if r.Type != 1 {
							parent = fmt.Sprint(r.Depth) // a graph record: its depth
						} else if strings.HasPrefix(parent, "0x") {
							parent = "elsewhere"
						}
						recs[i] = append(recs[i], fmt.Sprintf("%d %s %s", r.Type, s.name(r.IP), parent))
					}
				}
				sort.Strings(recs[i]) // threads in either order
				bytes[i] = tr.DataBytes
			}
			name := tracer + " " + filepath.Base(c.prog)
			if len(recs[0]) < 1000 || !reflect.DeepEqual(recs[0], recs[1]) {
				t.Errorf("%s: %d records with the pair cache, %d without, or not the same", name, len(recs[0]), len(recs[1]))
				for k := range recs[0] {
					if k < len(recs[1]) && recs[0][k] != recs[1][k] {
						t.Errorf("first difference: %q and %q", recs[0][k], recs[1][k])
						break
					}
				}
			}
			limit := uint64(60)
			if tracer != "function" {
				limit = 75
			}
			if bytes[0]*100 > bytes[1]*limit {
				t.Errorf("%s: %d bytes of events with the pair cache, %d without", name, bytes[0], bytes[1])
			}
			t.Logf("%s: %d records: %.2f bytes a record, %.2f without the pair cache", name, len(recs[0]),
				float64(bytes[0])/float64(len(recs[0])), float64(bytes[1])/float64(len(recs[1])))
		}
	}
}

// Fork children of a process whose tracer is nop (started so, or attached by `ftrace live`
// and never given a tracer): a child that traces nothing writes no trace (nginx's workers
// wrote two empty ones per reload after an attach); one that sets a tracer itself gets its
// trace from then on, named as fork children's are. With a tracer, both write theirs.
func TestTracerForkNop(t *testing.T) {
	dir := t.TempDir()
	prog := trBuild(t, dir, "trace_forknop.c")
	for _, tracer := range []string{"nop", "function"} {
		rdir := filepath.Join(dir, tracer)
		if err := os.Mkdir(rdir, 0o755); err != nil {
			t.Fatal(err)
		}
		out, ws := trRun(t, rdir, prog, []string{"FTRACE_TRACER=" + tracer, "FTRACE_OUTPUT=t.dat"})
		var quiet, qs, tracing, ts int
		if _, err := fmt.Sscanf(out, "quiet %d %d tracing %d %d\n", &quiet, &qs, &tracing, &ts); err != nil || qs != 0 || ts != 0 || ws.ExitStatus() != 0 {
			t.Fatalf("%s: output %q, status %v", tracer, out, ws)
		}
		trCheckComplete(t, trRead(t, filepath.Join(rdir, "t.dat")), 1)
		_, err := os.Stat(filepath.Join(rdir, fmt.Sprintf("t.dat.%d", quiet)))
		if tracer == "nop" && err == nil {
			t.Errorf("nop: the child that traces nothing wrote a trace")
		} else if tracer != "nop" && err != nil {
			t.Errorf("%s: the child's trace: %v", tracer, err)
		}
		tr := trRead(t, filepath.Join(rdir, fmt.Sprintf("t.dat.%d", tracing)))
		trCheckComplete(t, tr, 1)
		if n := trEntries(t, tr, prog, "work", 1); n != 2 {
			t.Errorf("%s: the child that set its tracer recorded %d calls of work, want 2", tracer, n)
		}
		if entries, _ := filepath.Glob(filepath.Join(rdir, "*")); tracer == "nop" && len(entries) != 2 {
			t.Errorf("nop: files %v, want the program's trace and the tracing child's", entries)
		}
	}
}
