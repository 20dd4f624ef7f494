package elfrw

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// syncFile is (*os.File).Sync; tests replace it to make a write fail half-way.
var syncFile = (*os.File).Sync

// keptMode is what WriteFileAtomic copies from the original file's mode: the permission
// bits and setuid, setgid and sticky.
const keptMode = os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// WriteFileAtomic replaces path with data: it writes a temporary file in the same
// directory, fsyncs it, gives it the original file's owner (where permitted) and mode
// (including setuid/setgid/sticky) and extended attributes (file capabilities, ACLs, ...)
// and renames it into place. A symbolic link is followed: the file it names is replaced and
// the link stays a link. A hard link is not: the file's other names keep the old contents
// (the rename gives path a new inode; see HardLinks). On any failure, including an
// attribute that cannot be kept, the original file is left untouched and the temporary
// file removed.
func WriteFileAtomic(path string, data []byte) (err error) {
	// Rename would replace a link with a plain file; write beside the real file instead.
	path, err = filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	attrs, err := readXattrs(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".ftkit-*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	// Owner first: chown clears setuid/setgid, so the mode is set after it. Only root (or
	// the owner, for a group it belongs to) may chown; otherwise the new file belongs to
	// the writer, as any rewritten file does.
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		_ = tmp.Chown(int(sys.Uid), int(sys.Gid))
	}
	// fchmod is not subject to the umask (unlike the mode given at creation) and keeps
	// the special bits; the kernel drops setgid itself when the writer is not in the group.
	if err = tmp.Chmod(st.Mode() & keptMode); err != nil {
		return fmt.Errorf("set mode: %w", err)
	}
	// Last: chown and writes drop security.capability.
	if err = writeXattrs(tmp, attrs); err != nil {
		return err
	}
	if err = syncFile(tmp); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close temporary file: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename into place: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// HardLinks returns the number of names of path's file (1 for an ordinary file).
// WriteFileAtomic replaces path's inode, so the other names keep the old contents: the
// tools say so rather than rewrite such a file in place, which could not be atomic.
func HardLinks(path string) uint64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Nlink)
	}
	return 1
}

type xattr struct {
	name  string
	value []byte
}

// readXattrs returns every extended attribute of path's file (the real file's: path has
// no symlinks left). A file system without attributes has none.
func readXattrs(path string) ([]xattr, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fd := int(f.Fd())
	var list []byte
	for size := 256; ; size *= 2 {
		list = make([]byte, size)
		n, err := unix.Flistxattr(fd, list)
		if errors.Is(err, unix.ERANGE) && size < 1<<20 {
			continue
		}
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list extended attributes of %s: %w", path, err)
		}
		list = list[:n]
		break
	}
	var out []xattr
	for _, name := range bytes.Split(list, []byte{0}) {
		if len(name) == 0 {
			continue
		}
		var val []byte
		for size := 256; ; size *= 2 {
			val = make([]byte, size)
			n, err := unix.Fgetxattr(fd, string(name), val)
			if errors.Is(err, unix.ERANGE) && size < 1<<20 {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read extended attribute %s of %s: %w", name, path, err)
			}
			val = val[:n]
			break
		}
		out = append(out, xattr{string(name), val})
	}
	return out, nil
}

// writeXattrs gives f the attributes, skipping those it already has with the same value
// (a security label the new file inherited, say). One that cannot be set is an error:
// dropping a file capability silently would change what the program may do. The SELinux
// label is the exception: the policy labels a new file, and relabelling may be denied to
// the user where keeping the label was never the user's to decide (as with sed -i).
func writeXattrs(f *os.File, attrs []xattr) error {
	fd := int(f.Fd())
	for _, a := range attrs {
		cur := make([]byte, len(a.value)+1)
		if n, err := unix.Fgetxattr(fd, a.name, cur); err == nil && bytes.Equal(cur[:n], a.value) {
			continue
		}
		if err := unix.Fsetxattr(fd, a.name, a.value, 0); err != nil && a.name != "security.selinux" {
			return fmt.Errorf("cannot keep extended attribute %s on the rewritten file: %w", a.name, err)
		}
	}
	return nil
}
