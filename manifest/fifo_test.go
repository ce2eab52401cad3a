package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const fifoPod = "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers: [{name: c, image: busybox:1}]\n"

// within runs fn, failing the test if it has not returned after 10 s (a
// read blocked on a FIFO never returns).
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10 s", what)
	}
}

// fifoDir makes a directory holding a pod in a.yaml, a FIFO b.yaml nobody
// writes to, a symlink c.yaml to a pod outside it, an editor's #d.yaml#
// and e.yaml~, and a pod in f.json.
func fifoDir(t *testing.T) string {
	t.Helper()
	dir, outside := t.TempDir(), t.TempDir()
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "a.yaml"), fmt.Sprintf(fifoPod, "a"))
	if err := unix.Mkfifo(filepath.Join(dir, "b.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(outside, "c.yaml"), fmt.Sprintf(fifoPod, "c"))
	if err := os.Symlink(filepath.Join(outside, "c.yaml"), filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, "#d.yaml"), fmt.Sprintf(fifoPod, "d"))
	write(filepath.Join(dir, "e.yaml~"), fmt.Sprintf(fifoPod, "e"))
	write(filepath.Join(dir, "f.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"f"},"spec":{"containers":[{"name":"c","image":"busybox:1"}]}}`)
	return dir
}

// TestDirectoryReadAsTheDaemonReadsIt: a directory given to validate, up or
// --configmap is read as the daemon reads its manifest directory: regular
// files only (a FIFO is not opened, so nothing blocks; a symlink is not
// followed out of it), editors' files skipped, each skip noted.
func TestDirectoryReadAsTheDaemonReadsIt(t *testing.T) {
	dir := fifoDir(t)
	var set *Set
	var err error
	within(t, "Load of a directory holding a FIFO", func() { set, err = Load([]string{dir}, nil) })
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var names []string
	for _, p := range set.Pods {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "a,f" {
		t.Errorf("pods read: %v, want a,f", names)
	}
	notes := strings.Join(set.Notes, "\n")
	for _, want := range []string{"b.yaml (a FIFO) skipped", "c.yaml (a symbolic link) skipped"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q do not say %q", notes, want)
		}
	}
	// --configmap DIR reads the same way.
	within(t, "LoadObjects of a directory holding a FIFO", func() { _, err = LoadObjects([]string{dir}) })
	if err == nil || !strings.Contains(err.Error(), "a --configmap file holds ConfigMap and Secret objects only") {
		t.Errorf("LoadObjects: %v", err)
	}
}

// TestNamedFIFO: a FIFO named explicitly is read (as <(...) names a pipe),
// without blocking when nobody writes to it.
func TestNamedFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pod.yaml")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	within(t, "Load of a FIFO nobody writes to", func() { _, err = Load([]string{fifo}, nil) })
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Msg != noObjects {
		t.Errorf("Load of an idle FIFO: %v, want %q", err, noObjects)
	}
	within(t, "LoadObjects of a FIFO nobody writes to", func() { _, err = LoadObjects([]string{fifo}) })
	if err == nil || !strings.Contains(err.Error(), noObjects) {
		t.Errorf("LoadObjects of an idle FIFO: %v", err)
	}
	// A pipe with a writer, as bash's <(cat pod.yaml): read to its end.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	go func() {
		pw.WriteString(fmt.Sprintf(fifoPod, "piped"))
		time.Sleep(100 * time.Millisecond) // the reader waits for the rest
		pw.WriteString("---\n" + fmt.Sprintf(fifoPod, "piped2"))
		pw.Close()
	}()
	var set *Set
	within(t, "Load of a pipe", func() { set, err = Load([]string{"/proc/self/fd/" + strconv.Itoa(int(pr.Fd()))}, nil) })
	if err != nil || len(set.Pods) != 2 {
		t.Fatalf("Load of a pipe: %v", err)
	}
}
