package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// spoofSocket serves, at dir/ftkit-<pid>.sock, a control socket that answers every request
// with a made-up reply, as another user who controls the directory could.
func spoofSocket(t *testing.T, dir string, pid int) {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(dir, fmt.Sprintf("ftkit-%d.sock", pid)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadString('\n')
			fmt.Fprintf(c, "ok tracer=spoofed\n")
			c.Close()
		}
	}()
}

// `ftrace live` connects only to a socket in a directory that is the user's alone
// (it printed the reply of a socket in a directory created by another user).
func TestLiveRefusesUntrustedSocket(t *testing.T) {
	pid := os.Getpid() // a live process, so that only the socket check can refuse
	cases := []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"open directory", func(dir string) { os.Chmod(dir, 0o755) }, "is open to other users (mode 0755"},
		{"another user's directory", func(dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the directory to another uid")
			}
			os.Chown(dir, 4242, 4242)
		}, "belongs to uid 4242"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			spoofSocket(t, dir, pid)
			c.setup(dir)
			t.Setenv("XDG_RUNTIME_DIR", dir)
			var out, errb bytes.Buffer
			code := run([]string{"ftrace", "live", strconv.Itoa(pid), "status"}, &out, &errb)
			if code == 0 || strings.Contains(out.String(), "spoofed") || !strings.Contains(errb.String(), c.want) {
				t.Errorf("exit %d, stdout %q, stderr %q (want a refusal: %q)", code, out.String(), errb.String(), c.want)
			}
			// the same through --socket
			out.Reset()
			errb.Reset()
			code = run([]string{"ftrace", "live", "--socket", filepath.Join(dir, fmt.Sprintf("ftkit-%d.sock", pid)), strconv.Itoa(pid), "status"}, &out, &errb)
			if code == 0 || strings.Contains(out.String(), "spoofed") {
				t.Errorf("--socket: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
			}
		})
	}
	// a private directory of ours is used
	dir := filepath.Join(t.TempDir(), "run")
	os.Mkdir(dir, 0o700)
	spoofSocket(t, dir, pid)
	t.Setenv("XDG_RUNTIME_DIR", dir)
	var out, errb bytes.Buffer
	if code := run([]string{"ftrace", "live", strconv.Itoa(pid), "status"}, &out, &errb); code != 0 || out.String() != "tracer=spoofed\n" {
		t.Errorf("private directory: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
