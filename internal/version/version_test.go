package version_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
	"github.com/ftkit/ftkit/internal/version"
)

// The Makefile installs the pkg-config and CMake files with its VERSION: the tools must say
// the same.
func TestMakefileVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindSubmatch(b)
	if m == nil || string(m[1]) != version.Version {
		t.Errorf("Makefile VERSION %q, version.Version %q", m, version.Version)
	}
}
