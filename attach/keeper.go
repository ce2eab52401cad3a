// Package attach keeps the standard streams of a container that has stdin
// or a terminal (the spec's stdin, stdinOnce, tty), as containerd's CRI does
// in its daemon: podrun has no daemon, so each such container gets a small
// keeper process (`podrun cri-io`) that holds the FIFOs the shim connects
// to the container, writes its output to the CRI log, keeps its stdin open,
// and serves `podrun attach` on a unix socket. The keeper ends when the
// container's output ends (the task is gone).
package attach

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/containerd/fifo"

	"github.com/podrun/podrun/logs"
)

// The files of a keeper's directory.
const (
	StdinFile  = "stdin"
	StdoutFile = "stdout"
	StderrFile = "stderr"
	socketFile = "attach.sock"
)

// Streams of the frames a keeper sends to a client: a byte, a 32-bit
// big-endian length, the data.
const (
	frameStdout byte = 1
	frameStderr byte = 2
	maxFrame         = 32 << 10
)

// flagStdin is the bit of a client's first byte that says it sends stdin.
const flagStdin byte = 1

// Config is a keeper's: its directory (mode 0700, made by the engine), the
// log driver's argument (logs.DriverArg) and the container's streams.
type Config struct {
	Dir       string
	Log       string
	Stdin     bool
	StdinOnce bool
	TTY       bool
	// The container's runtime: with stdinOnce, the shim's own end of the
	// stdin FIFO is closed through it (containerd's CloseIO).
	Address, Namespace, ID string
}

// Serve runs a keeper: it opens the FIFOs and the socket, tells its parent
// on ready (one line, "ok" or the error), and waits on commit for one byte
// saying that the task was created; EOF instead (the create failed or the
// parent died) ends it. Then it copies until the container's output ends,
// and removes its directory.
func Serve(cfg Config, closeStdin func() error, ready io.WriteCloser, commit io.Reader) error {
	k, err := open(cfg)
	if err != nil {
		fmt.Fprintf(ready, "%v\n", err)
		ready.Close()
		return err
	}
	defer os.RemoveAll(cfg.Dir)
	defer k.close()
	k.closeStdin = closeStdin
	if _, err := io.WriteString(ready, "ok\n"); err != nil {
		return err
	}
	ready.Close()
	if n, _ := io.ReadFull(commit, make([]byte, 1)); n != 1 {
		return errors.New("the task was not created")
	}
	go k.accept()
	return k.copyOutput()
}

type keeper struct {
	cfg    Config
	log    io.WriteCloser
	out    io.ReadWriteCloser // stdout, or the terminal
	errOut io.ReadWriteCloser // nil with a terminal
	ln     net.Listener

	mu      sync.Mutex
	stdin   io.ReadWriteCloser // nil without stdin, or once closed (stdinOnce)
	clients map[*client]struct{}
	done    bool
	// closeStdin closes the container's stdin at the shim (which keeps a
	// writer of the FIFO open, so that no client's end is the container's).
	closeStdin func() error
}

func open(cfg Config) (*keeper, error) {
	k := &keeper{cfg: cfg, clients: map[*client]struct{}{}}
	log, err := logs.OpenDriverLog(cfg.Log)
	if err != nil {
		return nil, err
	}
	k.log = log
	// Opened without blocking, connected when the shim opens the other end
	// (containerd's cio does the same).
	openFifo := func(name string, flag int) (io.ReadWriteCloser, error) {
		rw, err := fifo.OpenFifo(context.Background(), filepath.Join(cfg.Dir, name), flag|syscall.O_CREAT|syscall.O_NONBLOCK, 0o600)
		if err != nil {
			k.close()
			return nil, fmt.Errorf("opening %s: %w", name, err)
		}
		return rw, nil
	}
	if k.out, err = openFifo(StdoutFile, syscall.O_RDONLY); err != nil {
		return nil, err
	}
	if !cfg.TTY {
		if k.errOut, err = openFifo(StderrFile, syscall.O_RDONLY); err != nil {
			return nil, err
		}
	}
	if cfg.Stdin {
		if k.stdin, err = openFifo(StdinFile, syscall.O_WRONLY); err != nil {
			return nil, err
		}
	}
	// Bound by a name relative to the directory (the keeper's working
	// directory): a socket's path is limited to 107 bytes.
	ln, err := net.Listen("unix", socketFile)
	if err != nil {
		k.close()
		return nil, fmt.Errorf("attach socket: %w", err)
	}
	k.ln = ln
	return k, nil
}

func (k *keeper) close() {
	for _, c := range []io.Closer{k.log, k.out, k.errOut, k.ln} {
		if c != nil {
			_ = c.Close()
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = true
	if k.stdin != nil {
		_ = k.stdin.Close()
		k.stdin = nil
	}
	for c := range k.clients {
		c.end()
	}
}

// copyOutput copies the container's output to the log and to the attached
// clients until it ends.
func (k *keeper) copyOutput() error {
	w := logs.NewWriter(k.log)
	var wg sync.WaitGroup
	type stream struct {
		name  string
		frame byte
		r     io.Reader
	}
	streams := []stream{{"stdout", frameStdout, k.out}}
	if k.errOut != nil {
		streams = append(streams, stream{"stderr", frameStderr, k.errOut})
	}
	errs := make([]error, len(streams))
	for i, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr, pw := io.Pipe()
			logged := make(chan struct{})
			go func() {
				defer close(logged)
				errs[i] = w.Copy(s.name, pr)
				_ = pr.CloseWithError(errs[i]) // a failed log write ends the copy below
			}()
			buf := make([]byte, maxFrame)
			for {
				n, err := s.r.Read(buf)
				if n > 0 {
					k.broadcast(s.frame, buf[:n])
					if _, werr := pw.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			_ = pw.Close()
			<-logged // the last line written
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// broadcast sends a chunk of output to every client; a client that does
// not keep up is dropped, never waited for (the log must not stall).
func (k *keeper) broadcast(stream byte, p []byte) {
	frame := make([]byte, 5+len(p))
	frame[0] = stream
	binary.BigEndian.PutUint32(frame[1:], uint32(len(p)))
	copy(frame[5:], p)
	k.mu.Lock()
	defer k.mu.Unlock()
	for c := range k.clients {
		select {
		case c.out <- frame:
		default:
			c.end()
			delete(k.clients, c)
		}
	}
}

func (k *keeper) accept() {
	for {
		conn, err := k.ln.Accept()
		if err != nil {
			return // closed
		}
		go k.serve(conn.(*net.UnixConn))
	}
}

type client struct {
	conn  *net.UnixConn
	out   chan []byte
	once  sync.Once
	ended chan struct{}
}

func (c *client) end() {
	c.once.Do(func() { close(c.ended) })
}

// serve attaches a client: output from now on, and its input to the
// container's stdin until it closes its side; with stdinOnce, the end of
// the first client's input closes the container's stdin.
func (k *keeper) serve(conn *net.UnixConn) {
	defer conn.Close()
	var hello [1]byte
	if _, err := io.ReadFull(conn, hello[:]); err != nil {
		return
	}
	c := &client{conn: conn, out: make(chan []byte, 256), ended: make(chan struct{})}
	k.mu.Lock()
	if k.done {
		k.mu.Unlock()
		return
	}
	k.clients[c] = struct{}{}
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		delete(k.clients, c)
		k.mu.Unlock()
	}()
	if hello[0]&flagStdin != 0 {
		go k.copyInput(c)
	}
	for {
		select {
		case frame := <-c.out:
			if _, err := conn.Write(frame); err != nil {
				return
			}
		case <-c.ended:
			// What was sent before the end is still written (the last
			// output of a container that exits).
			for {
				select {
				case frame := <-c.out:
					if _, err := conn.Write(frame); err != nil {
						return
					}
				default:
					return
				}
			}
		}
	}
}

func (k *keeper) copyInput(c *client) {
	buf := make([]byte, maxFrame)
	for {
		n, err := c.conn.Read(buf)
		if n > 0 {
			k.mu.Lock()
			stdin := k.stdin
			k.mu.Unlock()
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
	if !k.cfg.StdinOnce {
		return
	}
	k.mu.Lock()
	stdin := k.stdin
	k.stdin = nil
	k.mu.Unlock()
	if stdin != nil {
		_ = stdin.Close()
		if k.closeStdin != nil {
			_ = k.closeStdin() // a failure leaves stdin open, as a lost client would
		}
	}
}
