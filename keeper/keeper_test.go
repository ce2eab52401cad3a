package keeper

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/logs"
)

// TestMain runs the test binary as the keeper when a Client starts it
// (`<exe> cri-io --dir DIR`).
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "cri-io" && os.Args[2] == "--dir" {
		idleExit = 500 * time.Millisecond
		if n, err := strconv.ParseUint(os.Getenv("PODRUN_TEST_NOFILE"), 10, 64); err == nil { // TestShortOfFileDescriptors
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		if err := Serve(os.Args[3], nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 4 && os.Args[1] == "journal-flood" { // TestKeeperLogCappedWhileRunning
		maxLog = 4096
		n, _ := strconv.Atoi(os.Args[3])
		j := newJournal(os.Args[2])
		for i := range n {
			j.log(fmt.Sprintf("message %06d", i))
		}
		os.Exit(0)
	}
	idleExit = 200 * time.Millisecond
	os.Exit(m.Run())
}

// shim is the test in the runtime's place: it holds a container's FIFOs
// as containerd's runc shim does (a writer for the output, and a reader it
// never reads, so that a writer never sees EPIPE).
type shim struct {
	out, err *os.File
	readers  []*os.File
	stdin    *os.File
}

// openShim opens the FIFOs as the runtime does when it creates a task,
// which is then committed.
func openShim(t *testing.T, c *Client, id string, s Streams) *shim {
	t.Helper()
	defer func() {
		if err := c.Commit(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}()
	open := func(p string, flag int) *os.File {
		f, err := os.OpenFile(p, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	sh := &shim{out: open(s.Stdout, os.O_WRONLY)}
	sh.readers = append(sh.readers, open(s.Stdout, os.O_RDONLY|syscall.O_NONBLOCK))
	if s.Stderr != "" {
		sh.err = open(s.Stderr, os.O_WRONLY)
		sh.readers = append(sh.readers, open(s.Stderr, os.O_RDONLY|syscall.O_NONBLOCK))
	}
	if s.Stdin != "" {
		sh.stdin = open(s.Stdin, os.O_RDONLY)
	}
	return sh
}

// exit is the container's end: the shim closes its ends.
func (sh *shim) exit() {
	for _, f := range append([]*os.File{sh.out, sh.err, sh.stdin}, sh.readers...) {
		if f != nil {
			f.Close()
		}
	}
}

func newClient(t *testing.T) (*Client, string) {
	t.Helper()
	root := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{Dir: filepath.Join(root, "io"), Exe: exe}
	t.Cleanup(func() { stopKeeper(t, c.Dir) })
	return c, root
}

// stopKeeper ends the keepers of dir: the one its lock file names, given
// a moment to end by itself, then every other started for dir. Concurrent
// starts each start one; one that lost the lock waits for it (takeOver) and
// serves once it has it, making files in dir, maybe as the test's temp dir
// is being removed.
func stopKeeper(t *testing.T, dir string) {
	if b, err := os.ReadFile(filepath.Join(dir, lockFile)); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 && pid != os.Getpid() && syscall.Kill(pid, 0) == nil {
			waitGone(t, pid, 3*time.Second)
		}
	}
	for _, pid := range keepersOf(t, dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !waitGone(t, pid, 10*time.Second) {
			t.Errorf("keeper %d of %s still runs after SIGKILL", pid, dir)
		}
	}
}

// keepersOf are the processes run as dir's keeper (`<exe> cri-io --dir
// dir`, as Client starts them), by their command line.
func keepersOf(t *testing.T, dir string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), "\x00cri-io\x00--dir\x00"+dir+"\x00") {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitGone(t *testing.T, pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func keeperPid(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, lockFile))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func start(t *testing.T, c *Client, cfg Config) Streams {
	t.Helper()
	s, err := c.Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Add(context.Background(), cfg.ID); err != nil {
		t.Fatal(err)
	}
	return s
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	var out bytes.Buffer
	if err := logs.Copy(context.Background(), &out, filepath.Dir(path), 0, logs.Options{Tail: -1}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestLastLineAsSoonAsTheOutputEnds: a container whose output ends without
// a newline has that last line in its log once its streams close (the
// keeper's directory for it is gone then), with nothing else to wait for.
func TestLastLineAsSoonAsTheOutputEnds(t *testing.T) {
	c, root := newClient(t)
	logPath := filepath.Join(root, "logs", "app", "0.log")
	s := start(t, c, Config{ID: "ctr-1", Log: logPath, MaxSize: 1 << 20, MaxFiles: 2})
	sh := openShim(t, c, "ctr-1", s)
	fmt.Fprint(sh.out, "one\ntwo\nDONE")
	fmt.Fprint(sh.err, "oops")
	sh.exit()
	if !c.WaitDrained(context.Background(), "ctr-1", 5*time.Second) {
		t.Fatal("the output did not drain")
	}
	raw, _ := os.ReadFile(logPath)
	for _, want := range []string{" stdout F one\n", " stdout F two\n", " stdout P DONE\n", " stderr P oops\n"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("log has no %q:\n%s", want, raw)
		}
	}
}

// TestKeeperKilledMidStream: the keeper is killed -9 while a container
// writes; the container goes on (its FIFO holds what it writes), the next
// keeper takes the container over and every line written after the kill
// reaches the log, in order.
func TestKeeperKilledMidStream(t *testing.T) {
	c, root := newClient(t)
	logPath := filepath.Join(root, "logs", "app", "0.log")
	s := start(t, c, Config{ID: "ctr-1", Log: logPath, MaxSize: 1 << 20, MaxFiles: 2})
	sh := openShim(t, c, "ctr-1", s)
	defer sh.exit()
	for i := range 100 {
		fmt.Fprintf(sh.out, "line %d\n", i)
	}
	waitFor(t, func() bool { return strings.Count(readLog(t, logPath), "\n") == 100 })
	pid := keeperPid(t, c.Dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitGone(t, pid, 5*time.Second) {
		t.Fatal("the keeper did not die")
	}
	// The container writes on, without a reader: its FIFO holds it.
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for i := 100; i < 200; i++ {
			fmt.Fprintf(sh.out, "line %d\n", i)
		}
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the container blocked on its output")
	}
	if err := c.Ensure(context.Background()); err != nil { // any later podrun
		t.Fatal(err)
	}
	if keeperPid(t, c.Dir) == pid {
		t.Fatal("no new keeper")
	}
	waitFor(t, func() bool { return strings.Count(readLog(t, logPath), "\n") == 200 })
	var want strings.Builder
	for i := range 200 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if got := readLog(t, logPath); got != want.String() {
		t.Errorf("log:\n%s", got)
	}
}

// TestOneKeeperForConcurrentStarts: containers started at once by several
// podruns on a node with no keeper share one keeper, which serves them
// all, and ends when they are all gone.
func TestOneKeeperForConcurrentStarts(t *testing.T) {
	c, root := newClient(t)
	const n = 8
	var wg sync.WaitGroup
	streams := make([]Streams, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other := &Client{Dir: c.Dir, Exe: c.Exe} // another process's client
			id := fmt.Sprintf("ctr-%d", i)
			s, err := other.Prepare(Config{ID: id, Log: filepath.Join(root, "logs", id, "0.log"), MaxSize: 1 << 20, MaxFiles: 2})
			if err == nil {
				err = other.Add(context.Background(), id)
			}
			if err != nil {
				t.Error(err)
			}
			streams[i] = s
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	pid := keeperPid(t, c.Dir)
	for i, s := range streams {
		sh := openShim(t, c, fmt.Sprintf("ctr-%d", i), s)
		fmt.Fprintf(sh.out, "hello %d\n", i)
		sh.exit()
	}
	for i := range n {
		id := fmt.Sprintf("ctr-%d", i)
		if !c.WaitDrained(context.Background(), id, 5*time.Second) {
			t.Fatalf("%s did not drain", id)
		}
		if got := readLog(t, filepath.Join(root, "logs", id, "0.log")); got != fmt.Sprintf("hello %d\n", i) {
			t.Errorf("%s: log %q", id, got)
		}
	}
	if keeperPid(t, c.Dir) != pid {
		t.Error("more than one keeper served")
	}
	if !waitGone(t, pid, 5*time.Second) {
		t.Error("the keeper did not end with no container left")
	}
}

// TestDropBeforeTheEnd: a container let go before its output ends (it is
// removed) is closed at once and its directory goes.
func TestDropBeforeTheEnd(t *testing.T) {
	c, root := newClient(t)
	s := start(t, c, Config{ID: "ctr-1", Log: filepath.Join(root, "0.log"), MaxSize: 1 << 20, MaxFiles: 2})
	sh := openShim(t, c, "ctr-1", s)
	defer sh.exit()
	if err := c.Remove(context.Background(), "ctr-1", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(c.Dir, "ctr-1")); !os.IsNotExist(err) {
		t.Errorf("the container's directory is still there: %v", err)
	}
}

// TestAttachAndStdinOnce: the output of a container with stdin reaches the
// log and an attached client; the client's input reaches the container's
// stdin, and its end closes that stdin (stdinOnce).
func TestAttachAndStdinOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "io")
	var closed atomic.Int32
	served := make(chan error, 1)
	c := &Client{Dir: dir}
	logPath := filepath.Join(t.TempDir(), "0.log")
	s, err := c.Prepare(Config{ID: "ctr-1", Log: logPath, MaxSize: 1 << 20, MaxFiles: 2, Stdin: true, StdinOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() { served <- Serve(dir, func(Config) error { closed.Add(1); return nil }) }() // takes the container
	waitFor(t, func() bool { return c.ping(context.Background()) == nil })
	sh := openShim(t, c, "ctr-1", s)
	var out, errOut bytes.Buffer
	attached := make(chan error, 1)
	go func() {
		attached <- attach.Attach(context.Background(), filepath.Join(dir, "ctr-1"), attach.Options{Stdin: strings.NewReader("hi\n"), Stdout: &out, Stderr: &errOut})
	}()
	got := make([]byte, 3)
	if _, err := io.ReadFull(sh.stdin, got); err != nil || string(got) != "hi\n" {
		t.Fatalf("container's stdin read %q, %v", got, err)
	}
	waitFor(t, func() bool { return closed.Load() == 1 }) // the client's input ended: stdinOnce
	fmt.Fprint(sh.out, "out\n")
	fmt.Fprint(sh.err, "err\n")
	sh.exit()
	if err := <-attached; err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if out.String() != "out\n" || errOut.String() != "err\n" {
		t.Errorf("attached client got stdout %q, stderr %q", out.String(), errOut.String())
	}
	if !c.WaitDrained(context.Background(), "ctr-1", 5*time.Second) {
		t.Fatal("not drained")
	}
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), " stdout F out\n") || !strings.Contains(string(log), " stderr F err\n") {
		t.Errorf("log:\n%s", log)
	}
	if err := <-served; err != nil { // idle: no container left
		t.Fatalf("Serve: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNothingEndsBeforeTheCommit: until the task is created (commit), the
// runtime's opening of the FIFOs never waits, even with no podrun holding
// them (it was killed), and a writer that comes and goes (a create cut
// off) is not the end of the output.
func TestNothingEndsBeforeTheCommit(t *testing.T) {
	c, root := newClient(t)
	logPath := filepath.Join(root, "0.log")
	s := start(t, c, Config{ID: "ctr-1", Log: logPath, MaxSize: 1 << 20, MaxFiles: 2})
	for _, p := range []string{s.Stdout, s.Stderr} {
		w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0) // ENXIO without a reader
		if err != nil {
			t.Fatalf("opening %s for writing: %v", p, err)
		}
		w.Close()
	}
	if c.WaitDrained(context.Background(), "ctr-1", 300*time.Millisecond) {
		t.Fatal("a writer that came and went ended the output before the commit")
	}
	sh := openShim(t, c, "ctr-1", s)
	fmt.Fprint(sh.out, "after\n")
	sh.exit()
	if !c.WaitDrained(context.Background(), "ctr-1", 5*time.Second) {
		t.Fatal("not drained after the commit and the end")
	}
	if got := readLog(t, logPath); got != "after\n" {
		t.Errorf("log %q", got)
	}
}

// TestRemoveTakesHalfMadeDirectories: the directories a podrun killed in
// Prepare left under their temporary names go with the container's Remove,
// those of other containers stay.
func TestRemoveTakesHalfMadeDirectories(t *testing.T) {
	dir := t.TempDir()
	c := &Client{Dir: dir}
	for _, name := range []string{".a-app-0.123", ".a-app-0.9", ".a-app-01.5", ".a-app-0.1.2", "a-app-0.7"} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Remove(context.Background(), "a-app-0", 0); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{".a-app-0.1.2", ".a-app-01.5", "a-app-0.7"}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
}
