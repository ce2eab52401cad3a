// The user's terminal for exec -t and attach -t: raw mode, and its size
// given to the container's.

package console

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// Raw puts f in raw mode when it is a terminal; restore undoes it.
func Raw(f *os.File) (restore func(), err error) {
	if !term.IsTerminal(int(f.Fd())) {
		return func() {}, nil
	}
	old, err := term.MakeRaw(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("setting the terminal to raw mode: %w", err)
	}
	return func() { _ = term.Restore(int(f.Fd()), old) }, nil
}

// ForwardResize calls resize with the size of f's terminal, now and at
// each SIGWINCH, until stop; nothing when f is not a terminal.
func ForwardResize(ctx context.Context, f *os.File, resize func(ctx context.Context, width, height uint32)) (stop func()) {
	fd := int(f.Fd())
	if !term.IsTerminal(fd) {
		return func() {}
	}
	send := func() {
		if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
			resize(ctx, uint32(w), uint32(h))
		}
	}
	send()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-winch:
				send()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
	}
}
