package main

import "fmt"

// Ready direct trampolines (register_ftrace_direct): entered by the call at a traced
// function's site, as if the function had called them first; see docs/runtime.md.

// The per-site call counter: an open-addressed table of CountSlots {site, count} pairs in
// .bss, indexed by (site * CountMult) >> CountShift; a site claims an empty slot with
// lock cmpxchg, probing at most CountProbes slots; calls of sites finding no slot are
// counted in ftrt_direct_count_lost.  The C reader (ftrace_direct_count_read) probes the
// same way, with the constants of ftrace_frame.h.
const (
	CountSlots  = 4096
	CountMult   = 0x61c88647 // fits imul's sign-extended imm32
	CountShift  = 20
	CountProbes = 32
)

// The entry/exit trampoline's block (struct ftrt_direct_block in ftrace_tramp.c): the
// clone's movabs at ftrace_direct_fexit_data loads its address.
const (
	blockEntry    = 0
	blockExit     = 8
	blockData     = 16
	blockInflight = 24
)

// StackArgWords is how many 8-byte words of stack-passed arguments the entry/exit
// trampoline copies for the function it calls (arguments past the six in registers).
const StackArgWords = 16

// Frame of the entry/exit trampoline, from its aligned %rsp: the six argument registers
// (the unsigned long args[6] passed to the callbacks), %rax, %r10, xmm0..xmm7, the block,
// the function's return value (rax, rdx, xmm0, xmm1).
const (
	fxArgs   = 0
	fxRAX    = 48
	fxR10    = 56
	fxXMM    = 64
	fxBlock  = 192
	fxRetRAX = 200
	fxRetRDX = 208
	fxRetX0  = 224
	fxRetX1  = 240
	fxSize   = 256
)

var argRegs = []string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}

// directTrampolines emits ftrace_direct_count and the template ftrace_direct_fexit.
func (a *asm) directTrampolines() {
	// ftrace_direct_count: registers it uses are saved (the traced function's arguments,
	// %rax for variadic calls); %r11 and the flags are free at a function's entry.
	a.fn("ftrace_direct_count")
	for _, r := range []string{"rax", "rcx", "rdx", "rsi"} {
		a.l("pushq %%%s", r)
	}
	a.l("movq 32(%%rsp), %%r11") // the site's return address
	a.l("subq $5, %%r11")        // the site
	a.l("imulq $%#x, %%r11, %%rcx", CountMult)
	a.l("shrq $%d, %%rcx", CountShift)
	a.l("andl $%d, %%ecx", CountSlots-1)
	a.l("shll $4, %%ecx") // 16-byte slots
	a.l("leaq ftrt_direct_counts(%%rip), %%rdx")
	a.l("movl $%d, %%esi", CountProbes)
	a.raw("1:\n")
	a.l("movq (%%rdx,%%rcx), %%rax")
	a.l("cmpq %%r11, %%rax")
	a.l("je 3f")
	a.l("testq %%rax, %%rax")
	a.l("jnz 2f")
	a.l("lock cmpxchgq %%r11, (%%rdx,%%rcx)") // claim the empty slot (%rax is 0)
	a.l("je 3f")
	a.l("cmpq %%r11, %%rax") // claimed meanwhile: by this site?
	a.l("je 3f")
	a.raw("2:\n")
	a.l("addl $16, %%ecx")
	a.l("andl $%#x, %%ecx", (CountSlots-1)<<4)
	a.l("decl %%esi")
	a.l("jnz 1b")
	a.l("lock incq ftrt_direct_count_lost(%%rip)")
	a.l("jmp 4f")
	a.raw("3:\n")
	a.l("lock incq 8(%%rdx,%%rcx)")
	a.raw("4:\n")
	for _, r := range []string{"rsi", "rdx", "rcx", "rax"} {
		a.l("popq %%%s", r)
	}
	a.label("ftrace_direct_count_end")
	a.l("ret")
	a.l(".size ftrace_direct_count, .-ftrace_direct_count")

	// ftrace_direct_fexit: calls entry(ip, parent_ip, args, data), the traced function
	// itself (its body after the site, with the arguments and a copy of StackArgWords
	// stack words), exit(ip, parent_ip, args, retval, data), then returns the function's
	// result to its caller. The runtime clones it per (entry, exit, data) block; the block
	// also counts the threads inside the function, so the clone is freed only when none is.
	a.fn("ftrace_direct_fexit")
	a.l("pushq %%rbp")
	a.l("movq %%rsp, %%rbp") // 8(%rbp): site + 5, 16(%rbp): parent ip, 24(%rbp): stack args
	a.l("subq $%d, %%rsp", fxSize)
	a.l("andq $-16, %%rsp") // the callbacks and the function get an ABI-aligned stack
	for i, r := range argRegs {
		a.l("movq %%%s, %d(%%rsp)", r, fxArgs+8*i)
	}
	a.l("movq %%rax, %d(%%rsp)", fxRAX)
	a.l("movq %%r10, %d(%%rsp)", fxR10)
	for i := 0; i < 8; i++ {
		a.l("movaps %%xmm%d, %d(%%rsp)", i, fxXMM+16*i)
	}
	a.label("ftrace_direct_fexit_data")
	a.l("movabsq $0, %%rax") // 48 b8 imm64: the block, set in clones
	a.l("movq %%rax, %d(%%rsp)", fxBlock)
	a.l("lock incq %d(%%rax)", blockInflight)
	a.l("movq 8(%%rbp), %%rdi")
	a.l("subq $5, %%rdi")
	a.l("movq 16(%%rbp), %%rsi")
	a.l("movq %%rsp, %%rdx")
	a.l("movq %d(%%rax), %%rcx", blockData)
	a.l("call *%d(%%rax)", blockEntry)
	for i := 0; i < 8; i++ {
		a.l("movaps %d(%%rsp), %%xmm%d", fxXMM+16*i, i)
	}
	a.l("subq $%d, %%rsp", 8*StackArgWords)
	for i := 0; i < StackArgWords; i++ {
		a.l("movq %d(%%rbp), %%r11", 24+8*i)
		a.l("movq %%r11, %d(%%rsp)", 8*i)
	}
	off := 8 * StackArgWords
	for i, r := range argRegs {
		a.l("movq %d(%%rsp), %%%s", off+fxArgs+8*i, r)
	}
	a.l("movq %d(%%rsp), %%rax", off+fxRAX)
	a.l("movq %d(%%rsp), %%r10", off+fxR10)
	a.l("movq 8(%%rbp), %%r11")
	a.l("call *%%r11") // the function, past its site
	a.l("addq $%d, %%rsp", 8*StackArgWords)
	a.l("movq %%rax, %d(%%rsp)", fxRetRAX)
	a.l("movq %%rdx, %d(%%rsp)", fxRetRDX)
	a.l("movaps %%xmm0, %d(%%rsp)", fxRetX0)
	a.l("movaps %%xmm1, %d(%%rsp)", fxRetX1)
	a.l("movq 8(%%rbp), %%rdi")
	a.l("subq $5, %%rdi")
	a.l("movq 16(%%rbp), %%rsi")
	a.l("movq %%rsp, %%rdx")
	a.l("movq %%rax, %%rcx")
	a.l("movq %d(%%rsp), %%rax", fxBlock)
	a.l("movq %d(%%rax), %%r8", blockData)
	a.l("call *%d(%%rax)", blockExit)
	a.l("movq %d(%%rsp), %%rax", fxBlock)
	a.l("lock decq %d(%%rax)", blockInflight)
	a.l("movq %d(%%rsp), %%rax", fxRetRAX)
	a.l("movq %d(%%rsp), %%rdx", fxRetRDX)
	a.l("movaps %d(%%rsp), %%xmm0", fxRetX0)
	a.l("movaps %d(%%rsp), %%xmm1", fxRetX1)
	a.l("movq %%rbp, %%rsp")
	a.l("popq %%rbp")
	a.l("leaq 8(%%rsp), %%rsp") // drop the return into the function: back to its caller
	a.label("ftrace_direct_fexit_end")
	a.l("ret")
	a.l(".size ftrace_direct_fexit, .-ftrace_direct_fexit")

	// The counter table (zero pages until used).
	a.l(".bss")
	a.l(".p2align 6")
	a.l(".globl ftrt_direct_counts")
	a.l(".type ftrt_direct_counts, @object")
	a.label("ftrt_direct_counts")
	a.l(".zero %d", 16*CountSlots)
	a.l(".size ftrt_direct_counts, %d", 16*CountSlots)
	a.l(".globl ftrt_direct_count_lost")
	a.l(".type ftrt_direct_count_lost, @object")
	a.label("ftrt_direct_count_lost")
	a.l(".zero 8")
	a.l(".size ftrt_direct_count_lost, 8")
	a.l(".text")
}

// directHeader returns the constants ftrace_frame.h gives the C side.
func directHeader() string {
	return fmt.Sprintf("#define FTRT_DIRECT_COUNT_SLOTS %d\n#define FTRT_DIRECT_COUNT_MULT %#xul\n"+
		"#define FTRT_DIRECT_COUNT_SHIFT %d\n#define FTRT_DIRECT_COUNT_PROBES %d\n"+
		"#define FTRT_DIRECT_BLOCK_INFLIGHT %d\n#define FTRT_DIRECT_STACK_WORDS %d\n",
		CountSlots, CountMult, CountShift, CountProbes, blockInflight, StackArgWords)
}
