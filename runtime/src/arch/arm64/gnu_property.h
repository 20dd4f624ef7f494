/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GNU property note of the runtime's assembly (arm64): GNU_PROPERTY_AARCH64_FEATURE_1_AND
 * with BTI (every target of an indirect branch starts with a landing pad: `bti c`) and PAC
 * (return addresses signed where the C code is built with -mbranch-protection=standard).
 * The linker gives a program a property only when every object has it: an object without
 * the note would turn BTI off for the whole program that links the runtime.
 */
#define FTRT_GNU_PROPERTY_BTI_PAC					\
	.pushsection .note.gnu.property, "a";				\
	.p2align 3;							\
	.word 4;		/* name size */				\
	.word 16;		/* descriptor size */			\
	.word 5;		/* NT_GNU_PROPERTY_TYPE_0 */		\
	.asciz "GNU";							\
	.word 0xc0000000;	/* GNU_PROPERTY_AARCH64_FEATURE_1_AND */	\
	.word 4;							\
	.word 3;		/* BTI | PAC */				\
	.word 0;							\
	.popsection
