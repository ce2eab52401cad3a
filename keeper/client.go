package keeper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Client is podrun's side of the keeper: it makes a container's directory,
// has the keeper take it (starting a keeper when none answers), lets it go
// and waits for its output to be written.
type Client struct {
	Dir string // the io directory, <run dir>/io (root's, 0700)
	Exe string // the podrun binary: the keeper runs as `Exe cri-io --dir Dir`
	// Cgroup is the cgroup the keeper moves itself to (`--cgroup`), away
	// from its starter's; "": it stays in the starter's.
	Cgroup string

	mu sync.Mutex // one keeper start at a time from this process
}

// Streams are the paths the runtime connects a task's streams to.
type Streams struct {
	Stdin, Stdout, Stderr string // "" when the container has none
	Terminal              bool
}

// startWait bounds the wait for a started keeper to answer.
const startWait = 10 * time.Second

// Prepare makes the directory of container cfg.ID (replacing what an
// earlier start of it left): its FIFOs and its config, made apart and
// renamed into place so that a keeper never sees half of it.
func (c *Client) Prepare(cfg Config) (Streams, error) {
	if !validID(cfg.ID) {
		return Streams{}, fmt.Errorf("container id %q cannot name a stream directory", cfg.ID)
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return Streams{}, err
	}
	tmp, err := os.MkdirTemp(c.Dir, "."+cfg.ID+".")
	if err != nil {
		return Streams{}, err
	}
	defer os.RemoveAll(tmp) // once renamed, nothing is left under this name
	names := []string{StdoutFile}
	if !cfg.TTY {
		names = append(names, StderrFile)
	}
	if cfg.Stdin {
		names = append(names, StdinFile)
	}
	for _, n := range names {
		if err := unix.Mkfifo(filepath.Join(tmp, n), 0o600); err != nil {
			return Streams{}, fmt.Errorf("making the %s FIFO: %w", n, err)
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return Streams{}, err
	}
	if err := os.WriteFile(filepath.Join(tmp, configFile), b, 0o600); err != nil {
		return Streams{}, err
	}
	dir := filepath.Join(c.Dir, cfg.ID)
	if err := os.RemoveAll(dir); err != nil {
		return Streams{}, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return Streams{}, err
	}
	s := Streams{Stdout: filepath.Join(dir, StdoutFile), Terminal: cfg.TTY}
	if !cfg.TTY {
		s.Stderr = filepath.Join(dir, StderrFile)
	}
	if cfg.Stdin {
		s.Stdin = filepath.Join(dir, StdinFile)
	}
	return s, nil
}

// Hold opens the read ends of s's output FIFOs and returns what closes
// them: held while the task is created, the runtime's opening of its ends
// never waits, whatever happens to the keeper meanwhile.
func Hold(s Streams) func() {
	var fds []int
	for _, p := range []string{s.Stdout, s.Stderr} {
		if p == "" {
			continue
		}
		if fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0); err == nil {
			fds = append(fds, fd)
		}
	}
	return func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
}

// Add has the keeper take container id's directory, starting a keeper
// when none answers, and returns once its FIFOs are being opened.
func (c *Client) Add(ctx context.Context, id string) error {
	return c.request(ctx, "add "+id, true)
}

// Commit tells the keeper that container id's task was created (or that
// its create failed): from now on the end of its output is its end. It is
// recorded in the container's directory for a keeper that takes it over.
func (c *Client) Commit(ctx context.Context, id string) error {
	f, err := os.OpenFile(filepath.Join(c.Dir, id, committedFile), os.O_CREATE|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		return nil // its output has ended and is written
	}
	if err != nil {
		return err
	}
	f.Close()
	if err := c.request(ctx, "commit "+id, false); err != nil && !errors.Is(err, errNoKeeper) {
		return err
	}
	return nil
}

// Remove lets container id go (its task is gone): it waits up to wait for
// the keeper to write the end of its output, has the keeper drop it, and
// removes its directory.
func (c *Client) Remove(ctx context.Context, id string, wait time.Duration) error {
	if err := c.removeHalfMade(id); err != nil {
		return err
	}
	if c.WaitDrained(ctx, id, 0) {
		return nil
	}
	if err := c.Commit(ctx, id); err != nil {
		return err
	}
	if c.WaitDrained(ctx, id, wait) {
		return nil
	}
	if err := c.request(ctx, "drop "+id, false); err != nil && !errors.Is(err, errNoKeeper) {
		return err
	}
	if err := os.RemoveAll(filepath.Join(c.Dir, id)); err != nil {
		return fmt.Errorf("removing the streams of %q: %w", id, err)
	}
	return nil
}

// removeHalfMade removes the directories of container id that a podrun
// killed in Prepare left under their temporary names (".ID.<digits>"): the
// caller holds the container's pod, so no Prepare of id is under way.
func (c *Client) removeHalfMade(id string) error {
	ents, err := os.ReadDir(c.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "."+id+".")
		if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(c.Dir, e.Name())); err != nil {
			return fmt.Errorf("removing the half-made streams of %q: %w", id, err)
		}
	}
	return nil
}

// drainPoll is how often WaitDrained looks.
const drainPoll = 5 * time.Millisecond

// WaitDrained waits up to d until everything container id wrote is in its
// log: the keeper removes the container's directory once its output has
// ended and is written. It reports whether it is.
func (c *Client) WaitDrained(ctx context.Context, id string, d time.Duration) bool {
	dir := filepath.Join(c.Dir, id)
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(drainPoll):
		}
	}
}

// Ensure starts a keeper when the io directory has containers and none
// answers (one was killed): any podrun that looks at the node calls it.
func (c *Client) Ensure(ctx context.Context) error {
	ents, err := os.ReadDir(c.Dir)
	if err != nil || !hasContainers(ents) {
		return nil
	}
	if err := c.ping(ctx); err == nil || !errors.Is(err, errNoKeeper) {
		return err
	}
	return c.start(ctx)
}

func hasContainers(ents []os.DirEntry) bool {
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			return true
		}
	}
	return false
}

// errNoKeeper: no keeper answers (none runs, or it is ending).
var errNoKeeper = errors.New("no stream keeper answers")

// request sends one request; with start, a keeper is started when none
// answers and the request is sent again.
func (c *Client) request(ctx context.Context, req string, start bool) error {
	for attempt := 0; ; attempt++ {
		err := c.call(ctx, req)
		if err == nil || !errors.Is(err, errNoKeeper) || !start || attempt == 3 {
			return err
		}
		if err := c.start(ctx); err != nil {
			return err
		}
	}
}

// ping checks that a keeper answers and is not ending.
func (c *Client) ping(ctx context.Context) error { return c.call(ctx, "ping") }

// call sends req and reads the answer.
func (c *Client) call(ctx context.Context, req string) error {
	conn, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	}
	if _, err := fmt.Fprintln(conn, req); err != nil {
		return fmt.Errorf("%w: %w", errNoKeeper, err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("%w: %w", errNoKeeper, err)
	}
	switch line = strings.TrimSpace(line); {
	case line == "ok":
		return nil
	case line == "closing":
		return fmt.Errorf("%w: it is ending", errNoKeeper)
	}
	return fmt.Errorf("stream keeper: %s", strings.TrimPrefix(line, "error: "))
}

// dial connects to the keeper's control socket, through the directory's
// descriptor (a socket's path is limited to 107 bytes).
func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	d, err := unix.Open(c.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoKeeper, err)
	}
	defer unix.Close(d)
	var dl net.Dialer
	conn, err := dl.DialContext(ctx, "unix", fmt.Sprintf("/proc/self/fd/%d/%s", d, controlSocket))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoKeeper, err)
	}
	return conn, nil
}

// start starts a keeper, detached in a session of its own (it outlives
// this podrun, as the pods do), and waits until one answers: this one, or
// another that won the lock.
func (c *Client) start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ping(ctx); err == nil {
		return nil // started meanwhile by another goroutine
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(c.Dir, logFile)
	if st, err := os.Lstat(path); err == nil && st.Size() > maxLog {
		_ = os.Rename(path, path+".1") // the keeper before's last messages kept
	}
	logf, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"cri-io", "--dir", c.Dir}
	if c.Cgroup != "" {
		args = append(args, "--cgroup", c.Cgroup)
	}
	cmd := exec.Command(c.Exe, args...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the stream keeper: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaped whenever it ends
	deadline := time.Now().Add(startWait)
	for {
		if err := c.ping(ctx); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			// Another keeper holds the lock (then it answers next time),
			// or this one failed.
			if perr := c.ping(ctx); perr == nil {
				return nil
			}
			return fmt.Errorf("the stream keeper exited (%v); its log: %s", err, filepath.Join(c.Dir, logFile))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the stream keeper did not answer within %v; its log: %s", startWait, filepath.Join(c.Dir, logFile))
		}
	}
}
