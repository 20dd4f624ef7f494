package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// The committed files must be what the generator writes.
func TestGeneratedFilesUpToDate(t *testing.T) {
	for name, want := range Files() {
		got, err := os.ReadFile(filepath.Join("..", "runtime", "src", "arch", "x86_64", name))
		if err != nil {
			t.Fatalf("reading committed %s: %v", name, err)
		}
		if !bytes.Equal(got, []byte(want)) {
			t.Errorf("runtime/src/arch/x86_64/%s differs from trampgen's output: run go generate ./trampgen", name)
		}
	}
}

type template struct {
	start, opPtr, call, end string
	divert                  bool // regs exits: a second ret (into a direct trampoline) and its jump
}

var templates = []template{
	{"ftrace_caller", "ftrace_caller_op_ptr", "ftrace_call", "ftrace_caller_end", false},
	{"ftrace_caller_novec", "ftrace_caller_novec_op_ptr", "ftrace_novec_call", "ftrace_caller_novec_end", false},
	{"ftrace_regs_caller", "ftrace_regs_caller_op_ptr", "ftrace_regs_call", "ftrace_regs_caller_end", true},
	{"ftrace_multi_caller", "ftrace_multi_caller_op_ptr", "ftrace_multi_caller_call", "ftrace_multi_caller_end", false},
	{"ftrace_multi_caller_novec", "ftrace_multi_caller_novec_op_ptr", "ftrace_multi_caller_novec_call",
		"ftrace_multi_caller_novec_end", false},
	{"ftrace_regs_multi_caller", "ftrace_regs_multi_caller_op_ptr", "ftrace_regs_multi_caller_call",
		"ftrace_regs_multi_caller_end", true},
}

func assemble(t *testing.T) (text []byte, syms map[string]uint64) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "t.S")
	if err := os.WriteFile(src, []byte(Assembly()), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, "t.o")
	if out, err := exec.Command("gcc", "-c", src, "-o", obj).CombinedOutput(); err != nil {
		t.Fatalf("assembling the template: %v\n%s", err, out)
	}
	f, err := elf.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sec := f.Section(".text")
	if sec == nil {
		t.Fatal("no .text")
	}
	text, err = sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	ss, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	syms = map[string]uint64{}
	for _, s := range ss {
		if int(s.Section) < len(f.Sections) && f.Sections[s.Section] == sec {
			syms[s.Name] = s.Value
		}
	}
	return text, syms
}

// stackDelta is how an instruction moves %rsp (negative = grows), and whether it is
// one we understand; any other write to %rsp fails the test.
func stackDelta(t *testing.T, in x86asm.Inst) int {
	rsp := func(a x86asm.Arg) bool { r, ok := a.(x86asm.Reg); return ok && r == x86asm.RSP }
	switch in.Op {
	case x86asm.PUSH, x86asm.PUSHFQ:
		return -8
	case x86asm.POP, x86asm.POPFQ:
		return 8
	case x86asm.SUB, x86asm.ADD:
		if rsp(in.Args[0]) {
			imm, ok := in.Args[1].(x86asm.Imm)
			if !ok {
				t.Fatalf("non-immediate stack adjustment %v", in)
			}
			if in.Op == x86asm.SUB {
				return -int(imm)
			}
			return int(imm)
		}
	case x86asm.LEA:
		if rsp(in.Args[0]) {
			m := in.Args[1].(x86asm.Mem)
			if m.Base != x86asm.RSP || m.Index != 0 {
				t.Fatalf("unexpected lea into rsp: %v", in)
			}
			return int(int32(m.Disp))
		}
	case x86asm.MOV:
		if rsp(in.Args[0]) {
			t.Fatalf("unexpected mov into rsp: %v", in)
		}
	}
	return 0
}

func TestTemplatesDecode(t *testing.T) {
	text, syms := assemble(t)
	for _, tp := range templates {
		t.Run(tp.start, func(t *testing.T) {
			for _, n := range []string{tp.start, tp.opPtr, tp.call, tp.end} {
				if _, ok := syms[n]; !ok {
					t.Fatalf("symbol %s missing", n)
				}
			}
			start, end := syms[tp.start], syms[tp.end]
			boundaries := map[uint64]bool{}
			depth := 0 // bytes pushed since entry; %rsp % 16 == 0 on entry
			sawCall := false
			var incAt, decAt []uint64 // ftrt_cb_depth (%fs:) increments, decrements
			jumps, rets := 0, 0
			divertDepth := -1 // stack depth where the divert path branches off
			pc := start
			for pc < end {
				in, err := x86asm.Decode(text[pc:], 64)
				if err != nil {
					t.Fatalf("decode at %#x: %v", pc, err)
				}
				boundaries[pc] = true
				if in.Op == x86asm.RET {
					// the regs exits: only after the call, the normal return before
					// the divert path's
					if rets++; !tp.divert || rets > 1 || pc < syms[tp.call] || divertDepth < 0 {
						t.Fatalf("return at %#x before the end marker", pc)
					}
					if depth != 0 {
						t.Errorf("stack not balanced at the return at %#x: %d bytes", pc, depth)
					}
					depth = divertDepth // what follows is the divert path
				}
				if in.Op == x86asm.CALL {
					if pc != syms[tp.call] {
						t.Errorf("unexpected call at %#x", pc)
					}
					if depth%16 != 0 {
						t.Errorf("stack misaligned at the call: %d bytes pushed", depth)
					}
					sawCall = true
				}
				if m, ok := in.Args[0].(x86asm.Mem); ok && m.Segment == x86asm.FS {
					switch in.Op {
					case x86asm.INC:
						incAt = append(incAt, pc)
					case x86asm.DEC:
						decAt = append(decAt, pc)
					}
				}
				// A jump must stay inside the clone ([start, end]): clones copy only that.
				if strings.HasPrefix(in.Op.String(), "J") {
					jumps++
					if rel, ok := in.Args[0].(x86asm.Rel); ok {
						to := pc + uint64(in.Len) + uint64(int64(rel))
						if (to < start || to > end) && to != syms[tp.start+"_fallback"] {
							t.Errorf("jump at %#x leaves the template (to %#x)", pc, to)
						}
						if to <= syms[tp.call] {
							t.Errorf("jump at %#x goes backwards or onto the call", pc)
						}
						if pc > syms[tp.call] && tp.divert {
							divertDepth = depth
						}
					}
				}
				depth -= stackDelta(t, in)
				pc += uint64(in.Len)
			}
			if pc != end {
				t.Fatalf("end marker %#x is not at an instruction boundary (reached %#x)", end, pc)
			}
			if !sawCall {
				t.Error("no call between start and end")
			}
			// the divert path's ret pops the direct trampoline's address from the
			// slot below the return address
			wantDepth := 0
			if tp.divert {
				wantDepth = 8
			}
			if depth != wantDepth {
				t.Errorf("stack at the end marker: %d bytes pushed, want %d", depth, wantDepth)
			}
			for _, n := range []string{tp.opPtr, tp.call} {
				if !boundaries[syms[n]] {
					t.Errorf("%s (%#x) is not at an instruction boundary", n, syms[n])
				}
			}
			wantJumps := 1
			if tp.divert {
				wantJumps = 2
			}
			if jumps != wantJumps {
				t.Errorf("%d jumps, want %d (skipping the call when the op slot is cleared, diverting into a direct trampoline)", jumps, wantJumps)
			}
			// The counter brackets the op slot load and the call (ftrt_sync_callbacks).
			if len(incAt) != 1 || len(decAt) != 1 || incAt[0] > syms[tp.opPtr] ||
				decAt[0] < syms[tp.call] {
				t.Errorf("ftrt_cb_depth raised at %#x, lowered at %#x; want once before op_ptr %#x and once after the call %#x",
					incAt, decAt, syms[tp.opPtr], syms[tp.call])
			}
			op := text[syms[tp.opPtr]:]
			if !bytes.Equal(op[:3], []byte{0x48, 0x8b, 0x15}) {
				t.Errorf("op_ptr is % x, want 48 8b 15 rel32", op[:7])
			}
			if text[syms[tp.call]] != 0xe8 {
				t.Errorf("call marker is % x, want e8 rel32", text[syms[tp.call]:syms[tp.call]+5])
			}
			in, err := x86asm.Decode(text[end:], 64)
			if err != nil || in.Op != x86asm.RET {
				t.Errorf("instruction at the end marker is %v (%v), want ret", in, err)
			}
		})
	}
	// The multi-ops templates: the slot test's jz rel32 ends the prologue and lands on
	// _done; a segment is the argument reloads, movabs $ops, %rdx and the call, and
	// nothing in it jumps (the runtime repeats it).
	for _, n := range []string{"ftrace_multi_caller", "ftrace_multi_caller_novec", "ftrace_regs_multi_caller"} {
		seg, op, call, done := syms[n+"_seg"], syms[n+"_seg_op"], syms[n+"_call"], syms[n+"_done"]
		fb, fbEnd := syms[n+"_fallback"], syms[n+"_fallback_end"]
		if !bytes.Equal(text[seg-6:seg-4], []byte{0x0f, 0x84}) ||
			seg+uint64(int32(uint32(text[seg-4])|uint32(text[seg-3])<<8|uint32(text[seg-2])<<16|uint32(text[seg-1])<<24)) != fb {
			t.Errorf("%s: the prologue does not end with jz rel32 to _fallback: % x", n, text[seg-6:seg])
		}
		// the fallback: lowers the counter, pops the frame, calls nothing and ends with
		// jmp rel32 (to the shared caller) with the stack as at entry
		if fb != syms[n+"_end"]+1 || text[fbEnd-5] != 0xe9 {
			t.Errorf("%s: fallback at %#x (end+1 = %#x), last instruction % x", n, fb, syms[n+"_end"]+1, text[fbEnd-5:fbEnd])
		}
		depth, decs := FrameSize, 0
		for pc := fb; pc < fbEnd; {
			in, err := x86asm.Decode(text[pc:], 64)
			if err != nil {
				t.Fatalf("decode at %#x: %v", pc, err)
			}
			if m, ok := in.Args[0].(x86asm.Mem); ok && m.Segment == x86asm.FS && in.Op == x86asm.DEC {
				decs++
			}
			if in.Op == x86asm.CALL || in.Op == x86asm.RET || (strings.HasPrefix(in.Op.String(), "J") && pc+uint64(in.Len) != fbEnd) {
				t.Errorf("%s: %v in the fallback", n, in)
			}
			depth -= stackDelta(t, in)
			pc += uint64(in.Len)
		}
		if depth != 0 || decs != 1 {
			t.Errorf("%s: fallback leaves %d bytes on the stack, lowers the counter %d times", n, depth, decs)
		}
		if !bytes.Equal(text[op:op+2], []byte{0x48, 0xba}) || call+5 != done || !(seg < op && op < call) {
			t.Errorf("%s: segment [%#x %#x) has movabs at %#x, call at %#x", n, seg, done, op, call)
		}
		for pc := seg; pc < done; {
			in, err := x86asm.Decode(text[pc:], 64)
			if err != nil {
				t.Fatalf("decode at %#x: %v", pc, err)
			}
			if strings.HasPrefix(in.Op.String(), "J") || in.Op == x86asm.PUSH || in.Op == x86asm.POP {
				t.Errorf("%s: %v in the segment", n, in)
			}
			pc += uint64(in.Len)
		}
	}
	for _, n := range []string{"ftrace_stub", "__fentry__"} {
		if text[syms[n]] != 0xc3 {
			t.Errorf("%s is % x, want a plain ret", n, text[syms[n]])
		}
	}
}

// The generated header and the assembly agree on the frame.
func TestHeaderOffsets(t *testing.T) {
	if FrameSize%16 != 0 {
		t.Fatalf("frame size %d not a multiple of 16", FrameSize)
	}
	if RegOff("flags") != regsBase+regsBytes-8 || len(RegFields)*8 != regsBytes {
		t.Fatalf("register fields do not fill the register area")
	}
	if xmmBase%16 != 0 {
		t.Fatalf("xmm area at %d is not 16-byte aligned", xmmBase)
	}
}

// TestNovecTemplate: ftrace_caller_novec is ftrace_caller less the 16 moves of xmm0..xmm7
// and the frame fields ip and sp (the parent ip is read straight from the stack), with the
// full field saying it is a lean frame, instruction for instruction; and it touches no
// vector register.
func TestNovecTemplate(t *testing.T) {
	text, syms := assemble(t)
	decode := func(start, end string) (all []string) {
		for pc := syms[start]; pc < syms[end]; {
			in, err := x86asm.Decode(text[pc:], 64)
			if err != nil {
				t.Fatalf("decode %s at %#x: %v", start, pc, err)
			}
			s := x86asm.GNUSyntax(in, 0, nil)
			// relative operands differ between the copies; compare the opcode for those
			if in.Op == x86asm.CALL || strings.HasPrefix(in.Op.String(), "J") || strings.Contains(s, "rip") {
				s = in.Op.String()
			}
			all = append(all, s)
			pc += uint64(in.Len)
		}
		return all
	}
	field := func(name string) string { return fmt.Sprintf("%#x(%%rsp)", RegOff(name)) }
	parent := fmt.Sprintf("%#x(%%rsp)", FrameSize+8)
	var want []string
	xmm, fields := 0, 0
	for _, s := range decode("ftrace_caller", "ftrace_caller_end") {
		switch {
		case strings.Contains(s, "%xmm"):
			xmm++
		case strings.HasSuffix(s, ","+field("ip")) || strings.HasSuffix(s, ","+field("sp")):
			fields++
		case s == "movq $0x0,"+field("full"):
			want = append(want, fmt.Sprintf("movq $%#x,%s", leanFull, field("full")))
		case s == "lea "+parent+",%rsi":
		case s == "mov (%rsi),%rsi":
			want = append(want, "mov "+parent+",%rsi")
		default:
			want = append(want, s)
		}
	}
	if xmm != 16 || fields != 2 {
		t.Fatalf("ftrace_caller has %d xmm moves and %d frame field stores, want 16 and 2", xmm, fields)
	}
	novec := decode("ftrace_caller_novec", "ftrace_caller_novec_end")
	if strings.Join(novec, "\n") != strings.Join(want, "\n") {
		t.Errorf("novec template is not the plain one less its xmm and frame field moves:\n%s\n---\n%s",
			strings.Join(novec, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range novec {
		if strings.Contains(s, "mm") {
			t.Errorf("novec template touches a vector register: %s", s)
		}
	}
}

// The ready direct trampolines: ftrace_direct_count writes no register but the ones it
// saves and restores (and %r11, free at a function's entry), keeps the stack balanced and
// stays inside itself; ftrace_direct_fexit calls only through registers or its block (its
// clones run anywhere), has the block movabs at its data marker and leaves the
// callee-saved registers but %rbp (pushed and popped) alone.
func TestDirectTemplates(t *testing.T) {
	text, syms := assemble(t)
	written := func(in x86asm.Inst) (x86asm.Reg, bool) {
		r, ok := in.Args[0].(x86asm.Reg)
		switch in.Op {
		case x86asm.CMP, x86asm.TEST, x86asm.PUSH, x86asm.JE, x86asm.JNE, x86asm.JMP, x86asm.CALL, x86asm.RET:
			return 0, false
		}
		return r, ok
	}
	start, end := syms["ftrace_direct_count"], syms["ftrace_direct_count_end"]
	allowed := map[x86asm.Reg]bool{x86asm.RAX: true, x86asm.EAX: true, x86asm.RCX: true, x86asm.ECX: true,
		x86asm.RDX: true, x86asm.EDX: true, x86asm.RSI: true, x86asm.ESI: true, x86asm.R11: true}
	depth := 0
	for pc := start; pc < end; {
		in, err := x86asm.Decode(text[pc:], 64)
		if err != nil {
			t.Fatalf("ftrace_direct_count: decode at %#x: %v", pc, err)
		}
		if r, ok := written(in); ok && !allowed[r] && in.Op != x86asm.POP {
			t.Errorf("ftrace_direct_count writes %v: %v", r, in)
		}
		if in.Op == x86asm.CALL || in.Op == x86asm.RET {
			t.Errorf("ftrace_direct_count: %v before its end", in)
		}
		if rel, ok := in.Args[0].(x86asm.Rel); ok {
			if to := pc + uint64(in.Len) + uint64(int64(rel)); to < start || to > end {
				t.Errorf("ftrace_direct_count: jump at %#x leaves it", pc)
			}
		}
		depth -= stackDelta(t, in)
		pc += uint64(in.Len)
	}
	if depth != 0 {
		t.Errorf("ftrace_direct_count: %d bytes left on the stack", depth)
	}
	if text[end] != 0xc3 {
		t.Errorf("ftrace_direct_count does not end with ret")
	}

	start, end = syms["ftrace_direct_fexit"], syms["ftrace_direct_fexit_end"]
	if d := syms["ftrace_direct_fexit_data"]; !bytes.Equal(text[d:d+2], []byte{0x48, 0xb8}) {
		t.Errorf("data marker is % x, want movabs (48 b8)", text[d:d+10])
	}
	calls, boundary := 0, false
	for pc := start; pc < end; {
		in, err := x86asm.Decode(text[pc:], 64)
		if err != nil {
			t.Fatalf("ftrace_direct_fexit: decode at %#x: %v", pc, err)
		}
		if pc == syms["ftrace_direct_fexit_data"] {
			boundary = true
		}
		switch in.Op {
		case x86asm.CALL:
			calls++
			if _, rel := in.Args[0].(x86asm.Rel); rel {
				t.Errorf("ftrace_direct_fexit: relative call %v (clones move)", in)
			}
		case x86asm.RET:
			t.Errorf("ftrace_direct_fexit: ret before its end")
		}
		if strings.HasPrefix(in.Op.String(), "J") {
			t.Errorf("ftrace_direct_fexit: jump %v", in)
		}
		if m, ok := in.Args[1].(x86asm.Mem); ok && m.Base == x86asm.RIP {
			t.Errorf("ftrace_direct_fexit: rip-relative %v (clones move)", in)
		}
		if r, ok := written(in); ok {
			switch r {
			case x86asm.RBX, x86asm.R12, x86asm.R13, x86asm.R14, x86asm.R15:
				t.Errorf("ftrace_direct_fexit writes callee-saved %v", r)
			case x86asm.RBP:
				if src, _ := in.Args[1].(x86asm.Reg); in.Op != x86asm.POP && src != x86asm.RSP {
					t.Errorf("ftrace_direct_fexit writes %%rbp: %v", in)
				}
			}
		}
		pc += uint64(in.Len)
	}
	if calls != 3 || !boundary {
		t.Errorf("ftrace_direct_fexit: %d calls (want entry, the function, exit), data marker on a boundary: %v", calls, boundary)
	}
}

// The CALL_OPS caller is ftrace_caller with another ops load: the same bytes before the
// op_ptr marker (frame, saved registers, counter raised) and after the callback call
// (counter lowered, restore, return); between them the slot at (site - 8) & ~7, the cell,
// the ops and an indirect call of ops->func, skipped when the ops is NULL. Copied whole into
// each arena, so nothing in it may be RIP-relative or leave it.
func TestCallopsTemplate(t *testing.T) {
	text, syms := assemble(t)
	for _, c := range []struct{ n, base, baseCall string }{
		{"ftrace_callops_caller", "ftrace_caller", "ftrace_call"},
		{"ftrace_callops_caller_novec", "ftrace_caller_novec", "ftrace_novec_call"},
	} {
		n := c.n
		start, op, call, end := syms[n], syms[n+"_op_ptr"], syms[n+"_call"], syms[n+"_end"]
		cs, cop, ccall := syms[c.base], syms[c.base+"_op_ptr"], syms[c.baseCall]
		if !bytes.Equal(text[start:op], text[cs:cop]) {
			t.Errorf("%s: prologue differs from %s's", n, c.base)
		}
		if !bytes.Equal(text[call:call+2], []byte{0xff, 0x12}) {
			t.Errorf("%s: call marker is % x, want ff 12 (call *(%%rdx))", n, text[call:call+2])
		}
		if !bytes.Equal(text[call+2:end+1], text[ccall+5:syms[c.base+"_end"]+1]) {
			t.Errorf("%s: epilogue differs from %s's", n, c.base)
		}
		// the frame last, as the callers pass it
		want := []string{"LEA RDX, [RDI-0x8]", "AND RDX, -0x8", "MOV RDX, [RDX]", "MOV RDX, [RDX]",
			"MOV RCX, RSP", "TEST RDX, RDX"}
		pc := op
		for i, w := range want {
			in, err := x86asm.Decode(text[pc:], 64)
			if err != nil {
				t.Fatalf("decode at %#x: %v", pc, err)
			}
			if got := in.String(); got != w {
				t.Errorf("%s: op load instruction %d is %q, want %q", n, i, got, w)
			}
			pc += uint64(in.Len)
		}
		in, err := x86asm.Decode(text[pc:], 64)
		if err != nil || in.Op != x86asm.JE || pc+uint64(in.Len)+uint64(int64(in.Args[0].(x86asm.Rel))) != call+2 {
			t.Errorf("%s: no jz over the call after the op load: %v", n, in)
		}
		if pc+uint64(in.Len) != call {
			t.Errorf("%s: the call does not follow the jz", n)
		}
		for pc := start; pc < end; {
			in, err := x86asm.Decode(text[pc:], 64)
			if err != nil {
				t.Fatalf("decode at %#x: %v", pc, err)
			}
			for _, a := range in.Args {
				if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.RIP {
					t.Errorf("%s: RIP-relative operand at %#x: %v", n, pc, in)
				}
			}
			pc += uint64(in.Len)
		}
	}
	// ftrace_callops_set_novec: what the lean caller runs for a set: it may use only
	// %rbx, %r12, %r13, %r14 (saved and restored) and the argument registers its callbacks
	// get (the frame in %rcx), never a vector register; the stack as at entry + 40 at the
	// callback call (entered at 8 mod 16: aligned there); one indirect call.
	start, end := syms["ftrace_callops_set_novec"], syms["ftrace_callops_set_novec_end"]
	depth, calls := 0, 0
	for pc := start; pc < end; {
		in, err := x86asm.Decode(text[pc:], 64)
		if err != nil {
			t.Fatalf("decode at %#x: %v", pc, err)
		}
		for _, a := range in.Args {
			r, isReg := a.(x86asm.Reg)
			m, isMem := a.(x86asm.Mem)
			bad := func(r x86asm.Reg) bool {
				return r >= x86asm.X0 && r <= x86asm.X15
			}
			if (isReg && bad(r)) || (isMem && (bad(m.Base) || bad(m.Index))) {
				t.Errorf("set_novec: %v refers to a vector register", in)
			}
			if isReg && r != x86asm.RBX && r != x86asm.R12 && r != x86asm.R13 && r != x86asm.R14 &&
				r != x86asm.RDI && r != x86asm.RSI && r != x86asm.RDX && r != x86asm.RCX && r != x86asm.RSP {
				t.Errorf("set_novec: %v uses %v", in, r)
			}
		}
		if in.Op == x86asm.CALL {
			calls++
			if depth != 40 {
				t.Errorf("set_novec: %d bytes pushed at the call, want 40", depth)
			}
		}
		depth -= stackDelta(t, in)
		pc += uint64(in.Len)
	}
	if depth != 0 || calls != 1 || text[end] != 0xc3 {
		t.Errorf("set_novec: %d bytes left on the stack, %d calls, end % x", depth, calls, text[end])
	}
}
