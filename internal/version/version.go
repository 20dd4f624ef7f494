// Package version is ftkit's release, which every tool's --version prints (the Makefile's
// VERSION is the same, checked by the test).
package version

import (
	"github.com/urfave/cli/v2"
)

// Version of the ftkit tools and runtime.
const Version = "0.2.0"

// Flag is the tools' --version flag: no short form (-v is --verbose in ftlink and
// recordmcount).
func Flag() cli.Flag {
	return &cli.BoolFlag{Name: "version", Usage: "print the version"}
}
