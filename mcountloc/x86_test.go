package mcountloc

import (
	"errors"
	"testing"
)

func TestDecodeX86Site(t *testing.T) {
	tests := []struct {
		name   string
		code   []byte
		kind   Kind
		n      int
		target uint64 // for addr 0x1000
	}{
		{"e8", []byte{0xe8, 0x10, 0, 0, 0}, KindCallRel, 5, 0x1015},
		{"e8 negative", []byte{0xe8, 0xfb, 0xff, 0xff, 0xff, 0x90}, KindCallRel, 5, 0x1000},
		{"ff15", []byte{0xff, 0x15, 0, 0, 0, 0}, KindCallGOT, 6, 0x1006},
		{"67e8", []byte{0x67, 0xe8, 0x00, 0x01, 0, 0}, KindCallAddr, 6, 0x1106},
		{"short e8", []byte{0xe8, 0, 0}, KindNone, 0, 0},
		{"ff 14 (sib)", []byte{0xff, 0x14, 0x25, 0, 0, 0, 0}, KindNone, 0, 0},
		{"ff 25 (jmp)", []byte{0xff, 0x25, 0, 0, 0, 0}, KindNone, 0, 0},
		{"jmp e9", []byte{0xe9, 0, 0, 0, 0}, KindNone, 0, 0},
		{"nop5", X86Nop5, KindNone, 0, 0},
		{"endbr64 first", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0xe8, 0, 0, 0, 0}, KindNone, 0, 0},
		{"empty", nil, KindNone, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, n, tgt, err := X86SiteTarget(0x1000, tc.code)
			if tc.kind == KindNone {
				if err == nil || !errors.Is(err, ErrNotCall) {
					t.Fatalf("got %v %d %v, want ErrNotCall", k, n, err)
				}
				return
			}
			if err != nil || k != tc.kind || n != tc.n || tgt != tc.target {
				t.Fatalf("got %v %d %#x %v, want %v %d %#x", k, n, tgt, err, tc.kind, tc.n, tc.target)
			}
		})
	}
}

func TestEndbrAndNops(t *testing.T) {
	if !HasEndbr64([]byte{0xf3, 0x0f, 0x1e, 0xfa, 0}) || HasEndbr64([]byte{0xf3, 0x0f, 0x1e}) || HasEndbr64([]byte{0xf3, 0x0f, 0x1e, 0xfb}) {
		t.Fatal("HasEndbr64")
	}
	if !X86IsNopSite([]byte{0x66, 0x0f, 0x1f, 0x44, 0, 0}, 6) || X86IsNopSite(X86Nop5, 6) || X86IsNopSite(X86Nop5, 4) {
		t.Fatal("X86IsNopSite")
	}
}
