package bench_test

import (
	"os"
	"testing"

	"github.com/ftkit/ftkit/internal/testenv"
)

// TestMain lets the benchmarks measure a command's own peak RSS (testenv.PeakRSS).
func TestMain(m *testing.M) {
	testenv.PeakRSSMain()
	os.Exit(m.Run())
}
