// Package cliargs lets the commands take flags after their arguments: urfave/cli v2 stops
// reading flags at the first argument (`ftrace report t.dat --limit 3`,
// `recordmcount a.o -v`).
package cliargs

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// FlagsFirst returns args (a command's arguments, without the program or command name) with
// the flags moved in front of the other arguments, keeping their order. A flag's value is
// the next argument unless the flag is boolean or written --name=value. Everything from
// "--" on stays where it is, as arguments.
func FlagsFirst(flags []cli.Flag, args []string) []string {
	takesValue := map[string]bool{}
	for _, f := range flags {
		_, isBool := f.(*cli.BoolFlag)
		names := f.Names()
		if a, ok := f.(interface{ AllNames() []string }); ok {
			names = a.AllNames() // a flag that tells cli of one name only
		}
		for _, n := range names {
			takesValue[n] = !isBool
		}
	}
	var fl, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		fl = append(fl, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(args) {
			fl = append(fl, args[i+1])
			i++
		}
	}
	return append(fl, pos...)
}

// Man prints app's manual page (troff, generated from its help) when args is exactly
// `PROG --man`, for `make install`. It reports whether it did, and the exit code: on a
// failure it has said why on errw.
func Man(app *cli.App, args []string, w, errw io.Writer) (done bool, code int) {
	if len(args) != 2 || args[1] != "--man" {
		return false, 0
	}
	page, err := app.ToManWithSection(1)
	if err == nil {
		_, err = io.WriteString(w, page)
	}
	if err != nil {
		fmt.Fprintf(errw, "%s: manual page: %v\n", app.Name, err)
		return true, 1
	}
	return true, 0
}
