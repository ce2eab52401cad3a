package keeper

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/podrun/podrun/exepages"
	"github.com/podrun/podrun/lock"
)

// idleExit is how long a keeper with no container lives on (tests
// shorten it).
var idleExit = 5 * time.Second

// Timings of the keeper's life.
const (
	// takeOver is how long a new keeper waits for the lock of one that is
	// ending (it ends when no container needs it).
	takeOver = 5 * time.Second
	// staleTemp is the age of a directory a killed podrun left half made.
	staleTemp = 10 * time.Minute
)

// Keeper serves the containers of one io directory.
type Keeper struct {
	dir        string
	closeStdin func(Config) error
	report     func(string)

	mu      sync.Mutex
	ctrs    map[string]*container
	closing bool
	idle    *time.Timer
	ln      net.Listener
	untaken []string      // container directories take could not take (retryTakes)
	added   chan struct{} // a container was taken (trim)
}

// Serve runs the keeper of dir (mode 0700, root's): it takes the keeper's
// lock (or returns nil at once when another keeper holds it past
// takeOver), takes every container directory there is, and serves adds and
// drops on its control socket until it has had no container for idleExit.
// closeStdin closes a container's stdin at its runtime (stdinOnce).
func Serve(dir string, closeStdin func(Config) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), takeOver)
	l, err := lock.Acquire(ctx, filepath.Join(dir, lockFile), nil)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil // another keeper serves
		}
		return err
	}
	defer l.Release()
	k := &Keeper{dir: dir, closeStdin: closeStdin, ctrs: map[string]*container{}, added: make(chan struct{}, 1),
		report: newJournal(dir).log}
	ln, err := listenIn(dir, controlSocket)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	k.ln = ln
	k.adopt()
	k.mu.Lock()
	k.idleCheck()
	k.mu.Unlock()
	go k.trim()
	go k.retryTakes()
	for {
		conn, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			break // idle
		}
		if err != nil {
			// Short of file descriptors (EMFILE) for now: the request waits
			// in the backlog, and the containers taken are served on.
			k.report(fmt.Sprintf("accepting a request: %v", err))
			time.Sleep(acceptRetry)
			continue
		}
		go k.handle(conn)
	}
	// Removed under the lock: a new keeper binds its own after taking it.
	_ = os.Remove(filepath.Join(dir, controlSocket))
	return nil
}

// When the keeper gives back the pages of the binary and the heap it has
// not used since (exepages): a process of the whole podrun binary touches
// some 20 MiB of it to start, and its package initialisation leaves
// megabytes of free heap; copying output uses a small part of either.
const (
	trimEvery    = 30 * time.Second // whatever happens
	trimAfterAdd = 2 * time.Second  // after containers were taken (opening them touches more)
)

// trim gives back what the keeper does not use, at once, a moment after
// containers were taken, and every trimEvery, until the keeper ends.
func (k *Keeper) trim() {
	t := time.NewTimer(0)
	for {
		select {
		case <-t.C:
		case <-k.added:
			t.Reset(trimAfterAdd)
			continue
		}
		debug.FreeOSMemory()
		if _, err := exepages.Drop(); err != nil {
			k.report(fmt.Sprintf("giving back the binary's pages: %v", err))
		}
		t.Reset(trimEvery)
	}
}

// adopt takes every container directory of the io dir: those a killed
// keeper served, and those made since.
func (k *Keeper) adopt() {
	ents, err := os.ReadDir(k.dir)
	if err != nil {
		k.report(fmt.Sprintf("reading %s: %v", k.dir, err))
		return
	}
	var names []string
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() {
			continue
		}
		if strings.HasPrefix(name, ".") {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
				_ = os.RemoveAll(filepath.Join(k.dir, name)) // a podrun killed while making it
			}
			continue
		}
		names = append(names, name)
	}
	if n := k.take(names); n > 0 {
		k.report(fmt.Sprintf("took over %d containers", n))
	}
}

// acceptRetry is how long the keeper waits after a request it could not
// accept.
const acceptRetry = 100 * time.Millisecond

// takeRetry is how often the directories that could not be taken are
// tried again.
const takeRetry = time.Second

// take takes the container directories names and returns how many it
// took. A directory that is not a container's as podrun makes them
// (renamed into place whole) is removed: every later podrun would start a
// keeper to take it. One that cannot be taken for now (its config cannot
// be read: a file descriptor short) is its container's, alive maybe: it is
// kept, and tried again (retryTakes).
func (k *Keeper) take(names []string) int {
	n := 0
	var again []string
	for _, name := range names {
		dir := filepath.Join(k.dir, name)
		err := k.add(name)
		switch {
		case err == nil:
			n++
		case errors.Is(err, errClosing):
		case errors.Is(err, errNotContainer):
			if _, serr := os.Lstat(dir); errors.Is(serr, os.ErrNotExist) {
				continue // removed meanwhile: its container is gone
			}
			k.report(fmt.Sprintf("removing %s: %v", name, err))
			_ = os.RemoveAll(dir)
		default:
			k.report(fmt.Sprintf("taking %s (tried again every %v): %v", name, takeRetry, err))
			again = append(again, name)
		}
	}
	k.mu.Lock()
	k.untaken = again
	k.mu.Unlock()
	return n
}

// retryTakes tries the directories take could not take again, every
// takeRetry, until the keeper ends.
func (k *Keeper) retryTakes() {
	for {
		time.Sleep(takeRetry)
		k.mu.Lock()
		names, closing := k.untaken, k.closing
		k.mu.Unlock()
		if closing {
			return
		}
		if n := k.take(names); n > 0 {
			k.report(fmt.Sprintf("took %d containers on a second try", n))
		}
	}
}

// handle answers one request: "add ID", "commit ID", "drop ID" or "ping", each
// answered "ok", "closing" (this keeper is ending: start another) or
// "error: ...".
func (k *Keeper) handle(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	line, err := bufio.NewReader(io.LimitReader(conn, 512)).ReadString('\n')
	if err != nil {
		return
	}
	op, id, _ := strings.Cut(strings.TrimSpace(line), " ")
	var reply string
	switch {
	case op == "ping":
		reply = answer(k.alive())
	case !validID(id):
		reply = "error: bad container id"
	case op == "add":
		reply = answer(k.add(id))
	case op == "drop":
		k.drop(id)
		reply = "ok"
	case op == "commit":
		k.commit(id)
		reply = "ok"
	default:
		reply = "error: unknown request"
	}
	_, _ = fmt.Fprintln(conn, reply)
}

func answer(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errClosing):
		return "closing"
	}
	return "error: " + strings.ReplaceAll(err.Error(), "\n", " ")
}

var errClosing = errors.New("the keeper is ending")

// alive is errClosing once the keeper is ending.
func (k *Keeper) alive() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closing {
		return errClosing
	}
	return nil
}

// add opens container id's streams and copies them from now on; a
// container it already serves is served on.
func (k *Keeper) add(id string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closing {
		return errClosing
	}
	if _, ok := k.ctrs[id]; ok {
		return nil
	}
	cfg, err := readConfig(k.dir, id)
	if err != nil {
		return err
	}
	_, cerr := os.Lstat(filepath.Join(k.dir, id, committedFile))
	c, err := openContainer(filepath.Join(k.dir, id), cfg, cerr == nil, k.closeStdin, k.report)
	if err != nil {
		return err
	}
	k.ctrs[id] = c
	k.idleCheck()
	select {
	case k.added <- struct{}{}:
	default:
	}
	go func() {
		c.run()
		// Its output ended and is in the log: its directory goes, which
		// tells whoever waits for it (WaitDrained).
		k.mu.Lock()
		delete(k.ctrs, id)
		_ = os.RemoveAll(c.dir)
		k.idleCheck()
		k.mu.Unlock()
		close(c.done)
	}()
	return nil
}

// commit lets container id's output end (its task is created).
func (k *Keeper) commit(id string) {
	k.mu.Lock()
	c := k.ctrs[id]
	k.mu.Unlock()
	if c != nil {
		c.commit()
	}
}

// drop lets container id go, without waiting for the end of its output,
// and returns once it is closed.
func (k *Keeper) drop(id string) {
	k.mu.Lock()
	c := k.ctrs[id]
	k.mu.Unlock()
	if c == nil {
		return
	}
	c.drop()
	<-c.done
}

// idleCheck starts the idle timer when no container is left and stops it
// otherwise (k.mu held).
func (k *Keeper) idleCheck() {
	if len(k.ctrs) > 0 {
		if k.idle != nil {
			k.idle.Stop()
			k.idle = nil
		}
		return
	}
	if k.idle == nil {
		k.idle = time.AfterFunc(idleExit, k.idleEnd)
	}
}

// idleEnd ends the keeper if it still has no container.
func (k *Keeper) idleEnd() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.ctrs) > 0 || k.closing {
		return
	}
	k.closing = true
	_ = k.ln.Close()
}
