package keeper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// reports collects a keeper's messages (safe from its goroutines, after
// the test too).
type reports struct {
	mu   sync.Mutex
	msgs []string
}

func (r *reports) add(m string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
}

func (r *reports) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// newTestKeeper is a keeper of dir in this process, not serving requests.
func newTestKeeper(t *testing.T, dir string, r *reports) *Keeper {
	t.Helper()
	k := &Keeper{dir: dir, ctrs: map[string]*container{}, added: make(chan struct{}, 1), report: r.add}
	ln, err := listenIn(dir, controlSocket)
	if err != nil {
		t.Fatal(err)
	}
	k.ln = ln
	t.Cleanup(func() { ln.Close() })
	return k
}

// TestAdoptKeepsWhatItCannotRead (issue 35 item 10): a keeper taking over
// the directories removes those that are not a container's as podrun
// makes them (no config, a config that is not one, or names another
// container), but never one whose config it cannot read for now (here an
// injected EMFILE: a keeper short of file descriptors): that container
// lives, and its directory is taken on a later try.
func TestAdoptKeepsWhatItCannotRead(t *testing.T) {
	c, root := newClient(t)
	prepare := func(id string) {
		t.Helper()
		if _, err := c.Prepare(Config{ID: id, Log: filepath.Join(root, "logs", id, "0.log"), MaxSize: 1 << 20, MaxFiles: 2}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"live", "garbage", "other", "noconfig"} {
		prepare(id)
	}
	cfg := func(id string) string { return filepath.Join(c.Dir, id, configFile) }
	if err := os.WriteFile(cfg("garbage"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg("other"), []byte(`{"id":"live"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cfg("noconfig")); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	failing := true
	read := readConfigFile
	readConfigFile = func(p string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing && p == cfg("live") {
			return nil, &os.PathError{Op: "open", Path: p, Err: syscall.EMFILE}
		}
		return read(p)
	}
	t.Cleanup(func() { readConfigFile = read })

	var r reports
	k := newTestKeeper(t, c.Dir, &r)
	k.adopt()
	for _, id := range []string{"garbage", "other", "noconfig"} {
		if _, err := os.Lstat(filepath.Join(c.Dir, id)); err == nil {
			t.Errorf("%s: not a container's directory, and not removed", id)
		}
	}
	if _, err := os.Lstat(filepath.Join(c.Dir, "live")); err != nil {
		t.Fatalf("the directory of a container whose config could not be read was removed: %v (reports %q)", err, r.all())
	}
	if !slices.ContainsFunc(r.all(), func(m string) bool {
		return strings.Contains(m, "live") && strings.Contains(m, "too many open files")
	}) {
		t.Errorf("reports %q: want the failure to take live", r.all())
	}

	mu.Lock()
	failing = false
	mu.Unlock()
	k.mu.Lock()
	untaken := k.untaken
	k.mu.Unlock()
	if n := k.take(untaken); n != 1 {
		t.Fatalf("tried again, took %d containers of %q, want live", n, untaken)
	}
	k.mu.Lock()
	_, ok := k.ctrs["live"]
	left := k.untaken
	k.mu.Unlock()
	if !ok || len(left) != 0 {
		t.Fatalf("live taken: %v; left to try: %q", ok, left)
	}
	k.drop("live")
}

// TestShortOfFileDescriptors (issue 35 item 10), with real EMFILEs: keepers
// limited to from 8 to 40 file descriptors (from one that cannot start to
// one that takes every container) take over six live containers. Some run
// out while opening a container's streams, some while reading a config,
// or accepting a request; none removes, or sets out to remove, a
// container's directory, and none that took containers ends.
func TestShortOfFileDescriptors(t *testing.T) {
	readingConfig := 0
	for limit := 8; limit <= 40; limit++ {
		c, root := newClient(t)
		var ids []string
		for i := range 6 {
			id := fmt.Sprintf("ctr-%d", i)
			// Not committed: the keeper holds a writer of each FIFO, so the
			// output never ends and only the keeper's take can remove the
			// directory.
			if _, err := c.Prepare(Config{ID: id, Log: filepath.Join(root, "logs", id, "0.log"), MaxSize: 1 << 20, MaxFiles: 2}); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		t.Setenv("PODRUN_TEST_NOFILE", strconv.Itoa(limit))
		// The keeper answers once it has taken what it could, or cannot
		// accept the request, short of a descriptor; or exits, short of
		// everything.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = c.Ensure(ctx)
		cancel()
		for _, id := range ids {
			if _, err := os.Lstat(filepath.Join(c.Dir, id)); err != nil {
				b, _ := os.ReadFile(filepath.Join(c.Dir, logFile))
				t.Fatalf("a keeper with %d file descriptors removed the directory of live container %s: %v; its log:\n%s", limit, id, err, b)
			}
		}
		b, _ := os.ReadFile(filepath.Join(c.Dir, logFile))
		// Its removal fails too here, short of a descriptor to read the
		// directory with; with one freed meanwhile (an attach ending) the
		// directory is gone.
		if strings.Contains(string(b), "removing ctr-") {
			t.Fatalf("a keeper with %d file descriptors set out to remove the directory of a live container; its log:\n%s", limit, b)
		}
		if strings.Contains(string(b), configFile+": too many open files") {
			readingConfig++
		}
		lock, _ := os.ReadFile(filepath.Join(c.Dir, lockFile))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(lock)))
		if strings.Contains(string(b), "took over") && (pid <= 0 || syscall.Kill(pid, 0) != nil) {
			t.Fatalf("a keeper with %d file descriptors ended, leaving the containers it had taken; its log:\n%s", limit, b)
		}
		if pid > 0 && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitGone(t, pid, 3*time.Second)
		}
	}
	if readingConfig == 0 {
		t.Errorf("no keeper ran out of file descriptors reading a config: the test tried nothing")
	}
	t.Logf("%d keepers ran out of file descriptors reading a config", readingConfig)
}
