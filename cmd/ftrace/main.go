// Command ftrace records traces of programs linked with the ftkit runtime (libftrt.a),
// controls running traced processes, and turns trace files into reports, call graphs,
// Chrome/Perfetto JSON, pprof profiles and flame graphs. See docs/ftrace-cli.md.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// exitError carries an exit status without a message (e.g. the traced program's status).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func run(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	if err := app.Run(args); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintf(stderr, "ftrace: %v\n", err)
		return 1
	}
	return 0
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:  "ftrace",
		Usage: "record and read function traces of programs built with ftkit",
		Description: "Record a program linked with libftrt:  ftrace record -- ./prog args\n" +
			"then read the trace (default ftrace.dat): ftrace graph | report | info | dump --chrome | pprof | flame",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		Commands: []*cli.Command{
			recordCommand(),
			liveCommand(),
			reportCommand(),
			graphCommand(),
			dumpCommand(),
			pprofCommand(),
			flameCommand(),
			infoCommand(),
		},
	}
}
