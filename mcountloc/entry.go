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

// Kind is the form of the call instruction at a site.
type Kind uint8

const (
	KindNone     Kind = 0
	KindCallRel  Kind = 1 // e8 rel32
	KindCallGOT  Kind = 2 // ff 15 rel32: call *sym@GOTPCREL(%rip)
	KindCallAddr Kind = 3 // 67 e8 rel32: a GOT call relaxed by the linker
)

func (k Kind) String() string {
	switch k {
	case KindCallRel:
		return "e8"
	case KindCallGOT:
		return "ff15"
	case KindCallAddr:
		return "67e8"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Len is the length of the call instruction of that form.
func (k Kind) Len() int {
	switch k {
	case KindCallRel:
		return 5
	case KindCallGOT, KindCallAddr:
		return 6
	}
	return 0
}

// Entry is one decoded table entry.
type Entry struct {
	Rel   int32 // site address - entry address
	Len   uint8
	Kind  Kind
	Magic uint16
}

// IsZero reports an empty slot.
func (e Entry) IsZero() bool { return e == Entry{} }

// DecodeEntry decodes the 8 bytes at b.
func DecodeEntry(b []byte, bo binary.ByteOrder) Entry {
	return Entry{
		Rel:   int32(bo.Uint32(b[0:4])),
		Len:   b[4],
		Kind:  Kind(b[5]),
		Magic: bo.Uint16(b[6:8]),
	}
}

// Put encodes e into the 8 bytes at b.
func (e Entry) Put(b []byte, bo binary.ByteOrder) {
	bo.PutUint32(b[0:4], uint32(e.Rel))
	b[4] = e.Len
	b[5] = uint8(e.Kind)
	bo.PutUint16(b[6:8], e.Magic)
}

// Check reports whether a non-empty entry is well formed.
func (e Entry) Check() error {
	if e.Magic != MagicRecorded && e.Magic != MagicLinked {
		return fmt.Errorf("bad magic %#04x", e.Magic)
	}
	if e.Kind.Len() == 0 {
		return fmt.Errorf("unknown call kind %d", uint8(e.Kind))
	}
	if int(e.Len) != e.Kind.Len() {
		return fmt.Errorf("length %d does not fit call kind %v", e.Len, e.Kind)
	}
	return nil
}
