package e2e

// Pulls over a bad link: a TCP proxy in front of Debian's docker-registry
// on 127.0.0.1 stalls a download, cuts the connection every N bytes or
// counts the bytes of each second, and the tests check that podrun's pull
// completes having fetched each byte about once (containerd's content store
// resumes its ingests), and that --pull-rate holds.

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/platforms"
	digest "github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podrun/podrun/internal/testimage"
)

// linkProxy forwards 127.0.0.1:PORT to a registry, counting the bytes it
// serves (registry to client), and misbehaving as set before it starts.
type linkProxy struct {
	Addr     string
	upstream string
	stallAt  int64 // once served reaches it, the connection forwards nothing more (0: never)
	cutEvery int64 // the connection is closed each time this many more bytes are served (0: never)
	holdAt   int64 // once served reaches it, every connection waits for Release (0: never)

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
	released chan struct{} // closed by Release
	release  sync.Once
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
	p.seconds, p.conns, p.released = map[int64]int64{}, map[net.Conn]bool{}, make(chan struct{})
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
		p.Release()
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
		for off := 0; off < n; {
			allowed, then := p.allow(int64(n - off))
			if allowed > 0 {
				if _, werr := client.Write(buf[off : off+int(allowed)]); werr != nil {
					return
				}
				p.count(allowed)
				off += int(allowed)
			}
			switch then {
			case "cut":
				return
			case "stall":
				// Nothing more on this connection: wait until the client
				// gives up on it (it closes, the copy above ends).
				_, _ = io.Copy(io.Discard, up)
				return
			case "hold":
				<-p.released
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
	case p.holdAt > 0 && !p.isReleased() && p.served+n >= p.holdAt:
		allowed := max(p.holdAt-p.served, 0)
		p.sinceCut += allowed
		return allowed, "hold"
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

// Release lets the connections held at holdAt go on.
func (p *linkProxy) Release() { p.release.Do(func() { close(p.released) }) }

func (p *linkProxy) isReleased() bool {
	select {
	case <-p.released:
		return true
	default:
		return false
	}
}

// Held says whether the proxy served holdAt bytes and holds its
// connections.
func (p *linkProxy) Held() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holdAt > 0 && p.served >= p.holdAt && !p.isReleased()
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

// TestPullRate: with --pull-rate 2MiB, an image of three layers (60 MiB,
// 30 s at the cap; under a cap they are fetched one at a time) is served
// at the cap: the rate of the
// full seconds between the first and the last is logged with its distance
// to the cap (the acceptance's ±10 %); the test fails when the link goes
// faster than the cap (by 10 % on average, by 50 % in any one second), not
// when a loaded machine is slower.
func TestPullRate(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, "", "")
	img := pushLayered(t, reg, "pn-rate:1", []layerSpec{{seed: 600, size: 20 << 20}, {seed: 601, size: 20 << 20}, {seed: 602, size: 20 << 20}})
	p := startProxy(t, &linkProxy{}, reg.Addr)
	const limit = 2 << 20
	_, took := pullThrough(t, p, img.name, "--pull-rate", "2MiB")
	t.Logf("pulled %d bytes in %v: %.0f KiB/s (cap %d KiB/s)", p.Served(), took.Round(time.Millisecond), float64(p.Served())/1024/took.Seconds(), limit>>10)
	p.mu.Lock()
	seconds := maps.Clone(p.seconds)
	p.mu.Unlock()
	t.Logf("bytes served each second: %v", seconds)
	steady, n := steadyRate(seconds)
	if n < 20 {
		t.Fatalf("the pull took %d full seconds, want 20 or more (%v)", n, seconds)
	}
	off := 100 * (steady - limit) / limit
	t.Logf("--pull-rate 2MiB measured over %d s: %.0f bytes/s, %+.1f %% of the cap (within ±10 %%: %v)", n, steady, off, off >= -10 && off <= 10)
	if off > 10 {
		t.Errorf("%.0f bytes/s over %d s: %.1f %% over the cap", steady, n, off)
	}
	for s, b := range seconds {
		if b > limit*3/2 {
			t.Errorf("second %d: %d bytes served, more than 1.5x the cap", s, b)
		}
	}
	checkServed(t, p, img.compressed, 1.05)
}

// steadyRate is the bytes per second of the seconds strictly between the
// first and the last that served anything, and how many they are.
func steadyRate(seconds map[int64]int64) (float64, int) {
	first, last := int64(-1), int64(-1)
	for s, b := range seconds {
		if b > 0 && (first < 0 || s < first) {
			first = s
		}
		if b > 0 && s > last {
			last = s
		}
	}
	n := int(last - first - 1)
	if n <= 0 {
		return 0, 0
	}
	var sum int64
	for s := first + 1; s < last; s++ {
		sum += seconds[s]
	}
	return float64(sum) / float64(n), n
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

// layerSpec is a data layer of a pushed image: an uncompressed tar holding
// data/layer-SEED, size bytes of a ChaCha8 stream seeded with seed (the same
// spec gives the same layer, digest included).
type layerSpec struct {
	seed uint64
	size int
}

// layerTar makes l's tar.
func layerTar(t *testing.T, l layerSpec) []byte {
	t.Helper()
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], l.seed)
	data := make([]byte, l.size)
	if _, err := mrand.NewChaCha8(seed).Read(data); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	hdr := &tar.Header{Name: fmt.Sprintf("data/layer-%d", l.seed), Mode: 0o644, Size: int64(l.size), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pushedImage is an image a test pushed to its registry.
type pushedImage struct {
	name       string  // REPOSITORY:TAG, without the registry
	compressed int64   // manifest, config and layers, as the registry serves them
	base       int64   // the busybox layer's size
	layers     []int64 // the data layers' sizes
}

// pushLayered pushes to reg, as name (REPOSITORY:TAG), an image of the
// suite's busybox layer and one uncompressed tar layer per spec, with the
// registry's HTTP API (a blob the registry has is not sent again). Nothing
// of it goes into containerd: the registry alone has it.
func pushLayered(t *testing.T, reg testRegistry, name string, data []layerSpec) pushedImage {
	t.Helper()
	c, ctx := H.Client(t)
	cs := c.ContentStore()
	base, err := c.GetImage(ctx, H.Image)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := images.Manifest(ctx, cs, base.Target(), platforms.Default())
	if err != nil {
		t.Fatalf("reading %s's manifest: %v", H.Image, err)
	}
	b, err := content.ReadBlob(ctx, cs, mf.Config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	repo, tag, _ := strings.Cut(name, ":")
	client := &http.Client{Timeout: 2 * time.Minute}
	upload := func(mediaType string, blob []byte) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
		base := fmt.Sprintf("http://%s/v2/%s/blobs/", reg.Addr, repo)
		if resp, err := client.Head(base + d.Digest.String()); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		resp, err := client.Post(base+"uploads/", "application/octet-stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("starting an upload to %s: %s, %v", repo, resp.Status, err)
		}
		q := loc.Query()
		q.Set("digest", d.Digest.String())
		loc.RawQuery = q.Encode()
		req, err := http.NewRequest(http.MethodPut, loc.String(), bytes.NewReader(blob))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/octet-stream")
		if resp, err = client.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("uploading %s to %s: %s", d.Digest, repo, resp.Status)
		}
		return d
	}
	bb, err := content.ReadBlob(ctx, cs, mf.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	out := pushedImage{name: name, base: mf.Layers[0].Size}
	layers := []ocispec.Descriptor{upload(mf.Layers[0].MediaType, bb)}
	cfg.RootFS.DiffIDs, cfg.History = cfg.RootFS.DiffIDs[:1], nil
	for _, s := range data {
		l := upload(ocispec.MediaTypeImageLayer, layerTar(t, s))
		layers = append(layers, l)
		out.layers = append(out.layers, l.Size)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, l.Digest)
	}
	cb, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	config := upload(ocispec.MediaTypeImageConfig, cb)
	mb, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: config, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("http://%s/v2/%s/manifests/%s", reg.Addr, repo, tag), bytes.NewReader(mb))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ocispec.MediaTypeImageManifest)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("putting the manifest of %s: %s", name, resp.Status)
	}
	out.compressed = int64(len(mb)) + config.Size
	for _, l := range layers {
		out.compressed += l.Size
	}
	t.Logf("pushed %s: %d layers, %d bytes (manifest, config and layers)", name, len(layers), out.compressed)
	return out
}

// fourLayers is four data layers of 26 MiB after the busybox one: an image
// of five layers, 104+ MiB.
func fourLayers(seed uint64) []layerSpec {
	var out []layerSpec
	for i := range uint64(4) {
		out = append(out, layerSpec{seed: seed + i, size: 26 << 20})
	}
	return out
}

// TestPullLayeredCut: an image of five layers and 104+ MiB pulled through a
// connection cut every 10 MiB completes with at most 1.1x its size served;
// then an update that changes one layer of the five fetches that layer
// alone (bytes on the wire measured by the proxy).
func TestPullLayeredCut(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, "", "")
	layers := fourLayers(100)
	v1 := pushLayered(t, reg, "pn-layers:1", layers)
	p := startProxy(t, &linkProxy{cutEvery: 10 << 20}, reg.Addr)
	_, took := pullThrough(t, p, v1.name)
	p.mu.Lock()
	cuts := p.cuts
	p.mu.Unlock()
	t.Logf("pulled %s through a connection cut every 10 MiB in %v, %d cuts", v1.name, took.Round(time.Millisecond), cuts)
	if cuts < 9 {
		t.Errorf("the proxy cut %d connections, want at least 9", cuts)
	}
	checkServed(t, p, v1.compressed, 1.1)

	// The update: the last layer changes.
	v2 := pushLayered(t, reg, "pn-layers:2", append(layers[:3:3], layerSpec{seed: 200, size: 26 << 20}))
	changed := v2.compressed - v2.base // what the update brings: its manifest, config and last layer
	for _, l := range v2.layers[:3] {
		changed -= l
	}
	up := startProxy(t, &linkProxy{}, reg.Addr)
	pullThrough(t, up, v2.name)
	t.Logf("update changing one layer of five: served %d bytes for an image of %d (%.1f %%); its new layer, config and manifest are %d",
		up.Served(), v2.compressed, 100*float64(up.Served())/float64(v2.compressed), changed)
	checkServed(t, up, changed, 1.1)
}

// killAtHold waits until the proxy holds its connections half-way through
// proc's pull, calls held (when not nil), kills proc with SIGKILL, and lets
// the proxy go on.
func killAtHold(t *testing.T, p *linkProxy, proc *podrunProc, held func()) {
	t.Helper()
	eventually(t, 90*time.Second, "the proxy holding its connections half-way", func() (bool, string) {
		if proc.exited() {
			t.Fatalf("podrun exited before half-way; stderr:\n%s", proc.stderr())
		}
		return p.Held(), fmt.Sprintf("served %d", p.Served())
	})
	if held != nil {
		held()
	}
	if err := proc.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	if !proc.wait(10 * time.Second) {
		t.Fatalf("podrun pid %d still there 10 s after SIGKILL", proc.cmd.Process.Pid)
	}
	t.Logf("killed -9 podrun pid %d after %d bytes served", proc.cmd.Process.Pid, p.Served())
	p.Release()
}

// pulledPercent is the percentage `podrun daemon: pulling REF: ... (N%)`
// says in stderr, or -1.
func pulledPercent(stderr, ref string) int {
	for _, l := range strings.Split(stderr, "\n") {
		rest, ok := strings.CutPrefix(l, "podrun daemon: pulling "+ref+": ")
		if !ok {
			continue
		}
		var n int
		if i := strings.Index(rest, "("); i >= 0 {
			if _, err := fmt.Sscanf(rest[i:], "(%d%%)", &n); err == nil {
				return n
			}
		}
	}
	return -1
}

// TestPullKilledHalfway: a pull of an image of five layers and 104+ MiB
// whose podrun up, daemon or containerd is killed -9 half-way finishes once
// started again, with at most 1.1x the image served: what each layer's
// download had written to containerd's content store (its ingest: a file
// under the store's ingest directory, kept by the pull's lease in
// containerd's database) is where the next try starts.
func TestPullKilledHalfway(t *testing.T) {
	H.require(t)
	reg := startRegistry(t, "", "")
	// setUp pushes the image, starts a proxy that holds at half of it, and
	// registers what the subtest leaves to be removed; it returns the
	// image's reference through the proxy.
	setUp := func(t *testing.T, name string, seed uint64) (pushedImage, *linkProxy, string) {
		img := pushLayered(t, reg, name+":1", fourLayers(seed))
		p := startProxy(t, &linkProxy{holdAt: img.compressed / 2}, reg.Addr)
		ref := p.Addr + "/" + img.name
		t.Cleanup(func() { deleteImage(t, ref) })
		dropNewLeases(t)
		return img, p, ref
	}

	t.Run("up", func(t *testing.T) {
		img, p, ref := setUp(t, "pn-kill-up", 300)
		file := H.WriteManifest(t, "pn-kill-up.yaml", registryPod("pn-kill-up", ref, "", "", "", ""))
		downOnCleanup(t, file)
		killAtHold(t, p, startPodrun(t, "up", file), nil)
		if _, stderr, code := H.Podrun(t, "", "up", file); code != 0 {
			t.Fatalf("podrun up again: exit %d; stderr:\n%s", code, stderr)
		}
		checkServed(t, p, img.compressed, 1.1)
	})

	t.Run("daemon", func(t *testing.T) {
		img, p, ref := setUp(t, "pn-kill-daemon", 400)
		dir := t.TempDir()
		downOnCleanup(t, "pn-kill-daemon")
		writeInPlace(t, dir, "pn-kill-daemon.yaml", registryPod("pn-kill-daemon", ref, "", "", "", ""))
		port := freePort(t)
		first := startDaemon(t, dir, nil, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
		killAtHold(t, p, first, func() {
			// The pull under way, in `podrun ps` and `status` (from the
			// daemon's status file) and /metrics.
			// Held at half the image: the status file says more than 40 %
			// within a few seconds (it is written again every second).
			eventually(t, 10*time.Second, "podrun ps saying the daemon's pull, 40 % done or more", func() (bool, string) {
				_, stderr, _, _ := H.run(t, "", 30*time.Second, "ps")
				return pulledPercent(stderr, ref) >= 40, stderr
			})
			_, stderr, code := H.Podrun(t, "", "status", staticPodName("pn-kill-daemon"))
			t.Logf("podrun status while the daemon pulls: exit %d; stderr:\n%s", code, stderr)
			if !strings.Contains(stderr, "podrun daemon: pulling "+ref+": layer ") {
				t.Errorf("podrun status %s does not say the pull under way; stderr:\n%s", staticPodName("pn-kill-daemon"), stderr)
			}
			_, body, err := getWithTimeout(&http.Client{Timeout: 2 * time.Second}, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
			if err != nil || !strings.Contains(body, "podrun_image_pulls_in_progress 1") {
				t.Errorf("/metrics during the pull: %v; want podrun_image_pulls_in_progress 1 in:\n%s", err, body)
			}
			for _, l := range strings.Split(body, "\n") {
				if strings.HasPrefix(l, "podrun_image_pull") {
					t.Logf("/metrics during the pull: %s", l)
				}
			}
		})
		again := startDaemon(t, dir, nil)
		waitPodsRunning(t, 90*time.Second, isReady, "pn-kill-daemon")
		waitDaemonSyncs(t, again, 1, 60*time.Second) // its first sync done: nothing in flight when it stops
		checkServed(t, p, img.compressed, 1.1)
	})

	t.Run("containerd", func(t *testing.T) {
		img, p, ref := setUp(t, "pn-kill-ctrd", 500)
		pull := startPodrun(t, "image", "pull", ref)
		restarted := false
		t.Cleanup(func() {
			if !restarted {
				restartContainerd(t) // the rest of the suite needs it
			}
		})
		eventually(t, 90*time.Second, "the proxy holding its connections half-way", func() (bool, string) {
			if pull.exited() {
				t.Fatalf("podrun image pull exited before half-way; stderr:\n%s", pull.stderr())
			}
			return p.Held(), fmt.Sprintf("served %d", p.Served())
		})
		pid := containerdPID(t)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 %d (containerd): %v", pid, err)
		}
		eventually(t, 10*time.Second, "containerd gone", func() (bool, string) {
			_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
			return errors.Is(err, os.ErrNotExist), fmt.Sprint(err)
		})
		t.Logf("killed -9 containerd pid %d after %d bytes served", pid, p.Served())
		p.Release()
		if !pull.wait(60 * time.Second) {
			t.Fatalf("podrun image pull still running 60 s after containerd was killed; stderr:\n%s", pull.stderr())
		}
		t.Logf("podrun image pull exited %d without its containerd; stderr:\n%s", pull.cmd.ProcessState.ExitCode(), pull.stderr())
		restartContainerd(t)
		restarted = true
		pullThrough(t, p, img.name)
		checkServed(t, p, img.compressed, 1.1)
	})
}
