package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
)

// The committed arm64 files must be what the generator writes.
func TestArmGeneratedFilesUpToDate(t *testing.T) {
	for name, want := range ArmFiles() {
		got, err := os.ReadFile(filepath.Join("..", "runtime", "src", "arch", "arm64", name))
		if err != nil {
			t.Fatalf("reading committed %s: %v", name, err)
		}
		if !bytes.Equal(got, []byte(want)) {
			t.Errorf("runtime/src/arch/arm64/%s differs from trampgen's output: run go generate ./trampgen", name)
		}
	}
}

// armAssemble assembles ftrace_arm64.S with the cross compiler; it returns .text and the
// addresses of its symbols.
func armAssemble(t *testing.T) ([]byte, map[string]uint64) {
	t.Helper()
	cc := "aarch64-linux-gnu-gcc"
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("%s not installed: cannot assemble the arm64 templates", cc)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "t.S")
	if err := os.WriteFile(src, []byte(ArmAssembly()), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, "t.o")
	if out, err := exec.Command(cc, "-I", filepath.Join("..", "runtime", "src", "arch", "arm64"), "-c", src, "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("assembling the arm64 templates: %v\n%s", err, out)
	}
	f, err := elf.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sec := f.Section(".text")
	text, err := sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	ss, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	syms := map[string]uint64{}
	for _, s := range ss {
		if int(s.Section) < len(f.Sections) && f.Sections[s.Section] == sec {
			syms[s.Name] = s.Value
		}
	}
	return text, syms
}

var armMem = regexp.MustCompile(`^(stp|ldp|str|ldr) ([xq]\d+|x29|x30|xzr), (?:([xq]\d+|x29|x30|xzr), )?\[sp(?:, ?#(-?\w+))?\]$`)

// TestArmTemplatesDecode decodes each arm64 caller with arm64asm and checks what the
// runtime and the tracers rely on: the frame is allocated and freed once (sp stays 16-byte
// aligned), x0-x8 and q0-q7 are saved at the offsets of struct ftrace_regs and restored
// from them, the caller's frame record {x29, x9} lies at the entry sp - 16 (so x9, the
// traced function's return address, is at sp - 8: the return slot) and x30 is reloaded
// from that slot, the markers hold adrp + ldr (op slot), bl (callback) and ret x9.
func TestArmTemplatesDecode(t *testing.T) {
	text, syms := armAssemble(t)
	for _, tm := range []struct {
		start, opPtr, call, end string
		callops                 bool
	}{
		{"ftrace_caller", "ftrace_caller_op_ptr", "ftrace_call", "ftrace_caller_end", false},
		{"ftrace_caller_novec", "ftrace_caller_novec_op_ptr", "ftrace_novec_call", "ftrace_caller_novec_end", false},
		{"ftrace_regs_caller", "ftrace_regs_caller_op_ptr", "ftrace_regs_call", "ftrace_regs_caller_end", false},
		{"ftrace_callops_caller", "ftrace_callops_caller_op_ptr", "ftrace_callops_caller_call", "ftrace_callops_caller_end", true},
		{"ftrace_callops_caller_novec", "ftrace_callops_caller_novec_op_ptr", "ftrace_callops_caller_novec_call",
			"ftrace_callops_caller_novec_end", true},
	} {
		t.Run(tm.start, func(t *testing.T) {
			start, end := syms[tm.start], syms[tm.end]
			if end <= start || end+4 > uint64(len(text)) {
				t.Fatalf("bad template bounds %#x..%#x", start, end)
			}
			saved, loaded := map[string]int{}, map[string]int{}
			frame, restored := 0, false
			var insns []string
			for pc := start; pc <= end; pc += 4 {
				in, err := arm64asm.Decode(text[pc : pc+4])
				if err != nil {
					t.Fatalf("%#x: %v (%08x)", pc, err, binary.LittleEndian.Uint32(text[pc:]))
				}
				s := strings.ToLower(arm64asm.GNUSyntax(in))
				insns = append(insns, s)
				switch {
				case strings.HasPrefix(s, "sub sp, sp, #"):
					if frame != 0 {
						t.Errorf("%#x: second frame allocation %q", pc, s)
					}
					frame = armImm(t, s[len("sub sp, sp, #"):])
				case strings.HasPrefix(s, "add sp, sp, #"):
					if armImm(t, s[len("add sp, sp, #"):]) != frame {
						t.Errorf("%#x: %q does not free the %d-byte frame", pc, s, frame)
					}
					restored = true
				case strings.Contains(s, "sp") && !armMem.MatchString(s) && !strings.HasPrefix(s, "add x") && s != "mov x3, sp":
					t.Errorf("%#x: unexpected use of sp: %q", pc, s)
				}
				armCountMem(t, s, saved, loaded)
				if tm.callops {
					// copied whole into the arena: nothing pc-relative may leave it
					switch in.Op {
					case arm64asm.ADR, arm64asm.ADRP, arm64asm.B, arm64asm.BL:
						t.Errorf("%#x: pc-relative %q in a template copied whole", pc, s)
					case arm64asm.LDR:
						if _, lit := in.Args[1].(arm64asm.PCRel); lit {
							t.Errorf("%#x: literal load %q in a template copied whole", pc, s)
						}
					}
				}
				switch {
				case tm.callops && pc == syms[tm.opPtr]:
					// the slot: (x30 & ~7) - 16, x30 = the site's bl + 4; then the cell
					var seq []string
					for i := uint64(0); i < 3; i++ {
						in, _ := arm64asm.Decode(text[pc+4*i : pc+4*i+4])
						seq = append(seq, strings.ToLower(arm64asm.GNUSyntax(in)))
					}
					want := []string{"and x2, x30, #0xfffffffffffffff8", "ldur x2, [x2,#-16]", "ldr x2, [x2]"}
					if strings.Join(seq, "; ") != strings.Join(want, "; ") {
						t.Errorf("op_ptr marker: %q, want %q", seq, want)
					}
				case tm.callops && pc == syms[tm.call]:
					prev, _ := arm64asm.Decode(text[pc-4 : pc])
					if s != "blr x10" || strings.ToLower(arm64asm.GNUSyntax(prev)) != "ldr x10, [x2]" {
						t.Errorf("call marker: %q after %q, want blr x10 after ldr x10, [x2] (ops->func)", s, arm64asm.GNUSyntax(prev))
					}
				case pc == syms[tm.opPtr]:
					next, _ := arm64asm.Decode(text[pc+4 : pc+8])
					if !strings.HasPrefix(s, "adrp x2,") || !strings.HasPrefix(strings.ToLower(arm64asm.GNUSyntax(next)), "ldr x2, [x2") {
						t.Errorf("op_ptr marker: %q then %q, want adrp x2 + ldr x2, [x2, ...]", s, arm64asm.GNUSyntax(next))
					}
				case pc == syms[tm.call]:
					if in.Op != arm64asm.BL {
						t.Errorf("call marker: %q, want bl", s)
					}
				case pc == end:
					if s != "ret x9" {
						t.Errorf("end marker: %q, want ret x9", s)
					}
				}
			}
			if frame != ArmFrameTotal || frame%16 != 0 || !restored {
				t.Errorf("frame %d bytes (restored %v), want %d", frame, restored, ArmFrameTotal)
			}
			want := func(tab map[string]int, what string, keys ...string) {
				for _, k := range keys {
					if tab[k] == 0 {
						t.Errorf("%s: nothing %s %s\n%s", tm.start, what, k, strings.Join(insns, "\n"))
					}
				}
			}
			var regs []string
			for i := 0; i <= 8; i++ {
				regs = append(regs, fmt.Sprintf("x%d@%d", i, ArmRegOff(fmt.Sprintf("x%d", i))))
			}
			for i := 0; i < 8; i++ {
				regs = append(regs, fmt.Sprintf("q%d@%d", i, ArmQBase+16*i))
			}
			want(saved, "saves", regs...)
			want(loaded, "restores", regs...)
			want(saved, "saves", fmt.Sprintf("x29@%d", ArmRecCaller), fmt.Sprintf("x9@%d", ArmRecCaller+8),
				fmt.Sprintf("x29@%d", ArmRegOff("fp")), fmt.Sprintf("x30@%d", ArmRecSite+8), fmt.Sprintf("x30@%d", ArmRegOff("ip")))
			want(loaded, "restores", fmt.Sprintf("x30@%d", ArmRecCaller+8), fmt.Sprintf("x9@%d", ArmRegOff("ip")),
				fmt.Sprintf("x29@%d", ArmRegOff("fp")))
			// the regs caller enters a direct trampoline the callbacks set: x9 = the
			// function's return address, x30 = where it resumes, the frame freed
			divert := strings.Join([]string{fmt.Sprintf("ldr x16, [sp,#%d]", ArmRegOff("direct")), "cbz x16,",
				fmt.Sprintf("ldr x9, [sp,#%d]", ArmRecCaller+8), fmt.Sprintf("ldr x30, [sp,#%d]", ArmRegOff("ip")),
				fmt.Sprintf("ldr x29, [sp,#%d]", ArmRegOff("fp")), fmt.Sprintf("add sp, sp, #0x%x", ArmFrameTotal), "br x16"}, "|")
			var flat []string
			for _, s := range insns {
				if strings.HasPrefix(s, "cbz x16,") {
					s = "cbz x16,"
				}
				flat = append(flat, s)
			}
			if got := strings.Contains(strings.Join(flat, "|"), divert); got != (tm.start == "ftrace_regs_caller") {
				t.Errorf("diversion into a direct trampoline: %v, want it in the regs caller only\n%s", got, strings.Join(insns, "\n"))
			}
			if ArmRecCaller+16 != ArmFrameTotal {
				t.Errorf("the caller's frame record is not at the entry sp - 16")
			}
		})
	}
}

// armCountMem counts the registers instruction s stores to or loads from [sp, #off], in
// saved or loaded by "reg@off" (a register stored twice, x29 and x30, keeps both).
func armCountMem(t *testing.T, s string, saved, loaded map[string]int) {
	t.Helper()
	m := armMem.FindStringSubmatch(s)
	if m == nil {
		return
	}
	off := 0
	if m[4] != "" {
		off = armImm(t, m[4])
	}
	size := 8
	if m[2][0] == 'q' {
		size = 16
	}
	tab := saved
	if m[1][0] == 'l' {
		tab = loaded
	}
	tab[fmt.Sprintf("%s@%d", m[2], off)]++
	if m[3] != "" {
		tab[fmt.Sprintf("%s@%d", m[3], off+size)]++
	}
}

func armImm(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	if err != nil {
		t.Fatalf("immediate %q: %v", s, err)
	}
	return int(v)
}

// The frame header matches the generator's layout, and the arm64 struct ftrace_pt_regs
// (runtime/include/ftrace_regs_arm64.h) lists the same fields.
func TestArmHeader(t *testing.T) {
	h := ArmHeader()
	for _, f := range ArmRegFields {
		if !strings.Contains(h, fmt.Sprintf("#define FTRT_FRAME_%s %d\n", strings.ToUpper(f), ArmRegOff(f))) {
			t.Errorf("no FTRT_FRAME_%s in the header", strings.ToUpper(f))
		}
	}
	if ArmFrameSize%16 != 0 || ArmQBase%16 != 0 {
		t.Errorf("frame %d, q0 at %d: not 16-byte aligned", ArmFrameSize, ArmQBase)
	}
}

// The arm64 entry/exit template, decoded: copied whole into clones, so every branch and
// address it computes stays inside it; the block marker is the four movz/movk of x16 the
// runtime fills; the frame is freed as allocated, and it ends with ret x9 (the caller,
// from the frame record) after the function was entered by ret, not blr (BTI).
func TestArmFexitTemplate(t *testing.T) {
	text, syms := armAssemble(t)
	start, data, end := syms["ftrace_direct_fexit"], syms["ftrace_direct_fexit_data"], syms["ftrace_direct_fexit_end"]
	if !(start < data && data < end) || end+4 > uint64(len(text)) {
		t.Fatalf("bad template bounds %#x %#x %#x", start, data, end)
	}
	var insns []string
	frame := 0
	for pc := start; pc <= end; pc += 4 {
		in, err := arm64asm.Decode(text[pc : pc+4])
		if err != nil {
			t.Fatalf("%#x: %v", pc, err)
		}
		s := strings.ToLower(arm64asm.GNUSyntax(in))
		insns = append(insns, s)
		for _, arg := range in.Args {
			if rel, ok := arg.(arm64asm.PCRel); ok {
				if dst := int64(pc) + int64(rel); dst < int64(start) || dst > int64(end) {
					t.Errorf("%#x: %q leaves the template", pc, s)
				}
			}
		}
		switch {
		case in.Op == arm64asm.ADRP || in.Op == arm64asm.BL:
			t.Errorf("%#x: %q in a template copied whole", pc, s)
		case strings.HasPrefix(s, "sub sp, sp, #"):
			frame += armImm(t, s[len("sub sp, sp, #"):])
		case strings.HasPrefix(s, "add sp, sp, #"):
			frame -= armImm(t, s[len("add sp, sp, #"):])
		case in.Op == arm64asm.BLR && s != "blr x10":
			t.Errorf("%#x: %q: only the callbacks are called by blr", pc, s)
		}
	}
	want := []string{"mov x16, #0x0", "movk x16, #0x0, lsl #16", "movk x16, #0x0, lsl #32", "movk x16, #0x0, lsl #48"}
	at := int(data-start) / 4
	if got := strings.Join(insns[at:at+4], "; "); got != strings.Join(want, "; ") {
		t.Errorf("data marker: %q, want %q", got, strings.Join(want, "; "))
	}
	all := strings.Join(insns, "\n")
	for _, w := range []string{"hint #0x22" /* bti c */, "stp x29, x9, [sp,#-16]!", "adr x30,", "ret x16", "mov sp, x29", "ldp x29, x9, [sp],#16"} {
		if !strings.Contains(all, w) {
			t.Errorf("no %q in the template:\n%s", w, all)
		}
	}
	if insns[len(insns)-1] != "ret x9" {
		t.Errorf("ends with %q, want ret x9", insns[len(insns)-1])
	}
	if frame != afxSize {
		t.Errorf("the sub/add of sp leave %d bytes, want the %d-byte frame that mov sp, x29 frees", frame, afxSize)
	}
}

// The arm64 multi-ops callers, decoded: the pieces the runtime copies (prologue, segment,
// epilogue, fallback) hold the markers it re-aims (adrp + ldr x2 of the op slot and cbz x2
// ending the prologue, the segment's four movz/movk of x2 and its bl, ret x9 at the end, b
// ending the fallback) and no other branch leaves its piece; the frame is ftrace_caller's
// at sp + ArmMultiBase (x0-x8, q0-q7 and the frame records at the same offsets from it),
// with x19 and x20 kept below it and restored before each path frees it; each segment
// passes x0 = ip (x20), x1 = the parent (x19), x3 = the frame.
func TestArmMultiTemplatesDecode(t *testing.T) {
	text, syms := armAssemble(t)
	const b = ArmMultiBase
	for _, tm := range []struct {
		name string
		full bool
	}{{"ftrace_multi_caller", false}, {"ftrace_multi_caller_novec", false}, {"ftrace_regs_multi_caller", true}} {
		t.Run(tm.name, func(t *testing.T) {
			n := tm.name
			start, opPtr, seg, segOp, call, done, end, fb, fbEnd := syms[n], syms[n+"_op_ptr"], syms[n+"_seg"],
				syms[n+"_seg_op"], syms[n+"_call"], syms[n+"_done"], syms[n+"_end"], syms[n+"_fallback"], syms[n+"_fallback_end"]
			if !(start < opPtr && opPtr+12 == seg && seg < segOp && segOp < call && call < done && done < end &&
				end+4 == fb && fb < fbEnd) || fbEnd > uint64(len(text)) {
				t.Fatalf("markers out of order: %#x %#x %#x %#x %#x %#x %#x %#x %#x", start, opPtr, seg, segOp, call, done, end, fb, fbEnd)
			}
			dec := func(pc uint64) (arm64asm.Inst, string) {
				in, err := arm64asm.Decode(text[pc : pc+4])
				if err != nil {
					t.Fatalf("%#x: %v (%08x)", pc, err, binary.LittleEndian.Uint32(text[pc:]))
				}
				return in, strings.ToLower(arm64asm.GNUSyntax(in))
			}
			pieces := [][2]uint64{{start, seg}, {seg, done}, {done, end + 4}, {fb, fbEnd}}
			markers := map[uint64]bool{opPtr: true, opPtr + 8: true, call: true, fbEnd - 4: true}
			saved, loaded := map[string]int{}, map[string]int{}
			frees, x19back := 0, 0
			var insns []string
			for _, p := range pieces {
				for pc := p[0]; pc < p[1]; pc += 4 {
					in, s := dec(pc)
					insns = append(insns, s)
					for _, arg := range in.Args {
						if rel, ok := arg.(arm64asm.PCRel); ok && !markers[pc] {
							if dst := int64(pc) + int64(rel); dst < int64(p[0]) || dst >= int64(p[1]) {
								t.Errorf("%#x: %q leaves its piece", pc, s)
							}
						}
					}
					switch {
					case strings.HasPrefix(s, "sub sp, sp, #"):
						if pc > opPtr || armImm(t, s[len("sub sp, sp, #"):]) != b+ArmFrameTotal {
							t.Errorf("%#x: %q, want one sub sp, sp, #%d in the prologue", pc, s, b+ArmFrameTotal)
						}
					case strings.HasPrefix(s, "add sp, sp, #"):
						if armImm(t, s[len("add sp, sp, #"):]) != b+ArmFrameTotal {
							t.Errorf("%#x: %q does not free the frame", pc, s)
						}
						if prev, ps := dec(pc - 4); prev.Op != arm64asm.LDP || ps != "ldp x19, x20, [sp]" {
							t.Errorf("%#x: the frame is freed after %q, not after x19 and x20 come back", pc, ps)
						}
						frees++
					case s == "ldp x19, x20, [sp]":
						x19back++
					}
					if p[0] != fb {
						armCountMem(t, s, saved, loaded)
					}
				}
			}
			// markers
			if _, s := dec(opPtr); !strings.HasPrefix(s, "adrp x2,") {
				t.Errorf("op_ptr: %q, want adrp x2", s)
			}
			if _, s := dec(opPtr + 4); !strings.HasPrefix(s, "ldr x2, [x2") {
				t.Errorf("op_ptr + 4: %q, want ldr x2, [x2, ...]", s)
			}
			if in, s := dec(seg - 4); in.Op != arm64asm.CBZ || !strings.HasPrefix(s, "cbz x2,") {
				t.Errorf("the prologue ends with %q, want cbz x2", s)
			}
			want := []string{"mov x2, #0x0", "movk x2, #0x0, lsl #16", "movk x2, #0x0, lsl #32", "movk x2, #0x0, lsl #48"}
			var got []string
			for i := uint64(0); i < 4; i++ {
				_, s := dec(segOp + 4*i)
				got = append(got, s)
			}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Errorf("seg_op: %q, want %q", got, want)
			}
			if in, s := dec(call); in.Op != arm64asm.BL {
				t.Errorf("call: %q, want bl", s)
			}
			if _, s := dec(end); s != "ret x9" {
				t.Errorf("end: %q, want ret x9", s)
			}
			if in, s := dec(fbEnd - 4); in.Op != arm64asm.B {
				t.Errorf("the fallback ends with %q, want b", s)
			}
			var segText []string
			for pc := seg; pc < done; pc += 4 {
				_, s := dec(pc)
				segText = append(segText, s)
			}
			for _, w := range []string{"mov x0, x20", "mov x1, x19", fmt.Sprintf("add x3, sp, #0x%x", b)} {
				if !strings.Contains(strings.Join(segText, "|"), w) {
					t.Errorf("segment %q lacks %q", segText, w)
				}
			}
			// the frame
			var regs []string
			for i := 0; i <= 8; i++ {
				regs = append(regs, fmt.Sprintf("x%d@%d", i, b+ArmRegOff(fmt.Sprintf("x%d", i))))
			}
			for i := 0; i < 8; i++ {
				regs = append(regs, fmt.Sprintf("q%d@%d", i, b+ArmQBase+16*i))
			}
			for _, r := range append(regs, fmt.Sprintf("x29@%d", b+ArmRecCaller), fmt.Sprintf("x9@%d", b+ArmRecCaller+8),
				fmt.Sprintf("x30@%d", b+ArmRegOff("ip")), "x19@0", "x20@8") {
				if saved[r] == 0 {
					t.Errorf("nothing saves %s\n%s", r, strings.Join(insns, "\n"))
				}
			}
			for _, r := range append(regs, fmt.Sprintf("x30@%d", b+ArmRecCaller+8), fmt.Sprintf("x9@%d", b+ArmRegOff("ip"))) {
				if loaded[r] == 0 {
					t.Errorf("nothing restores %s", r)
				}
			}
			wantFrees := 2 // the epilogue and the fallback
			if tm.full {
				wantFrees = 3 // and the diversion into a direct trampoline
			}
			if frees != wantFrees || x19back != wantFrees {
				t.Errorf("%d frees of the frame, %d restores of x19/x20, want %d", frees, x19back, wantFrees)
			}
		})
	}
}
