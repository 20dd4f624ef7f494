// Package mcountloc finds __fentry__/mcount call sites in object code and encodes, decodes
// and rewrites the __mcount_loc call-site tables described in docs/table-format.md.
package mcountloc

import (
	"encoding/binary"
	"fmt"
)

// TableSection is the name of the call-site table section (in objects and linked files).
const TableSection = "__mcount_loc"

// EntrySize is the size in bytes of one table entry.
const EntrySize = 8

// Magic values in the last two bytes of an entry.
const (
	MagicRecorded uint16 = 0xF7CA // written by recordmcount, not yet processed by ftlink
	MagicLinked   uint16 = 0xF7CB // verified, nop'ed and sorted by ftlink
)

// Kind is the form of the instruction(s) at a site: a call to the hook, or the nops gcc's
// -fpatchable-function-entry leaves at a function's entry.
type Kind uint8

const (
	KindNone     Kind = 0
	KindCallRel  Kind = 1 // e8 rel32
	KindCallGOT  Kind = 2 // ff 15 rel32: call *sym@GOTPCREL(%rip)
	KindCallAddr Kind = 3 // 67 e8 rel32: a GOT call relaxed by the linker
	// KindNops: Len bytes of nops at the function's entry (after its landing pad), listed
	// in __patchable_function_entries: x86-64 nops of any length, aarch64 `nop` words.
	KindNops Kind = 4
	// KindBL: a 4-byte `bl` to the hook: ppc64le `bl _mcount` after `mflr r0` at the local
	// entry point (gcc -pg -mprofile-kernel), recorded; aarch64's `bl _mcount` of gcc -pg
	// is found and refused (never in an aarch64 table).
	KindBL Kind = 5
	// KindBrasl: s390x `brasl %r0, __fentry__` (c0 05 + rel32 in halfwords, 6 bytes) of
	// gcc -pg -mfentry; ftlink writes `brcl 0, 0` (c0 04 00 00 00 00) over it.
	KindBrasl Kind = 6
)

// The kind byte of an entry holds the form in its low 3 bits, the landing-pad bit and the
// size of the nop area before the function in 4-byte units (docs/table-format.md).
const (
	kindFormMask = 0x07
	kindPad      = 0x08
	kindPreShift = 4
	// MaxPre is the largest area before a function an entry can describe, in bytes.
	MaxPre = 15 * 4
)

func (k Kind) String() string {
	switch k {
	case KindCallRel:
		return "e8"
	case KindCallGOT:
		return "ff15"
	case KindCallAddr:
		return "67e8"
	case KindNops:
		return "nops"
	case KindBL:
		return "bl"
	case KindBrasl:
		return "brasl"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Len is the length of the call instruction of that form (0 for KindNops: the entry says).
func (k Kind) Len() int {
	switch k {
	case KindCallRel:
		return 5
	case KindCallGOT, KindCallAddr:
		return 6
	case KindBL:
		return 4
	case KindBrasl:
		return 6
	}
	return 0
}

// Entry is one decoded table entry.
type Entry struct {
	Rel  int32 // site address - entry address
	Len  uint8
	Kind Kind
	// Pad: a 4-byte landing pad (endbr64, aarch64 bti c/jc) lies between the function's
	// entry point and the site. Recorded for entries made from __patchable_function_entries
	// (KindNops, or a call that has an area before its function); false on the others, which
	// find an endbr64 from the bytes as before.
	Pad bool
	// Pre is the size in bytes of the nop area right before the function's entry point
	// (the M of -fpatchable-function-entry=N,M): a multiple of 4, at most MaxPre.
	Pre   uint8
	Magic uint16
}

// IsZero reports an empty slot.
func (e Entry) IsZero() bool { return e == Entry{} }

// DecodeEntry decodes the 8 bytes at b.
func DecodeEntry(b []byte, bo binary.ByteOrder) Entry {
	return Entry{
		Rel:   int32(bo.Uint32(b[0:4])),
		Len:   b[4],
		Kind:  Kind(b[5] & kindFormMask),
		Pad:   b[5]&kindPad != 0,
		Pre:   (b[5] >> kindPreShift) * 4,
		Magic: bo.Uint16(b[6:8]),
	}
}

// Put encodes e into the 8 bytes at b.
func (e Entry) Put(b []byte, bo binary.ByteOrder) {
	bo.PutUint32(b[0:4], uint32(e.Rel))
	b[4] = e.Len
	k := uint8(e.Kind)&kindFormMask | (e.Pre/4)<<kindPreShift
	if e.Pad {
		k |= kindPad
	}
	b[5] = k
	bo.PutUint16(b[6:8], e.Magic)
}

// Check reports whether a non-empty entry is well formed.
func (e Entry) Check() error {
	if e.Magic != MagicRecorded && e.Magic != MagicLinked {
		return fmt.Errorf("bad magic %#04x", e.Magic)
	}
	if e.Kind == KindNops {
		if e.Len == 0 {
			return fmt.Errorf("empty nop area")
		}
		return nil
	}
	if e.Kind.Len() == 0 {
		return fmt.Errorf("unknown call kind %d", uint8(e.Kind))
	}
	if int(e.Len) != e.Kind.Len() {
		return fmt.Errorf("length %d does not fit call kind %v", e.Len, e.Kind)
	}
	return nil
}
