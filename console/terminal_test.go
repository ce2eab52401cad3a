package console

import (
	"context"
	"os"
	"testing"
)

// TestNotATerminalStaysAsItIs: on a pipe, Raw changes nothing and
// ForwardResize never resizes.
func TestNotATerminalStaysAsItIs(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	restore, err := Raw(r)
	if err != nil {
		t.Fatalf("Raw of a pipe: %v", err)
	}
	restore()
	resized := false
	ForwardResize(context.Background(), r, func(context.Context, uint32, uint32) { resized = true })()
	if resized {
		t.Error("a pipe's size was forwarded")
	}
}
