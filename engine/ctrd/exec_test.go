package ctrd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/containerd/containerd/cio"

	"github.com/podrun/podrun/engine"
)

// heldIO is an exec's I/O whose output ends when end is closed (never, if
// it is not).
type heldIO struct{ end chan struct{} }

func (h heldIO) Config() cio.Config { return cio.Config{} }
func (h heldIO) Cancel()            {}
func (h heldIO) Wait()              { <-h.end }
func (h heldIO) Close() error       { return nil }

// blockingWriter blocks every Write until release is closed.
type blockingWriter struct {
	entered chan struct{}
	release chan struct{}
}

func (w blockingWriter) Write(b []byte) (int, error) {
	close(w.entered)
	<-w.release
	return len(b), nil
}

func TestDrainEndsWithTheOutput(t *testing.T) {
	ended := heldIO{end: make(chan struct{})}
	close(ended.end)
	if err := drain(context.Background(), ended, &outputActivity{}, time.Second); err != nil {
		t.Fatalf("drain of ended output = %v", err)
	}
}

func TestDrainGivesUpOnHeldOutput(t *testing.T) {
	held := heldIO{end: make(chan struct{})}
	defer close(held.end)
	start := time.Now()
	err := drain(context.Background(), held, &outputActivity{}, 200*time.Millisecond)
	if !errors.Is(err, engine.ErrOutputHeld) {
		t.Fatalf("drain of held output = %v, want ErrOutputHeld", err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("drain gave up after %v, want about 200ms", took)
	}
}

func TestDrainWaitsForASlowReader(t *testing.T) {
	held := heldIO{end: make(chan struct{})}
	defer close(held.end)
	var out outputActivity
	w := blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	go func() { _, _ = out.watch(w).Write([]byte("x")) }()
	<-w.entered
	errc := make(chan error, 1)
	start := time.Now()
	go func() { errc <- drain(context.Background(), held, &out, 100*time.Millisecond) }()
	select {
	case err := <-errc:
		t.Fatalf("drain gave up while the reader was being written to: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	close(w.release)
	if err := <-errc; !errors.Is(err, engine.ErrOutputHeld) {
		t.Fatalf("drain after the write = %v, want ErrOutputHeld", err)
	}
	// The write ended after 500ms; the idle time is counted in ticks of a
	// fortieth of the timeout, the first of which may come at once.
	if took := time.Since(start); took < 500*time.Millisecond+100*time.Millisecond*39/40 {
		t.Errorf("drain gave up after %v, before the write ended and the timeout passed", took)
	}
}

func TestDrainEndsWithCtx(t *testing.T) {
	held := heldIO{end: make(chan struct{})}
	defer close(held.end)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := drain(ctx, held, &outputActivity{}, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("drain past ctx = %v, want DeadlineExceeded", err)
	}
}
