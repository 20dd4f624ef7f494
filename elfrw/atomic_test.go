package elfrw

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWriteFileAtomicKeepsMode(t *testing.T) {
	for _, mode := range []os.FileMode{
		0o644,
		0o750 | os.ModeSetuid,                 // 4750
		0o755 | os.ModeSetgid,                 // 2755
		0o700 | os.ModeSticky,                 // 1700
		0o711 | os.ModeSetuid | os.ModeSetgid, // 6711
		0o400,
	} {
		t.Run(mode.String(), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "prog")
			if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			if err := WriteFileAtomic(p, []byte("new contents")); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode() & keptMode; got != mode {
				t.Errorf("mode %v (%#o), want %v", got, got, mode)
			}
			if b, _ := os.ReadFile(p); string(b) != "new contents" {
				t.Errorf("contents %q", b)
			}
		})
	}
}

func TestWriteFileAtomicKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give a file to another owner")
	}
	p := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(p, []byte("old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 4321, 8765); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o750|os.ModeSetuid|os.ModeSetgid); err != nil { // after chown, which clears them
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if sys.Uid != 4321 || sys.Gid != 8765 {
		t.Errorf("owner %d:%d, want 4321:8765", sys.Uid, sys.Gid)
	}
	if got := st.Mode() & keptMode; got != 0o750|os.ModeSetuid|os.ModeSetgid {
		t.Errorf("mode %v after chown", got)
	}
}

// A write that fails half-way (here: fsync) leaves the original file as it was and no
// temporary file behind.
func TestWriteFileAtomicFailure(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "prog")
	orig := []byte("original contents")
	if err := os.WriteFile(p, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o750|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(p)
	failure := errors.New("disk on fire")
	defer func(f func(*os.File) error) { syncFile = f }(syncFile)
	var tmpName string
	syncFile = func(f *os.File) error {
		tmpName = f.Name()
		return failure
	}
	err := WriteFileAtomic(p, []byte("new contents"))
	if !errors.Is(err, failure) {
		t.Fatalf("error %v, want the sync failure", err)
	}
	if tmpName == "" || filepath.Dir(tmpName) != dir {
		t.Fatalf("temporary file %q not in the file's directory", tmpName)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, orig) {
		t.Errorf("original file changed to %q", b)
	}
	after, _ := os.Stat(p)
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("original file's mode/time changed: %v %v -> %v %v", before.Mode(), before.ModTime(), after.Mode(), after.ModTime())
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only prog (temporary file left behind)", names)
	}

	// Not a regular file: refused before anything is created.
	if err := WriteFileAtomic(dir, []byte("x")); err == nil {
		t.Error("WriteFileAtomic on a directory succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("directory holds %d entries after the refused write", len(ents))
	}
}

// A link given as the path stays a link; the file it names (in another directory) gets
// the new contents, and the temporary file is made beside that file.
func TestWriteFileAtomicFollowsSymlink(t *testing.T) {
	realDir, linkDir := t.TempDir(), t.TempDir()
	target := filepath.Join(realDir, "foo.o")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(linkDir, "foo.o")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", st.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("target holds %q", b)
	}
	for _, d := range []string{realDir, linkDir} {
		ents, _ := os.ReadDir(d)
		if len(ents) != 1 {
			t.Errorf("%s holds %d entries, want 1 (temporary file left?)", d, len(ents))
		}
	}
}

// TestWriteFileAtomicKeepsXattrs: extended attributes survive the rewrite, file
// capabilities included (chown and write drop those, so they must be set last).
func TestWriteFileAtomicKeepsXattrs(t *testing.T) {
	// cap_net_raw=ep, as setcap writes it (VFS_CAP_REVISION_2, effective).
	capNetRaw := []byte{0x01, 0, 0, 0x02, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for _, tc := range []struct {
		name  string
		value []byte
	}{
		{"user.ftkit.test", []byte("kept")},
		{"security.capability", capNetRaw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "prog")
			if err := os.WriteFile(p, []byte("old"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := unix.Setxattr(p, tc.name, tc.value, 0); err != nil {
				t.Skipf("cannot set %s here: %v", tc.name, err)
			}
			if err := WriteFileAtomic(p, []byte("new contents")); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 256)
			n, err := unix.Getxattr(p, tc.name, got)
			if err != nil || !bytes.Equal(got[:n], tc.value) {
				t.Errorf("%s after rewrite: % x, %v; want % x", tc.name, got[:max(n, 0)], err, tc.value)
			}
			if b, _ := os.ReadFile(p); string(b) != "new contents" {
				t.Errorf("contents %q", b)
			}
		})
	}
}

// TestHardLinks: the rewrite replaces the named file only; HardLinks lets the tools say so.
func TestHardLinks(t *testing.T) {
	dir := t.TempDir()
	p, q := filepath.Join(dir, "prog"), filepath.Join(dir, "other")
	if err := os.WriteFile(p, []byte("old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p, q); err != nil {
		t.Fatal(err)
	}
	if n := HardLinks(p); n != 2 {
		t.Errorf("HardLinks = %d, want 2", n)
	}
	if err := WriteFileAtomic(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(q); string(b) != "old" {
		t.Errorf("the other name reads %q", b)
	}
	if n := HardLinks(p); n != 1 {
		t.Errorf("HardLinks after rewrite = %d, want 1", n)
	}
}
