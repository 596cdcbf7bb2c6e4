//go:build unix

package walk

import (
	"errors"
	"io/fs"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A Dir is a directory held open by a walk. Its subdirectories, ignore
// file and the files found in it are opened relative to its descriptor,
// one name at a time and without following a symbolic link, so no path is
// resolved twice and nothing is reached outside the directory: a name
// swapped for a symbolic link fails to open (ELOOP) instead of being
// followed.
//
// The Dir of an entry is open while the visit function runs; a visitor
// that reads the entry later calls Retain, and Release when done.
type Dir struct {
	f    *os.File
	fd   int
	refs atomic.Int32
}

// openDir opens the directory loc of root as a Dir with one reference.
func openDir(root *os.Root, loc string) (*Dir, error) {
	f, err := root.Open(loc)
	if err != nil {
		return nil, err
	}
	return newDir(f), nil
}

// newDir takes f, an open directory, with one reference.
func newDir(f *os.File) *Dir {
	d := &Dir{f: f, fd: int(f.Fd())}
	d.refs.Store(1)
	return d
}

// Retain keeps d open until a matching Release.
func (d *Dir) Retain() { d.refs.Add(1) }

// Release drops a reference; the last one closes the directory.
func (d *Dir) Release() {
	if d.refs.Add(-1) == 0 {
		d.f.Close()
	}
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// openat opens name in d without following a symbolic link.
func (d *Dir) openat(name string, flags int) (int, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(d.fd, name, flags|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, &fs.PathError{Op: "openat", Path: d.f.Name() + "/" + name, Err: err}
	}
	return fd, nil
}

// sub opens the subdirectory name of d.
func (d *Dir) sub(name string, loc string) (*Dir, error) {
	fd, err := d.openat(name, unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	return newDir(os.NewFile(uintptr(fd), loc)), nil
}

// openFile opens name in d for reading, without following a symbolic
// link and without blocking.
func (d *Dir) openFile(name string) (*os.File, error) {
	fd, err := d.openat(name, unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// lstat returns the type and size of name in d, not following a link.
func (d *Dir) lstat(name string) (Kind, int64, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return "", 0, err
	}
	k := kindOfStat(uint32(st.Mode))
	if k != KindFile {
		return k, 0, nil
	}
	return k, st.Size, nil
}

func kindOfStat(mode uint32) Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return KindFile
	case unix.S_IFDIR:
		return KindDir
	case unix.S_IFLNK:
		return KindSymlink
	}
	return KindOther
}

// ReadRegular reads the regular file name in d into *buf, grown as
// needed, unless the file holds more than limit bytes: then it returns
// large and no content. The file is opened without following a symbolic
// link and without blocking, and must be a regular file (else
// fs.ErrInvalid). It is read up to the size its fstat gave (bytes
// appended since are not read), or to its end if it is shorter; a file
// whose size reads as 0 is read to its end, and is large if that lies
// beyond limit.
func (d *Dir) ReadRegular(name string, buf *[]byte, limit int) (content []byte, large bool, err error) {
	fd, err := d.openat(name, unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(fd)
	return readRegularFD(fd, buf, limit)
}

func readRegularFD(fd int, buf *[]byte, limit int) ([]byte, bool, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false, fs.ErrInvalid
	}
	if st.Size > int64(limit) {
		return nil, true, nil
	}
	size := int(st.Size)
	if want := size + 1; cap(*buf) < want {
		*buf = make([]byte, want+want/4)
	}
	b := (*buf)[:cap(*buf)]
	n := 0
	for n <= limit && (size == 0 || n < size) {
		if n == len(b) {
			*buf = append(b, 0)[:0]
			b = (*buf)[:cap(*buf)]
		}
		var m int
		err := retryEINTR(func() (err error) {
			end := min(len(b), limit+1)
			if size > 0 {
				end = size
			}
			m, err = unix.Read(fd, b[n:end])
			return err
		})
		if err != nil {
			return nil, false, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	if n > limit {
		return nil, true, nil
	}
	return b[:n], false, nil
}
