package mcountloc_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/mcountloc"
)

func TestX86CheckEntry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []byte
		want   error
		shows  string
	}{
		{"first instruction", nil, nil, ""},
		{"after endbr64", []byte{0xf3, 0x0f, 0x1e, 0xfa}, nil, ""},
		{"mcount after frame setup", []byte{0x55, 0x48, 0x89, 0xe5}, mcountloc.ErrMcountSite, "push %rbp; mov %rsp,%rbp"},
		{"mcount, endbr64 first", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5}, mcountloc.ErrMcountSite, "mov %rsp,%rbp"},
		{"nested function", []byte{0x41, 0x52}, mcountloc.ErrNotAtEntry, "push %r10"},
		{"nested function, endbr64", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x52}, mcountloc.ErrNotAtEntry, "push %r10"},
		{"undecodable", []byte{0x0f}, mcountloc.ErrNotAtEntry, ".byte 0f"},
		{"long", make([]byte, 4096), mcountloc.ErrNotAtEntry, "... (4096 bytes in all)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mcountloc.X86CheckEntry(tc.before)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.shows) {
				t.Errorf("error %v, want %v showing %q", err, tc.want, tc.shows)
			}
		})
	}
}
