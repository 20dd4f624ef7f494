package mcountloc

// s390x rules (big-endian). gcc -pg -mfentry puts `brasl %r0, __fentry__` (c0 05 + a
// halfword offset, R_390_PC32DBL or R_390_PLT32DBL at +2, addend +2) first in every
// function: the kernel's form (with -mnop-mcount -mrecord-mcount, gcc's own table of
// `brcl 0, 0` nops, which recordmcount leaves alone). gcc -pg without -mfentry saves %r14
// and calls _mcount with it (stg; brasl %r14; lg): refused. -fpatchable-function-entry
// puts `nopr` (07 00) at the entry, listed with R_390_64.

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// S390Nop6 is `brcl 0, 0` (jgnop), the 6-byte nop ftlink writes over a brasl site, as
// gcc's -mnop-mcount does.
var S390Nop6 = []byte{0xc0, 0x04, 0, 0, 0, 0}

// ErrMcountS390 is ErrMcountSite with the s390x advice.
var ErrMcountS390 error = &mcountErr{"call to _mcount: compiled with gcc -pg without -mfentry; on s390x the call " +
	"saves %r14 first (stg %r14; brasl %r14, _mcount), so ftkit does not record it: recompile with -pg -mfentry"}

var errNotBrasl = errors.New("not a brasl %r0 call")

// DecodeS390Site checks that code starts with `brasl %r0, rel32` (c0 05).
func DecodeS390Site(code []byte) (Kind, int, error) {
	if len(code) < 6 || code[0] != 0xc0 || code[1] != 0x05 {
		return KindNone, 0, fmt.Errorf("bytes % x: %w", head(code, 6), errNotBrasl)
	}
	return KindBrasl, 6, nil
}

// S390NopLen returns the length of the nop at the start of code: nopr (07 0x), nop
// (47 0x 00 00) or brcl 0 (c0 04 ...), else 0.
func S390NopLen(code []byte) int {
	switch {
	case len(code) >= 2 && code[0] == 0x07 && code[1]&0xf0 == 0:
		return 2
	case len(code) >= 4 && code[0] == 0x47 && code[1]&0xf0 == 0:
		return 4
	case len(code) >= 6 && code[0] == 0xc0 && code[1] == 0x04:
		return 6
	}
	return 0
}

// entryOnly is the entry rule of machines whose hook call is always the first
// instruction: anything before it is refused.
func entryOnly(before []byte) error {
	if len(before) == 0 {
		return nil
	}
	return fmt.Errorf("%w (%d bytes before the call)", ErrNotAtEntry, len(before))
}

// s390LinkedSite verifies a brasl site of a linked file: a call to __fentry__ (a local
// definition or a PLT stub larl %r1, slot; lg %r1, 0(%r1); br %r1), or the nop ftlink wrote.
func s390LinkedSite(l *Linked, s *LinkedSite, e Entry, code []byte) {
	if e.Magic == 0 || e.Kind != KindBrasl {
		s.Err = fmt.Errorf("site %#x: entry kind %v is not an s390x site", s.Addr, e.Kind)
		return
	}
	if len(code) >= 6 && string(code[:6]) == string(S390Nop6) {
		if e.Magic != MagicLinked {
			s.Err = fmt.Errorf("site %#x: a nop where the entry records a call", s.Addr)
			return
		}
		s.Nop, s.Len, s.Kind = true, 6, KindBrasl
		s.checkEntry(l)
		return
	}
	if _, _, err := DecodeS390Site(code); err != nil {
		s.Err = fmt.Errorf("site %#x: %v", s.Addr, err)
		return
	}
	s.Len, s.Kind = 6, KindBrasl
	target := s.Addr + 2*uint64(int64(int32(binary.BigEndian.Uint32(code[2:6]))))
	hook := l.fentry[target]
	if !hook {
		if c, ok := l.code(target); ok && len(c) >= 14 && c[0] == 0xc0 && c[1] == 0x10 &&
			string(c[6:12]) == "\xe3\x10\x10\x00\x00\x04" && c[12] == 0x07 && c[13] == 0xf1 {
			hook = l.isHookSlot(target + 2*uint64(int64(int32(binary.BigEndian.Uint32(c[2:6])))))
		}
	}
	if !hook {
		s.Err = fmt.Errorf("site %#x: brasl to %s, not to __fentry__", s.Addr, l.describe(target, KindBrasl))
		return
	}
	s.checkEntry(l)
}
