package attach

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podrun/podrun/logs"
)

// TestKeeper runs a keeper with the test as the shim: the container's
// output goes to the log and to an attached client; the client's input
// reaches the container's stdin, and its end closes that stdin
// (stdinOnce); the end of the output ends the keeper and the attach, and
// the keeper's directory goes.
func TestKeeper(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ctr")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir) // the socket is bound relative to the keeper's directory
	logPath := filepath.Join(t.TempDir(), "0.log")
	cfg := Config{Dir: dir, Log: logs.DriverArg(logPath, logs.DefaultRotation), Stdin: true, StdinOnce: true}
	var closed atomic.Int32
	readyR, readyW, _ := os.Pipe()
	commitR, commitW, _ := os.Pipe()
	served := make(chan error, 1)
	go func() { served <- Serve(cfg, func() error { closed.Add(1); return nil }, readyW, commitR) }()
	if line, _ := bufio.NewReader(readyR).ReadString('\n'); line != "ok\n" {
		t.Fatalf("ready: %q", line)
	}
	if _, err := commitW.Write([]byte{'c'}); err != nil {
		t.Fatal(err)
	}
	// The shim's ends of the FIFOs.
	open := func(name string, flag int) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, name), flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	stdout, stderr := open(StdoutFile, os.O_WRONLY), open(StderrFile, os.O_WRONLY)
	stdin := open(StdinFile, os.O_RDONLY)
	defer stdin.Close()

	var out, errOut bytes.Buffer
	attached := make(chan error, 1)
	go func() {
		attached <- Attach(context.Background(), dir, Options{Stdin: strings.NewReader("hi\n"), Stdout: &out, Stderr: &errOut})
	}()
	got := make([]byte, 3)
	if _, err := io.ReadFull(stdin, got); err != nil || string(got) != "hi\n" {
		t.Fatalf("container's stdin read %q, %v", got, err)
	}
	for closed.Load() == 0 { // the client's input ended: stdinOnce
		time.Sleep(time.Millisecond)
	}
	if _, err := stdout.WriteString("out\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := stderr.WriteString("err\n"); err != nil {
		t.Fatal(err)
	}
	stdout.Close()
	stderr.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := <-attached; err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if out.String() != "out\n" || errOut.String() != "err\n" {
		t.Errorf("attached client got stdout %q, stderr %q", out.String(), errOut.String())
	}
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), " stdout F out\n") || !strings.Contains(string(log), " stderr F err\n") {
		t.Errorf("log:\n%s", log)
	}
	if n := closed.Load(); n != 1 {
		t.Errorf("stdin closed at the shim %d times, want 1", n)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the keeper's directory is still there: %v", err)
	}
}

// TestKeeperAbort: without the commit (the task was not created, or
// podrun died), the keeper ends and removes its directory.
func TestKeeperAbort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ctr")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	readyR, readyW, _ := os.Pipe()
	commitR, commitW, _ := os.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(Config{Dir: dir, Log: logs.DriverArg(filepath.Join(t.TempDir(), "0.log"), logs.DefaultRotation), TTY: true}, nil, readyW, commitR)
	}()
	if line, _ := bufio.NewReader(readyR).ReadString('\n'); line != "ok\n" {
		t.Fatalf("ready: %q", line)
	}
	commitW.Close()
	if err := <-served; err == nil {
		t.Error("Serve without a commit: no error")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the keeper's directory is still there: %v", err)
	}
}

func TestCopyInputDetach(t *testing.T) {
	for _, tc := range []struct {
		chunks   []string
		sent     string
		detached bool
	}{
		{[]string{"ls\n", "\x10\x11", "never"}, "ls\n", true},
		{[]string{"ls\x10", "\x11rest"}, "ls", true}, // split across reads
		{[]string{"a\x10", "b"}, "a\x10b", false},    // a lone ctrl-p goes through
		{[]string{"a\x10"}, "a\x10", false},          // and at the end of input
		{[]string{"\x10\x10\x11"}, "\x10", true},     // the last ctrl-p starts the sequence
	} {
		var w bytes.Buffer
		r := &chunked{chunks: tc.chunks}
		detached := copyInput(&w, r, DetachKeys)
		if detached != tc.detached || w.String() != tc.sent {
			t.Errorf("%q: detached %v, sent %q; want %v, %q", tc.chunks, detached, w.String(), tc.detached, tc.sent)
		}
	}
}

// chunked returns one chunk per Read.
type chunked struct{ chunks []string }

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks = c.chunks[1:]
	return n, nil
}
