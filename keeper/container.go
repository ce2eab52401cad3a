package keeper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/logs"
)

// container is one container's streams in the keeper.
type container struct {
	cfg Config
	dir string
	log *logs.File
	w   *logs.Writer
	out io.ReadCloser // stdout, or the terminal
	err io.ReadCloser // nil with a terminal
	// holders are writers of the output FIFOs held until the task is
	// created (commit): the runtime's opening of its ends never waits, and
	// nothing before the task's own writer counts as the end of the output.
	holders []*os.File
	ln      net.Listener  // nil unless attachable
	done    chan struct{} // closed once the output has ended, everything is closed and the directory is gone
	mu      sync.Mutex
	stdin   io.WriteCloser // nil without stdin, or once closed (stdinOnce)
	// clients are the attached `podrun attach`es; ended once the output ends.
	clients map[*client]struct{}
	ended   bool
	// closeStdin closes the container's stdin at the shim (which keeps a
	// writer of the FIFO open, so that no client's end is the container's).
	closeStdin func(Config) error
	report     func(string) // the keeper's log
	// writeTimeout bounds a write to a client (clientWriteTimeout).
	writeTimeout time.Duration
}

// openContainer opens container cfg.ID's log and the FIFOs and socket of
// its directory dir. Until the task is created (committed), the keeper
// also holds a writer of each output FIFO (see container.holders); a
// committed container's output ends when the runtime's writers are gone.
func openContainer(dir string, cfg Config, committed bool, closeStdin func(Config) error, report func(string)) (*container, error) {
	c := &container{cfg: cfg, dir: dir, done: make(chan struct{}), clients: map[*client]struct{}{}, closeStdin: closeStdin, report: report,
		writeTimeout: clientWriteTimeout}
	log, err := logs.Open(cfg.Log, logs.Rotation{MaxSize: cfg.MaxSize, MaxFiles: cfg.MaxFiles})
	if err != nil {
		return nil, fmt.Errorf("opening the log: %w", err)
	}
	c.log = log
	log.SetReport(func(m string) { report(cfg.ID + ": " + m) })
	c.w = logs.NewWriter(log)
	c.w.Report = func(m string) { report(cfg.ID + ": " + cfg.Log + ": " + m) }
	// A FIFO opened for reading without blocking is read through the
	// poller: no end (EOF) while a writer has it open.
	open := func(name string, flag int) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(dir, name), flag|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
		if err == nil {
			if st, serr := f.Stat(); serr != nil || st.Mode().Type() != os.ModeNamedPipe {
				f.Close()
				err = fmt.Errorf("%s is not a FIFO", name)
			}
		}
		if err != nil {
			c.close()
			return nil, fmt.Errorf("opening %s: %w", name, err)
		}
		return f, nil
	}
	outputs := []string{StdoutFile}
	if !cfg.TTY {
		outputs = append(outputs, StderrFile)
	}
	if !committed {
		for _, name := range outputs {
			h, err := open(name, os.O_RDWR)
			if err != nil {
				return nil, err
			}
			c.holders = append(c.holders, h)
		}
	}
	if c.out, err = open(StdoutFile, os.O_RDONLY); err != nil {
		return nil, err
	}
	if !cfg.TTY {
		if c.err, err = open(StderrFile, os.O_RDONLY); err != nil {
			return nil, err
		}
	}
	if cfg.Stdin {
		// Read and written: never waits for the runtime's reader.
		if c.stdin, err = open(StdinFile, os.O_RDWR); err != nil {
			return nil, err
		}
	}
	if cfg.attachable() {
		if c.ln, err = listenIn(dir, SocketFile); err != nil {
			c.close()
			return nil, fmt.Errorf("attach socket: %w", err)
		}
	}
	return c, nil
}

// commit lets the output end: the task is created and holds its writers
// (or it failed, and the output ends at once).
func (c *container) commit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.holders {
		_ = h.Close()
	}
	c.holders = nil
}

// listenIn listens on the unix socket name in dir, bound through the
// directory's descriptor: a socket's path is limited to 107 bytes.
func listenIn(dir, name string) (net.Listener, error) {
	d, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(d)
	path := fmt.Sprintf("/proc/self/fd/%d/%s", d, name)
	_ = os.Remove(path) // a killed keeper's
	return net.Listen("unix", path)
}

// run copies the output until it ends, then closes everything.
func (c *container) run() {
	if c.ln != nil {
		go c.accept()
	}
	var wg sync.WaitGroup
	for _, s := range []struct {
		name  string
		frame byte
		r     io.Reader
	}{{"stdout", attach.FrameStdout, c.out}, {"stderr", attach.FrameStderr, c.err}} {
		if s.r == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.ln == nil {
				_ = c.w.Copy(s.name, s.r) // ends at the end of the output (or a drop)
				return
			}
			c.copyServed(s.name, s.frame, s.r)
		}()
	}
	wg.Wait()
	c.close()
}

// copyServed copies a stream to the log and to the attached clients.
func (c *container) copyServed(name string, frame byte, r io.Reader) {
	pr, pw := io.Pipe()
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		_ = c.w.Copy(name, pr)
	}()
	buf := make([]byte, attach.MaxFrame)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.broadcast(frame, buf[:n])
			_, _ = pw.Write(buf[:n])
		}
		if err != nil {
			break
		}
	}
	_ = pw.Close()
	<-logged // the last line written
}

// dropWait is how long a dropped container's output is read on.
const dropWait = 200 * time.Millisecond

// drop ends the container's streams: what the FIFOs hold is read, for a
// moment at most (a task still running would never end its output).
func (c *container) drop() {
	c.commit()
	select {
	case <-c.done:
		return
	case <-time.After(dropWait):
	}
	for _, r := range []io.Closer{c.out, c.err} {
		if r != nil {
			_ = r.Close()
		}
	}
}

func (c *container) close() {
	c.commit()
	for _, x := range []io.Closer{c.out, c.err, c.ln} {
		if x != nil {
			_ = x.Close()
		}
	}
	if c.log != nil {
		_ = c.log.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.stdin != nil {
		_ = c.stdin.Close()
		c.stdin = nil
	}
	for cl := range c.clients {
		cl.end()
	}
}

// broadcast sends a chunk of output to every client; a client that does
// not keep up is dropped, its connection closed at once, never waited for
// (the log must not stall).
func (c *container) broadcast(stream byte, p []byte) {
	frame := make([]byte, 5+len(p))
	frame[0] = stream
	binary.BigEndian.PutUint32(frame[1:], uint32(len(p)))
	copy(frame[5:], p)
	c.mu.Lock()
	defer c.mu.Unlock()
	for cl := range c.clients {
		select {
		case cl.out <- frame:
		default:
			c.report(fmt.Sprintf("%s: dropping an attached client: it reads less than the container writes", c.cfg.ID))
			cl.drop()
			delete(c.clients, cl)
		}
	}
}

func (c *container) accept() {
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return // closed
		}
		go c.serve(conn.(*net.UnixConn))
	}
}

type client struct {
	conn  *net.UnixConn
	out   chan []byte
	once  sync.Once
	ended chan struct{}
}

// clientQueue is how many frames wait for a client: one that lets more
// wait is dropped.
const clientQueue = 256

// clientWriteTimeout bounds a write to a client: one that reads nothing
// for that long is dropped (tests shorten it).
var clientWriteTimeout = 10 * time.Second

// end lets the client have what waits for it, then ends its connection.
func (cl *client) end() { cl.once.Do(func() { close(cl.ended) }) }

// drop ends the client's connection now, a write to it under way included.
func (cl *client) drop() {
	cl.end()
	_ = cl.conn.Close()
}

// write writes one frame, within timeout.
func (cl *client) write(frame []byte, timeout time.Duration) error {
	if err := cl.conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err := cl.conn.Write(frame)
	return err
}

// serve attaches a client: output from now on, and its input to the
// container's stdin until it closes its side; with stdinOnce, the end of
// the first client's input closes the container's stdin.
func (c *container) serve(conn *net.UnixConn) {
	defer conn.Close()
	var hello [1]byte
	if _, err := io.ReadFull(conn, hello[:]); err != nil {
		return
	}
	cl := &client{conn: conn, out: make(chan []byte, clientQueue), ended: make(chan struct{})}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.clients[cl] = struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.clients, cl)
		c.mu.Unlock()
	}()
	if hello[0]&attach.FlagStdin != 0 {
		go c.copyInput(cl)
	}
	for {
		select {
		case frame := <-cl.out:
			if err := cl.write(frame, c.writeTimeout); err != nil {
				c.dropped(err)
				return
			}
		case <-cl.ended:
			// What was sent before the end is still written (the last
			// output of a container that exits).
			for {
				select {
				case frame := <-cl.out:
					if err := cl.write(frame, c.writeTimeout); err != nil {
						c.dropped(err)
						return
					}
				default:
					return
				}
			}
		}
	}
}

// dropped reports a client whose write timed out (one that went away is
// not worth a line).
func (c *container) dropped(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.report(fmt.Sprintf("%s: dropping an attached client: it read nothing for %v", c.cfg.ID, c.writeTimeout))
	}
}

func (c *container) copyInput(cl *client) {
	buf := make([]byte, attach.MaxFrame)
	for {
		n, err := cl.conn.Read(buf)
		if n > 0 {
			c.mu.Lock()
			stdin := c.stdin
			c.mu.Unlock()
			if stdin != nil {
				if _, werr := stdin.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			break
		}
	}
	// The client's input ended: it detached.
	if !c.cfg.StdinOnce {
		return
	}
	c.mu.Lock()
	stdin := c.stdin
	c.stdin = nil
	c.mu.Unlock()
	if stdin == nil {
		return
	}
	_ = stdin.Close()
	if c.closeStdin != nil {
		if err := c.closeStdin(c.cfg); err != nil {
			// The container's stdin stays open, as with a lost client.
			fmt.Fprintf(os.Stderr, "podrun: %s: closing stdin (stdinOnce): %v\n", c.cfg.ID, err)
		}
	}
}
