/* A stack trace through code that keeps no frame pointers: %rbp points at words that are
   no return addresses (data that follows a call opcode; code that follows none). The
   function tracer's walk must stop there (x86-64). */
#include <stdio.h>

volatile long sink;
/* a call opcode in data: the word after it looks like a return address but is no code */
static unsigned char fake_code[16] = { 0x90, 0x90, 0x90, 0xe8, 0, 0, 0, 0, 0x90 };
static unsigned long fake_frame[2];

__attribute__((noinline)) void victim(void) { sink++; }

__attribute__((noinline)) void bad_fp(int how)
{
	fake_frame[0] = (unsigned long)&fake_frame[0] + 64;	/* a next frame further up */
	fake_frame[1] = how ? (unsigned long)victim + 3 : (unsigned long)(fake_code + 8);
	__asm__ volatile("push %%rbp\n\tmov %0, %%rbp\n\tcall victim\n\tpop %%rbp"
			 : : "r"(fake_frame)
			 : "memory", "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11");
}

int main(void)
{
	bad_fp(0);
	bad_fp(1);
	printf("%ld\n", sink);
	return 0;
}
