// Command trampgen generates the trampoline templates of the ftkit runtime:
// runtime/src/arch/x86_64/ftrace_x86_64.S (ftrace_caller, ftrace_caller_novec, ftrace_regs_caller,
// the multi-ops, CALL_OPS and ready direct trampolines, ftrace_stub, __fentry__),
// runtime/src/arch/arm64/ftrace_arm64.S (ftrace_caller, ftrace_caller_novec,
// ftrace_regs_caller, the multi-ops, CALL_OPS and ready direct trampolines, ftrace_stub), and
// each architecture's ftrace_frame.h (the frame offsets the C code checks its structures
// against).
//
// The runtime clones each template from its start up to its end marker into a per-ops
// trampoline, re-points the load at the op_ptr marker to a slot holding the ops, and
// patches the call at the call marker (see docs/runtime.md).
//
// Usage: trampgen -arch x86_64 -o runtime/src/arch/x86_64   (go generate in this directory
// writes both architectures)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

//go:generate go run . -arch x86_64 -o ../runtime/src/arch/x86_64
//go:generate go run . -arch arm64 -o ../runtime/src/arch/arm64

func main() {
	out := flag.String("o", ".", "output directory")
	arch := flag.String("arch", "x86_64", "architecture: x86_64 or arm64")
	flag.Parse()
	files := Files()
	switch *arch {
	case "x86_64":
	case "arm64":
		files = ArmFiles()
	default:
		fmt.Fprintf(os.Stderr, "trampgen: unknown architecture %q (x86_64, arm64)\n", *arch)
		os.Exit(2)
	}
	for name, text := range files {
		p := filepath.Join(*out, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "trampgen: %v\n", err)
			os.Exit(1)
		}
	}
}
