// Command ftrace records traces of programs linked with the ftkit runtime (libftrt.a),
// controls running traced processes, and turns trace files into reports, call graphs,
// Chrome/Perfetto JSON, pprof profiles and flame graphs. See docs/ftrace-cli.md.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ftkit/ftkit/cmd/ftrace/internal/tracefile"
	"github.com/ftkit/ftkit/internal/cliargs"
	"github.com/ftkit/ftkit/internal/version"
)

func init() { cli.VersionFlag = version.Flag() }

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// exitError carries an exit status without a message (e.g. the traced program's status).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// codedError is an error said on stderr with an exit status of its own: a program that
// could not be run exits 127 (not found) or 126 (found, not runnable), as with a shell or
// env(1), not 1 as if it had run and failed.
type codedError struct {
	code int
	err  error
}

func (e codedError) Error() string { return e.err.Error() }
func (e codedError) Unwrap() error { return e.err }

// notRunnable gives err (a program that could not be started) the status a shell would.
func notRunnable(err error) error {
	code := 126
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		code = 127
	}
	return codedError{code, err}
}

func run(args []string, stdout, stderr io.Writer) int {
	if !enoughDescriptors() {
		fmt.Fprintln(stderr, "ftrace: too few file descriptors left to run (raise ulimit -n)")
		return 1
	}
	app := newApp(stdout, stderr)
	if done, code := cliargs.Man(app, args, stdout, stderr); done {
		return code
	}
	if len(args) > 1 && args[1] == "help" {
		// `ftrace help [COMMAND]`, as git and go take it: the --help of either
		args = append([]string{args[0]}, append(args[2:min(len(args), 3)], "--help")...)
	}
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") && app.Command(args[1]) == nil {
		fmt.Fprintf(stderr, "ftrace: unknown command %q (commands: %s; ftrace --help)\n", args[1], strings.Join(commandNames(app), ", "))
		return 1
	}
	if err := app.Run(flagsFirst(app, args)); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintf(stderr, "ftrace: %v\n", err)
		var ce codedError
		if errors.As(err, &ce) {
			return ce.code
		}
		return 1
	}
	return 0
}

func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:    "ftrace",
		Version: version.Version + " (trace format " + strconv.Itoa(tracefile.Version4) + ")",
		Usage:   "record and read function traces of programs built with ftkit",
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
			argsCommand(),
		},
	}
	// A bad flag is one "ftrace: …" line on stderr, as every other error (urfave/cli
	// printed the whole usage on stdout).
	app.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return fmt.Errorf("%w (ftrace --help)", err)
	}
	for _, c := range app.Commands {
		name := c.Name
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%s: %w (ftrace %s --help)", name, err, name)
		}
	}
	return app
}

func commandNames(app *cli.App) []string {
	var names []string
	for _, c := range app.Commands {
		names = append(names, c.Name)
	}
	return names
}

// flagsFirst lets a command's flags follow its arguments (`ftrace report t.dat --limit
// 3`). record is left alone: what follows its first argument is the program's command line.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 3 {
		return args
	}
	cmd := app.Command(args[1])
	if cmd == nil || cmd.Name == "record" {
		return args
	}
	return append(append([]string{}, args[:2]...), cliargs.FlagsFirst(cmd.Flags, args[2:])...)
}

// repeatHint is how urfave/cli shows that a list flag can be repeated:
// "--filter GLOBS, -F GLOBS [ --filter GLOBS, -F GLOBS ]". Said once in the usage instead.
var repeatHint = regexp.MustCompile(` \[ [^\]\t]* \]`)

func init() {
	plain := cli.FlagStringer
	cli.FlagStringer = func(f cli.Flag) string {
		s := plain(f)
		if _, ok := f.(*cli.StringSliceFlag); ok {
			s = repeatHint.ReplaceAllString(s, "")
		}
		return s
	}
}
