// Package ftrt is the ftkit runtime: the C and assembly library libftrt.a (src/, include/)
// that finds the call-site tables of a program at load time and patches its sites into
// calls to registered callbacks, and Go bindings for cgo programs linked with it.
//
// The tests of this package build C test programs (testdata/runtime) through the real
// flow — gcc -pg -mfentry, recordmcount, link with libftrt.a, ftlink — and run them.
// See docs/runtime.md.
package ftrt
