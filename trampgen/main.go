// Command trampgen generates the x86-64 trampoline templates of the ftkit runtime:
// runtime/src/arch/x86_64/ftrace_x86_64.S (ftrace_caller, ftrace_caller_novec, ftrace_regs_caller,
// ftrace_stub, __fentry__)
// and runtime/src/arch/x86_64/ftrace_frame.h (the frame offsets the C code checks its structures against).
//
// The runtime clones each template from its start up to its end marker into a per-ops
// trampoline, re-points the RIP-relative load at the op_ptr marker to a slot holding the ops,
// and patches the call at the call marker (see docs/runtime.md).
//
// Usage: trampgen -o runtime/src/arch/x86_64   (go generate in this directory does that)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

//go:generate go run . -o ../runtime/src/arch/x86_64

func main() {
	out := flag.String("o", ".", "output directory")
	flag.Parse()
	for name, text := range Files() {
		p := filepath.Join(*out, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "trampgen: %v\n", err)
			os.Exit(1)
		}
	}
}
