package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Images are the locks around a state dir's images: imports, one at a
// time (containerd's import creates an image record after finding none,
// so two of one archive at once race to create it), and the holds that
// keep image collection away from the images a pod being made has made
// present (pulled, imported) or found, but has not used yet (it has no
// container yet to show they are in use).
//
// A hold is a file under Dir/images-held, naming the images, locked by its
// process for as long as the hold lasts: a holder killed leaves a file
// whose lock the kernel has released, which a collection removes. Holds
// are taken, and collections run, under Dir/images-held.lock: a hold taken
// before a collection looks is seen by it; one taken after waits for it to
// end, and the pod then finds the image present or makes it so again.
type Images struct {
	Dir string // <root>/locks
	// Waiting is told once which pid holds a lock Import or Hold waits for.
	Waiting func(what string, holder int)
}

// Import takes the import lock, waiting until ctx ends.
func (im Images) Import(ctx context.Context) (unlock func(), err error) {
	l, err := Acquire(ctx, filepath.Join(im.Dir, "images.lock"), im.waiting("importing images"))
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Release() }, nil
}

func (im Images) waiting(what string) func(int) {
	if im.Waiting == nil {
		return nil
	}
	return func(pid int) { im.Waiting(what, pid) }
}

// heldDir holds the holds' files.
func (im Images) heldDir() string { return filepath.Join(im.Dir, "images-held") }

// Hold records refs as about to be used until release is called or this
// process ends.
func (im Images) Hold(ctx context.Context, refs []string) (release func(), err error) {
	for _, r := range refs {
		if strings.ContainsAny(r, "\n\x00") {
			return nil, fmt.Errorf("holding images: bad reference %q", r)
		}
	}
	l, err := Acquire(ctx, filepath.Join(im.Dir, "images-held.lock"), im.waiting("collecting unused images"))
	if err != nil {
		return nil, err
	}
	defer l.Release()
	if err := os.MkdirAll(im.heldDir(), 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(im.heldDir(), "hold-")
	if err != nil {
		return nil, fmt.Errorf("holding images: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return nil, errors.Join(fmt.Errorf("holding images: %w", err), os.Remove(f.Name()), f.Close())
	}
	if _, err := f.WriteString(strings.Join(refs, "\n")); err != nil {
		return nil, errors.Join(fmt.Errorf("holding images: %w", err), os.Remove(f.Name()), f.Close())
	}
	return func() {
		_ = os.Remove(f.Name())
		_ = f.Close()
	}, nil
}

// Collect runs fn with the references every live hold names, while no
// image is imported and no hold is taken; it removes the files of holds
// whose holders are gone.
func (im Images) Collect(ctx context.Context, fn func(held []string) error) error {
	imports, err := im.Import(ctx)
	if err != nil {
		return err
	}
	defer imports()
	l, err := Acquire(ctx, filepath.Join(im.Dir, "images-held.lock"), nil)
	if err != nil {
		return err
	}
	defer l.Release()
	entries, err := os.ReadDir(im.heldDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("listing the images held: %w", err)
	}
	var held []string
	for _, e := range entries {
		refs, err := im.held(filepath.Join(im.heldDir(), e.Name()))
		if err != nil {
			return err
		}
		held = append(held, refs...)
	}
	return fn(held)
}

// held reads the hold at path: its references while its holder holds it;
// none, and the file removed, once its holder is gone.
func (im Images) held(path string) ([]string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // released meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("reading a hold of images: %w", err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if err == nil {
		// Its holder is gone (or has just released it): no hold.
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("removing a hold of images whose podrun is gone: %w", err)
		}
		return nil, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return nil, fmt.Errorf("reading a hold of images: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > 1<<20 {
		return nil, fmt.Errorf("reading a hold of images: %s is no hold", path)
	}
	b := make([]byte, st.Size)
	n, err := f.ReadAt(b, 0)
	if err != nil && n < len(b) {
		return nil, fmt.Errorf("reading a hold of images: %w", err)
	}
	var refs []string
	for _, r := range strings.Split(string(b[:n]), "\n") {
		if r != "" {
			refs = append(refs, r)
		}
	}
	return refs, nil
}
