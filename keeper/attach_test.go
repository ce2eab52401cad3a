package keeper

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// attachRaw connects to container id's attach socket as a client that
// sends no input, and never reads.
func attachRaw(t *testing.T, dir, id string) *net.UnixConn {
	t.Helper()
	conn, err := net.Dial("unix", filepath.Join(dir, id, SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	return conn.(*net.UnixConn)
}

// hungUp waits up to d for the keeper to close its end of conn, without
// reading from it.
func hungUp(t *testing.T, conn *net.UnixConn, d time.Duration) bool {
	t.Helper()
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var hup bool
	deadline := time.Now().Add(d)
	_ = rc.Control(func(fd uintptr) {
		for !hup && time.Now().Before(deadline) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
			if n, err := unix.Poll(fds, 100); err == nil && n > 0 {
				hup = fds[0].Revents&(unix.POLLHUP|unix.POLLRDHUP) != 0
			}
		}
	})
	return hup
}

// serveOne serves container cfg in this process and returns the shim.
func serveOne(t *testing.T, cfg Config) (*Client, *shim) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "io")
	c := &Client{Dir: dir}
	s, err := c.Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(dir, nil) }()
	t.Cleanup(func() {
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	waitFor(t, func() bool { return c.ping(context.Background()) == nil })
	return c, openShim(t, c, cfg.ID, s)
}

// TestAttachClientThatStopsReadingIsDropped: a client that never reads
// while the container writes flat out has its connection closed by the
// keeper, and the container's output goes on into the log, never waiting.
func TestAttachClientThatStopsReadingIsDropped(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "0.log")
	c, sh := serveOne(t, Config{ID: "ctr-1", Log: logPath, MaxSize: 64 << 20, MaxFiles: 2, Stdin: true})
	defer sh.exit()
	conn := attachRaw(t, c.Dir, "ctr-1")
	time.Sleep(50 * time.Millisecond) // the client is served
	line := bytes.Repeat([]byte("x"), 1023)
	line = append(line, '\n')
	wrote := make(chan error, 1)
	go func() {
		for range 16 << 10 { // 16 MiB
			if _, err := sh.out.Write(line); err != nil {
				wrote <- err
				return
			}
		}
		_, err := fmt.Fprintln(sh.out, "the end")
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the container's output waited for the client that does not read")
	}
	if !hungUp(t, conn, 5*time.Second) {
		t.Error("the keeper kept the connection of a client that does not read")
	}
	sh.exit()
	if !c.WaitDrained(context.Background(), "ctr-1", 10*time.Second) {
		t.Fatal("not drained")
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte(" stdout F x")); n != 16<<10 || !bytes.HasSuffix(b, []byte(" stdout F the end\n")) {
		t.Errorf("log has %d of the %d lines, ends %q", n, 16<<10, b[max(len(b)-40, 0):])
	}
}

// TestAttachClientWriteDeadline: a client that reads nothing while the
// container writes little (its queue never fills) is dropped once a write
// to it has waited clientWriteTimeout, and the keeper ends the container
// without waiting for it.
func TestAttachClientWriteDeadline(t *testing.T) {
	old := clientWriteTimeout
	t.Cleanup(func() { clientWriteTimeout = old }) // once the keeper has ended: cleanups run last first
	clientWriteTimeout = 300 * time.Millisecond
	logPath := filepath.Join(t.TempDir(), "0.log")
	c, sh := serveOne(t, Config{ID: "ctr-1", Log: logPath, MaxSize: 64 << 20, MaxFiles: 2, Stdin: true})
	defer sh.exit()
	conn := attachRaw(t, c.Dir, "ctr-1")
	time.Sleep(50 * time.Millisecond)
	// Frames of 32 KiB, fewer than the client's queue: the socket's buffer
	// fills and a write waits.
	chunk := bytes.Repeat([]byte("y"), 32<<10-1)
	chunk = append(chunk, '\n')
	for range clientQueue / 4 {
		if _, err := sh.out.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if !hungUp(t, conn, 5*time.Second) {
		t.Error("a client that read nothing was kept past the write deadline")
	}
	sh.exit()
	if !c.WaitDrained(context.Background(), "ctr-1", 10*time.Second) {
		t.Fatal("not drained")
	}
}
