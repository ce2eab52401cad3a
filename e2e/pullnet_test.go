package e2e

// Pulls over a bad link: a TCP proxy in front of Debian's docker-registry
// on 127.0.0.1 stalls a download, cuts the connection every N bytes or
// counts the bytes of each second, and the tests check that podrun's pull
// completes having fetched each byte about once (containerd's content store
// resumes its ingests), and that --pull-rate holds.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/leases"

	"github.com/podrun/podrun/internal/testimage"
)

// linkProxy forwards 127.0.0.1:PORT to a registry, counting the bytes it
// serves (registry to client), and misbehaving as set before it starts.
type linkProxy struct {
	Addr     string
	upstream string
	stallAt  int64 // once served reaches it, the connection forwards nothing more (0: never)
	cutEvery int64 // the connection is closed each time this many more bytes are served (0: never)

	mu       sync.Mutex
	start    time.Time
	served   int64
	sinceCut int64
	stalled  bool
	cuts     int
	seconds  map[int64]int64 // bytes served in each second since start
	l        net.Listener
	conns    map[net.Conn]bool
	finished sync.WaitGroup
}

// startProxy starts p in front of upstream (host:port); it is closed when
// the test ends.
func startProxy(t *testing.T, p *linkProxy, upstream string) *linkProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.l, p.Addr, p.upstream, p.start = l, l.Addr().String(), upstream, time.Now()
	p.seconds, p.conns = map[int64]int64{}, map[net.Conn]bool{}
	p.finished.Add(1)
	go func() {
		defer p.finished.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.finished.Add(1)
			go func() { defer p.finished.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.finished.Wait()
	})
	return p
}

func (p *linkProxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
}

func (p *linkProxy) serve(client net.Conn) {
	defer client.Close()
	// What it counts as served is what it wrote into its socket: a small
	// send buffer keeps that close to what the client took.
	if err := client.(*net.TCPConn).SetWriteBuffer(32 << 10); err != nil {
		return
	}
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	p.track(client, true)
	p.track(up, true)
	defer p.track(client, false)
	defer p.track(up, false)
	go func() {
		_, _ = io.Copy(up, client)
		up.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			allowed, then := p.allow(int64(n))
			if allowed > 0 {
				if _, werr := client.Write(buf[:allowed]); werr != nil {
					return
				}
				p.count(allowed)
			}
			switch then {
			case "cut":
				return
			case "stall":
				// Nothing more on this connection: wait until the client
				// gives up on it (it closes, the copy above ends).
				_, _ = io.Copy(io.Discard, up)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// allow says how much of n bytes may go to the client now, and what then
// becomes of the connection ("", "cut" or "stall").
func (p *linkProxy) allow(n int64) (int64, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.stallAt > 0 && !p.stalled && p.served+n >= p.stallAt:
		p.stalled = true
		return p.stallAt - p.served, "stall"
	case p.cutEvery > 0 && p.sinceCut+n >= p.cutEvery:
		allowed := p.cutEvery - p.sinceCut
		p.sinceCut = 0
		p.cuts++
		return allowed, "cut"
	}
	p.sinceCut += n
	return n, ""
}

func (p *linkProxy) count(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.served += n
	p.seconds[int64(time.Since(p.start)/time.Second)] += n
}

// Served is how many bytes the proxy served.
func (p *linkProxy) Served() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// bigImage pushes to reg an image whose layer holds size random bytes, and
// removes it from containerd, so that only the registry has it; it returns
// the repository path (NAME:TAG, without the registry) and the image's
// compressed size (manifest, config and layer).
func bigImage(t *testing.T, reg testRegistry, name string, size int) (string, int64) {
	t.Helper()
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	local := H.ImportImage(t, testimage.Config{Ref: "podrun.test/" + name, Files: []testimage.File{{Path: "/data/random", Data: data}}})
	c, ctx := H.Client(t)
	img, err := c.GetImage(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	compressed, err := img.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pushImage(t, reg, local, reg.Addr+"/"+name, "", "")
	deleteImage(t, local)
	if hasImage(t, local) {
		t.Fatalf("%s still in containerd", local)
	}
	return name, compressed
}

// pullThrough pulls name from the proxy with podrun image pull and the
// given global flags; the pulled image is removed when the test ends.
func pullThrough(t *testing.T, p *linkProxy, name string, flags ...string) (stderr string, took time.Duration) {
	t.Helper()
	ref := p.Addr + "/" + name
	t.Cleanup(func() { deleteImage(t, ref) })
	start := time.Now()
	stdout, stderr, code := H.Podrun(t, "", append(flags, "image", "pull", ref)...)
	took = time.Since(start)
	if code != 0 || !strings.Contains(stdout, name) {
		t.Fatalf("podrun image pull %s: exit %d, stdout %q; stderr:\n%s", ref, code, stdout, stderr)
	}
	return stderr, took
}

// checkServed fails the test when the proxy served more than most times
// the image's compressed size.
func checkServed(t *testing.T, p *linkProxy, compressed int64, most float64) {
	t.Helper()
	ratio := float64(p.Served()) / float64(compressed)
	t.Logf("served %d bytes for an image of %d compressed: %.3fx", p.Served(), compressed, ratio)
	if ratio > most {
		t.Errorf("the proxy served %.3fx the image's compressed size, want at most %.2fx (the pull did not resume)", ratio, most)
	}
}

// TestPullStallResumes: a connection that stops sending mid-layer is given
// up after --image-pull-progress-deadline, and the pull goes on from where
// it stopped.
func TestPullStallResumes(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, "", "")
	name, compressed := bigImage(t, reg, "pn-stall:1", 16<<20)
	p := startProxy(t, &linkProxy{stallAt: 6 << 20}, reg.Addr)
	_, took := pullThrough(t, p, name, "--image-pull-progress-deadline", "3s")
	p.mu.Lock()
	stalled := p.stalled
	p.mu.Unlock()
	if !stalled {
		t.Fatalf("the proxy never stalled (served %d)", p.Served())
	}
	t.Logf("pulled in %v", took)
	if took < 3*time.Second {
		t.Errorf("pulled in %v, before the deadline: the stall was not waited out", took)
	}
	checkServed(t, p, compressed, 1.05)
}

// TestPullCutConnection: a connection cut every 8 MiB of a 40 MiB layer;
// each cut download goes on where it stopped.
func TestPullCutConnection(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, "", "")
	name, compressed := bigImage(t, reg, "pn-cut:1", 40<<20)
	p := startProxy(t, &linkProxy{cutEvery: 8 << 20}, reg.Addr)
	pullThrough(t, p, name)
	p.mu.Lock()
	cuts := p.cuts
	p.mu.Unlock()
	if cuts < 4 {
		t.Errorf("the proxy cut %d connections, want at least 4", cuts)
	}
	checkServed(t, p, compressed, 1.02)
}

// TestPullRate: with --pull-rate 1Mi, no second of the proxy's serves more
// than 1.5 MiB; the rate measured is logged.
func TestPullRate(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, "", "")
	name, compressed := bigImage(t, reg, "pn-rate:1", 8<<20)
	p := startProxy(t, &linkProxy{}, reg.Addr)
	_, took := pullThrough(t, p, name, "--pull-rate", "1Mi")
	t.Logf("pulled %d bytes in %v: %.0f KiB/s (cap 1024 KiB/s)", p.Served(), took.Round(time.Millisecond), float64(p.Served())/1024/took.Seconds())
	p.mu.Lock()
	seconds := maps.Clone(p.seconds)
	p.mu.Unlock()
	for s, n := range seconds {
		if n > 3<<19 {
			t.Errorf("second %d: %d bytes served, more than 1.5x the cap", s, n)
		}
	}
	t.Logf("bytes served each second: %v", seconds)
	checkServed(t, p, compressed, 1.05)
}

// TestPullKilledResumes: a `podrun image pull` killed -9 half-way leaves
// what it fetched in containerd's content store; the next podrun fetches
// the rest.
func TestPullKilledResumes(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, "", "")
	name, compressed := bigImage(t, reg, "pn-kill:1", 40<<20)
	p := startProxy(t, &linkProxy{}, reg.Addr)
	dropNewLeases(t)
	// What a kill loses is what was in flight: containerd's copy buffer
	// (1 MiB, written to the store when full) and the socket's receive
	// buffer (512 KiB at 2 MiB/s): about 1.5 MiB, whatever the image's size.
	first := startPodrun(t, "--pull-rate", "2Mi", "image", "pull", p.Addr+"/"+name)
	eventually(t, 60*time.Second, "half the image served", func() (bool, string) {
		if first.exited() {
			t.Fatalf("podrun image pull exited before half-way; stderr:\n%s", first.stderr())
		}
		return p.Served() >= compressed/2, fmt.Sprintf("served %d", p.Served())
	})
	if err := first.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	first.wait(10 * time.Second)
	t.Logf("killed -9 after %d bytes served", p.Served())
	pullThrough(t, p, name)
	checkServed(t, p, compressed, 1.05)
}

// dropNewLeases deletes, when the test ends, the containerd leases made
// since: a podrun killed -9 mid-pull leaves its pull's lease (containerd's
// client gives it 24 hours).
func dropNewLeases(t *testing.T) {
	t.Helper()
	c, ctx := H.Client(t)
	before := map[string]bool{}
	ls, err := c.LeasesService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		before[l.ID] = true
	}
	t.Cleanup(func() {
		ls, err := c.LeasesService().List(ctx)
		if err != nil {
			t.Errorf("listing leases: %v", err)
			return
		}
		for _, l := range ls {
			if !before[l.ID] {
				t.Logf("deleting the lease %s the killed podrun left (labels %v)", l.ID, l.Labels)
				if err := c.LeasesService().Delete(ctx, l, leases.SynchronousDelete); err != nil {
					t.Errorf("deleting lease %s: %v", l.ID, err)
				}
			}
		}
	})
}
