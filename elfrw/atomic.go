package elfrw

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// syncFile is (*os.File).Sync; tests replace it to make a write fail half-way.
var syncFile = (*os.File).Sync

// keptMode is what WriteFileAtomic copies from the original file's mode: the permission
// bits and setuid, setgid and sticky.
const keptMode = os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// WriteFileAtomic replaces path with data: it writes a temporary file in the same
// directory, fsyncs it, gives it the original file's owner (where permitted) and mode
// (including setuid/setgid/sticky) and renames it into place. A symbolic link is followed:
// the file it names is replaced and the link stays a link. On any failure the original
// file is left untouched and the temporary file removed.
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
