// SPDX-License-Identifier: Apache-2.0

package main

import "testing"

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"65536", 65536, true},
		{"64k", 64 << 10, true},
		{"64M", 64 << 20, true},
		{"2g", 2 << 30, true},
		{"0", 0, false},
		{"", 0, false},
		{"k", 0, false},
		{"12x", 0, false},
		{"-1M", 0, false},
		{"99999999999G", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
