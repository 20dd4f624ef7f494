package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// The live commands the CLI takes are those docs/ftrace-cli.md's table lists, in its
// order (the unknown-command error lists them; `size` was missing from it).
func TestLiveCommandsDocumented(t *testing.T) {
	doc, err := os.ReadFile(testenv.Root() + "/docs/ftrace-cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| command | effect |")
	if !ok {
		t.Fatal("docs/ftrace-cli.md: no live command table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var documented []string
	seen := map[string]bool{}
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 3 || strings.HasPrefix(cells[1], "---") {
			continue
		}
		for _, m := range regexp.MustCompile("`([a-z_]+)").FindAllStringSubmatch(cells[1], -1) {
			if !seen[m[1]] {
				documented = append(documented, m[1])
				seen[m[1]] = true
			}
		}
	}
	var listed []string
	for _, c := range liveCommandList {
		listed = append(listed, c.name)
	}
	if strings.Join(documented, " ") != strings.Join(listed, " ") {
		t.Errorf("docs list the live commands as\n%v\nthe CLI as\n%v", documented, listed)
	}
}
