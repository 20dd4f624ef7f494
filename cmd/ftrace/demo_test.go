package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// TestDemo runs the demo the way the top-level `make` does (`make -s -C testdata/demo
// BUILD=<build dir> run`, with the build under test; only its output directory is a
// temporary one) and checks what a new user sees: the program's own line, then one call
// graph per thread — the main thread opening and closing the shop, the baker baking and
// the cashier selling three loaves — and the report.
func TestDemo(t *testing.T) {
	testenv.Need(t, "make", "gcc")
	build := testenv.BuildDir()
	if build == "" {
		t.Skip("FTKIT_BUILD not set")
	}
	testenv.Runtime(t) // the library must be there (fails under CI otherwise)
	out := t.TempDir()
	cmd := exec.Command("make", "-s", "-C", filepath.Join(testenv.Root(), "testdata", "demo"), "BUILD="+build, "OUT="+out, "run")
	cmd.Env = os.Environ()
	b, err := cmd.CombinedOutput()
	text := string(b)
	if err != nil {
		t.Fatalf("make run: %v\n%s", err, text)
	}
	if strings.Contains(text, "skipping the demo") {
		t.Fatalf("demo skipped:\n%s", text)
	}
	for _, want := range []string{
		"demo: sold 3 loaves for 753 coins\n",
		"demo: " + filepath.Join(build, "bin", "ftrace") + " graph --limit 25 ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if !regexp.MustCompile(`(?m)^ +CALLS +TOTAL +SELF +AVG +MIN +MAX  FUNCTION\n(.*\n){8}$`).MatchString(text) {
		t.Errorf("output does not end with an 8-row report:\n%s", text)
	}
	// one section per thread: "# thread TID (name)", then its lines "TID) ... |  call"
	threads := map[string][]string{}
	var cur string
	head := regexp.MustCompile(`^# thread (\d+) \((\w+)\)$`)
	for _, l := range strings.Split(text, "\n") {
		if m := head.FindStringSubmatch(l); m != nil {
			cur = m[2]
			continue
		}
		if i := strings.Index(l, "|  "); cur != "" && i >= 0 && !strings.HasPrefix(l, "#") {
			threads[cur] = append(threads[cur], strings.TrimSpace(l[i+3:]))
		}
		if l == "" {
			cur = ""
		}
	}
	want := map[string]struct {
		first, last string
		has         []string
	}{
		"demo":    {"main() {", "} /* main */", []string{"open_shop.constprop.0();", "close_shop();"}},
		"baker":   {"baker() {", "", []string{"bake_loaf() {", "knead_dough() {", "add_flour() {", "work();", "proof_dough() {", "bake_in_oven() {", "put_on_shelf();"}},
		"cashier": {"cashier() {", "} /* cashier */", []string{"sell_loaf() {", "count_coins() {", "work();"}},
	}
	if len(threads) != len(want) {
		t.Errorf("threads %v, want demo, baker and cashier", keys(threads))
	}
	for name, w := range want {
		lines := threads[name]
		if len(lines) == 0 || len(lines) > 25 || lines[0] != w.first || (w.last != "" && lines[len(lines)-1] != w.last) {
			t.Errorf("thread %s: %d lines, want ≤ 25 from %q to %q:\n%s", name, len(lines), w.first, w.last, strings.Join(lines, "\n"))
			continue
		}
		joined := strings.Join(lines, "\n")
		for _, h := range w.has {
			if !strings.Contains(joined, h) {
				t.Errorf("thread %s lacks %q:\n%s", name, h, joined)
			}
		}
	}
	if n := strings.Count(strings.Join(threads["cashier"], "\n"), "sell_loaf() {"); n != 3 {
		t.Errorf("cashier sold %d loaves in the graph, want 3", n)
	}
	if !strings.Contains(text, "# ... output limited to 25 lines") {
		t.Errorf("the baker's graph is not cut at 25 lines:\n%s", text)
	}
}

func keys(m map[string][]string) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}
