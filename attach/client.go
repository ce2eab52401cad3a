package attach

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// DetachKeys end an attach with a terminal without stopping the container,
// as docker's and podman's default: ctrl-p, ctrl-q.
var DetachKeys = []byte{0x10, 0x11}

// Options are an attach's streams.
type Options struct {
	Stdin  io.Reader // nil: output only
	Stdout io.Writer
	Stderr io.Writer
	// Detach, when set, is a key sequence in Stdin that ends the attach
	// (it is not sent to the container).
	Detach []byte
}

// ErrNoKeeper is returned for a container that has no keeper: it was made
// without stdin and tty, or it has ended.
var ErrNoKeeper = errors.New("the container has no stdin or terminal to attach to")

// Attach connects to the keeper in dir and copies until the container's
// output ends, the detach keys are typed, or ctx ends.
func Attach(ctx context.Context, dir string, o Options) error {
	d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return ErrNoKeeper
		}
		return fmt.Errorf("attach: %w", err)
	}
	// Dialled through the directory's descriptor: a socket's path is
	// limited to 107 bytes.
	conn, err := net.Dial("unix", fmt.Sprintf("/proc/self/fd/%d/%s", d, SocketFile))
	unix.Close(d)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) {
			return ErrNoKeeper
		}
		return fmt.Errorf("attach: %w", err)
	}
	uc := conn.(*net.UnixConn)
	defer uc.Close()
	hello := byte(0)
	if o.Stdin != nil {
		hello |= FlagStdin
	}
	if _, err := uc.Write([]byte{hello}); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	detached := make(chan struct{})
	if o.Stdin != nil {
		go func() {
			if copyInput(uc, o.Stdin, o.Detach) {
				close(detached)
				_ = uc.Close()
				return
			}
			_ = uc.CloseWrite() // the input ended: the keeper is told
		}()
	}
	stop := context.AfterFunc(ctx, func() { _ = uc.Close() })
	defer stop()
	err = copyFrames(uc, o.Stdout, o.Stderr)
	select {
	case <-detached:
		return nil
	default:
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// copyInput sends r to w until r ends (false) or the detach keys come
// (true); bytes that only start the sequence are sent on.
func copyInput(w io.Writer, r io.Reader, detach []byte) bool {
	buf := make([]byte, 4096)
	var held []byte // a prefix of detach seen at the end of the last read
	for {
		n, err := r.Read(buf)
		if n > 0 {
			data := append(held, buf[:n]...)
			held = nil
			if len(detach) > 0 {
				if i := bytes.Index(data, detach); i >= 0 {
					_, _ = w.Write(data[:i])
					return true
				}
				for k := min(len(detach)-1, len(data)); k > 0; k-- {
					if bytes.HasSuffix(data, detach[:k]) {
						held = bytes.Clone(data[len(data)-k:])
						data = data[:len(data)-k]
						break
					}
				}
			}
			if _, werr := w.Write(data); werr != nil {
				return false
			}
		}
		if err != nil {
			if len(held) > 0 {
				_, _ = w.Write(held)
			}
			return false
		}
	}
}

// copyFrames writes the keeper's frames to stdout and stderr until the
// connection ends.
func copyFrames(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [5]byte
	buf := make([]byte, MaxFrame)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		n := binary.BigEndian.Uint32(hdr[1:])
		if n > MaxFrame {
			return fmt.Errorf("attach: frame of %d bytes", n)
		}
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return err
		}
		w := stdout
		if hdr[0] == FrameStderr {
			w = stderr
		}
		if w == nil {
			w = os.Stdout
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
	}
}
