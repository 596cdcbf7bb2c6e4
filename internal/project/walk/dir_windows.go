//go:build windows

package walk

import (
	"io"
	"io/fs"
	"os"
	"sync/atomic"
)

// A Dir is a directory held open by a walk. On Windows it is an [os.Root]
// on the directory: its subdirectories, ignore file and the files found in
// it are opened through that root one name at a time, so nothing is
// reached outside the directory. A name is opened only when its Lstat
// shows a plain directory or regular file (a symbolic link or junction is
// refused, not followed), and what was opened must be the file that Lstat
// saw (os.SameFile), so a name swapped for a link in between is refused
// too.
//
// The Dir of an entry is open while the visit function runs; a visitor
// that reads the entry later calls Retain, and Release when done.
type Dir struct {
	f    *os.File // the directory itself, for reading its entries
	root *os.Root // the directory, for opening its names
	refs atomic.Int32
}

// openDir opens the directory loc of root as a Dir with one reference.
func openDir(root *os.Root, loc string) (*Dir, error) {
	r, err := root.OpenRoot(loc)
	if err != nil {
		return nil, err
	}
	return rootDir(r)
}

// rootDir takes r with one reference.
func rootDir(r *os.Root) (*Dir, error) {
	f, err := r.Open(".")
	if err != nil {
		r.Close()
		return nil, err
	}
	d := &Dir{f: f, root: r}
	d.refs.Store(1)
	return d, nil
}

// Retain keeps d open until a matching Release.
func (d *Dir) Retain() { d.refs.Add(1) }

// Release drops a reference; the last one closes the directory.
func (d *Dir) Release() {
	if d.refs.Add(-1) == 0 {
		d.f.Close()
		d.root.Close()
	}
}

// notFollowed is the error for a name that is not what it must be (a link,
// or swapped since its Lstat).
func (d *Dir) notFollowed(op, name string) error {
	return &fs.PathError{Op: op, Path: d.root.Name() + `\` + name, Err: fs.ErrInvalid}
}

// sub opens the subdirectory name of d.
func (d *Dir) sub(name string, loc string) (*Dir, error) {
	info, err := d.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, d.notFollowed("openat", name)
	}
	r, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	sub, err := rootDir(r)
	if err != nil {
		return nil, err
	}
	if st, err := sub.f.Stat(); err != nil || !os.SameFile(st, info) {
		sub.Release()
		return nil, d.notFollowed("openat", name)
	}
	return sub, nil
}

// openFile opens the regular file name in d for reading, without
// following a link.
func (d *Dir) openFile(name string) (*os.File, error) {
	info, err := d.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, d.notFollowed("open", name)
	}
	f, err := d.root.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(st, info) {
		f.Close()
		return nil, d.notFollowed("open", name)
	}
	return f, nil
}

// lstat returns the type and size of name in d, not following a link.
func (d *Dir) lstat(name string) (Kind, int64, error) {
	info, err := d.root.Lstat(name)
	if err != nil {
		return "", 0, err
	}
	k := kindOf(info.Mode())
	if k != KindFile {
		return k, 0, nil
	}
	return k, info.Size(), nil
}

// ReadRegular reads the regular file name in d into *buf, grown as
// needed, unless the file holds more than limit bytes: then it returns
// large and no content. The file is opened without following a link, and
// must be a regular file (else fs.ErrInvalid). It is read up to the size
// its stat gave (bytes appended since are not read), or to its end if it
// is shorter; a file whose size reads as 0 is read to its end, and is
// large if that lies beyond limit.
func (d *Dir) ReadRegular(name string, buf *[]byte, limit int) (content []byte, large bool, err error) {
	f, err := d.openFile(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if st.Size() > int64(limit) {
		return nil, true, nil
	}
	want := int(st.Size())
	if want == 0 {
		want = limit + 1
	}
	b := (*buf)[:0]
	for len(b) < want {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		m, err := f.Read(b[len(b):min(cap(b), want)])
		b = b[:len(b)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	*buf = b[:0]
	if len(b) > limit {
		return nil, true, nil
	}
	return b, false, nil
}
