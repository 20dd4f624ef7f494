package cliargs

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestFlagsFirst(t *testing.T) {
	flags := []cli.Flag{
		&cli.IntFlag{Name: "limit", Aliases: []string{"n"}},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}},
		&cli.IntSliceFlag{Name: "tid"},
	}
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"t.dat", "--limit", "3"}, []string{"--limit", "3", "t.dat"}},
		{[]string{"t.dat", "-n", "-1"}, []string{"-n", "-1", "t.dat"}},
		{[]string{"a.o", "-v", "b.o"}, []string{"-v", "a.o", "b.o"}},
		{[]string{"a.o", "--limit=4", "-v"}, []string{"--limit=4", "-v", "a.o"}},
		{[]string{"--tid", "7", "t.dat", "--tid", "8"}, []string{"--tid", "7", "--tid", "8", "t.dat"}},
		{[]string{"a", "--", "-v", "--limit"}, []string{"a", "--", "-v", "--limit"}},
		{[]string{"-v", "--", "-"}, []string{"-v", "--", "-"}},
		{[]string{"-"}, []string{"-"}},
		{[]string{"t.dat", "--limit"}, []string{"--limit", "t.dat"}},
		{nil, nil},
	} {
		if got := FlagsFirst(flags, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("FlagsFirst(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
