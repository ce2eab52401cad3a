package lock

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestImageHolds: a collection sees the references of the holds alive
// (taken by this process or another: each hold is its own file and lock),
// not those released or whose holder is gone (their files are removed);
// a hold waits for a collection under way, and a collection excludes
// imports.
func TestImageHolds(t *testing.T) {
	im := Images{Dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	collect := func() []string {
		t.Helper()
		var got []string
		if err := im.Collect(ctx, func(held []string) error { got = held; return nil }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return got
	}
	releaseA, err := im.Hold(ctx, []string{"a:1", "b:1"})
	if err != nil {
		t.Fatal(err)
	}
	releaseC, err := im.Hold(ctx, []string{"c:1"})
	if err != nil {
		t.Fatal(err)
	}
	// A hold whose podrun was killed: its file, its lock gone with it.
	if err := os.WriteFile(filepath.Join(im.heldDir(), "hold-killed"), []byte("d:1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := collect(); !slices.Equal(got, []string{"a:1", "b:1", "c:1"}) {
		t.Errorf("held %v, want a, b and c", got)
	}
	if _, err := os.Stat(filepath.Join(im.heldDir(), "hold-killed")); !os.IsNotExist(err) {
		t.Errorf("the killed holder's file is left: %v", err)
	}
	releaseA()
	if got := collect(); !slices.Equal(got, []string{"c:1"}) {
		t.Errorf("held %v after a's release, want c", got)
	}
	releaseC()
	if entries, _ := os.ReadDir(im.heldDir()); len(entries) != 0 || len(collect()) != 0 {
		t.Errorf("left after every release: %v", entries)
	}

	// While a collection runs, holds and imports wait for it.
	inside, done := make(chan struct{}), make(chan struct{})
	go func() {
		_ = im.Collect(ctx, func([]string) error { close(inside); <-done; return nil })
	}()
	<-inside
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	if _, err := im.Hold(short, []string{"e:1"}); err == nil {
		t.Error("a hold was taken during a collection")
	}
	if _, err := im.Import(short); err == nil {
		t.Error("an import started during a collection")
	}
	cancelShort()
	close(done)
	release, err := im.Hold(ctx, []string{"e:1"})
	if err != nil {
		t.Fatalf("hold after the collection: %v", err)
	}
	release()
}
