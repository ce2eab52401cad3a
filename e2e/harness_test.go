package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	shim "github.com/containerd/containerd/api/runtime/task/v2"
	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/leases"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/snapshots"
	"github.com/containerd/ttrpc"
	"github.com/opencontainers/image-spec/identity"

	"github.com/podrun/podrun/internal/testimage"
)

const (
	e2eNamespace   = "podrun-e2e"
	e2eImage       = "podrun.test/busybox:1"
	e2eSnapshotter = "overlayfs"
	// e2eNotRoot is the skip message of every test when the suite is not run as root.
	e2eNotRoot = "e2e tests need root (they run containerd, runc, CNI and mounts): run `make test` or `go test ./e2e/` as root"
)

// Harness is what tests use to drive podrun and inspect containerd.
type Harness struct {
	Bin        string // the podrun binary built for this suite
	Address    string // private containerd's grpc socket
	Namespace  string // containerd namespace podrun uses ("podrun-e2e")
	Root       string // podrun --root
	LogDir     string // podrun --log-dir
	RunDir     string // podrun --run-dir: the stream keepers' directories
	Node       string // the node's name (the hostname, lowercased): the daemon's pods are <name>-<Node>
	CNIConfDir string // podrun --cni-conf-dir: empty, so podrun uses its default bridge network
	TmpDir     string // the suite's temp dir; everything above lives under it
	Image      string // ref of the busybox image imported before the tests

	// Timeout bounds one Podrun call; the process is killed by PID past it. Default 3 minutes.
	Timeout time.Duration

	skip string // when set, every helper skips the test with this message
}

// H is the suite's harness, ready when the tests run.
var H = &Harness{Namespace: e2eNamespace, Image: e2eImage, Timeout: 3 * time.Minute}

func (h *Harness) require(t testing.TB) {
	t.Helper()
	if h.skip != "" {
		t.Skip(h.skip)
	}
}

func (h *Harness) globalArgs() []string {
	args := []string{"--address", h.Address, "--containerd-namespace", h.Namespace, "--root", h.Root, "--log-dir", h.LogDir, "--run-dir", h.RunDir}
	if h.CNIConfDir != "" {
		args = append(args, "--cni-conf-dir", h.CNIConfDir)
	}
	return args
}

// Podrun runs podrun with the global flags prepended and stdin (none when ""),
// logs the call, and returns its stdout, stderr and exit code (-1 when killed
// by a signal). Past h.Timeout the process is killed by PID and the test is
// marked failed.
func (h *Harness) Podrun(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	h.require(t)
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	start := time.Now()
	args = toCompletion(stdin, args)
	stdout, stderr, code, timedOut := h.run(t, stdin, timeout, args...)
	t.Logf("$ podrun %s\n[exit %d after %v]\n--- stdout:\n%s--- stderr:\n%s", strings.Join(args, " "),
		code, time.Since(start).Round(time.Millisecond), e2eClip(stdout), e2eClip(stderr))
	if timedOut {
		t.Errorf("podrun %s: timed out after %v, killed", strings.Join(args, " "), timeout)
	}
	return stdout, stderr, code
}

// toCompletion adds --wait=completion to an `up` of run-to-completion pods
// (each pod of a file or stdin with restartPolicy Never or OnFailure) that says no
// --wait, -d or --foreground: most tests of such pods check how they ended. Tests of
// `up`'s default (the Ready condition) say --wait=ready.
func toCompletion(stdin string, args []string) []string {
	i := slices.Index(args, "up")
	if i < 0 || slices.ContainsFunc(args[i+1:], func(a string) bool {
		return strings.HasPrefix(a, "--wait") || slices.Contains([]string{"-d", "--detach", "--foreground"}, a)
	}) {
		return args
	}
	runs := func(s string) bool { // every pod of s runs to completion
		n := strings.Count(s, "restartPolicy: Never") + strings.Count(s, "restartPolicy: OnFailure")
		return n > 0 && n == strings.Count(s, "kind: Pod\n")
	}
	for _, a := range args[i+1:] {
		b, err := os.ReadFile(a)
		if (a == "-" && runs(stdin)) || (err == nil && runs(string(b))) {
			return slices.Insert(slices.Clone(args), i+1, "--wait=completion")
		}
	}
	return args
}

// run runs podrun with the global flags prepended and stdin (none when "")
// without logging the call, and returns its stdout, stderr and exit code (-1
// when killed by a signal); past timeout the process is killed by PID and
// timedOut is true.
func (h *Harness) run(tb testing.TB, stdin string, timeout time.Duration, args ...string) (stdout, stderr string, code int, timedOut bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.Bin, append(h.globalArgs(), args...)...)
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	cmd.WaitDelay = 5 * time.Second
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var outBuf, errBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		code = 0
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		// podrun exited, but a child it left kept stdout or stderr open.
		code = cmd.ProcessState.ExitCode()
		tb.Logf("podrun %s: a child process kept its output open after it exited", strings.Join(args, " "))
	default:
		tb.Fatalf("running podrun %s: %v", strings.Join(args, " "), err)
	}
	return outBuf.String(), errBuf.String(), code, ctx.Err() == context.DeadlineExceeded
}

// CmdOutput collects a background process's output; safe for concurrent use.
type CmdOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *CmdOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// String returns everything written so far.
func (o *CmdOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Start runs podrun in the background with the global flags prepended (for
// kill -9 tests). cmd.Stdout and cmd.Stderr are *CmdOutput. When the test
// ends, a process the test has not waited for is killed by PID and reaped.
func (h *Harness) Start(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	h.require(t)
	cmd := exec.Command(h.Bin, append(h.globalArgs(), args...)...)
	stdout, stderr := &CmdOutput{}, &CmdOutput{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second // a child that keeps the output pipes open does not block Wait
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting podrun %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("$ podrun %s &  [pid %d]", strings.Join(args, " "), cmd.Process.Pid)
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		t.Logf("background podrun %s [pid %d, %v]\n--- stdout:\n%s--- stderr:\n%s", strings.Join(args, " "),
			cmd.Process.Pid, cmd.ProcessState, e2eClip(stdout.String()), e2eClip(stderr.String()))
	})
	return cmd
}

// WriteManifest writes yaml to name in a fresh t.TempDir() and returns its path.
func (h *Harness) WriteManifest(t *testing.T, name, yaml string) string {
	t.Helper()
	h.require(t)
	p := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Client returns a client of the private containerd and a context in the
// suite's namespace; the client is closed when the test ends.
func (h *Harness) Client(t *testing.T) (*containerd.Client, context.Context) {
	t.Helper()
	h.require(t)
	c, err := containerd.New(h.Address, containerd.WithDefaultNamespace(h.Namespace), containerd.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("connecting to containerd: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, namespaces.WithNamespace(context.Background(), h.Namespace)
}

// ImportImage builds an image with testimage (Busybox defaults to the host's)
// and imports and unpacks it into the suite's namespace; it returns the ref.
func (h *Harness) ImportImage(t *testing.T, cfg testimage.Config) string {
	t.Helper()
	c, ctx := h.Client(t)
	archive := filepath.Join(t.TempDir(), "image.tar")
	if err := e2eImportImage(ctx, c, cfg, archive); err != nil {
		t.Fatalf("importing image %q: %v", cfg.Ref, err)
	}
	return cfg.Ref
}

// e2eWriteArchive builds an image with testimage into an OCI archive at path.
func e2eWriteArchive(path string, cfg testimage.Config) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := testimage.WriteOCIArchive(w, cfg); err != nil {
		f.Close()
		return fmt.Errorf("building archive: %w", err)
	}
	return errors.Join(w.Flush(), f.Close())
}

func e2eImportImage(ctx context.Context, c *containerd.Client, cfg testimage.Config, archive string) error {
	if err := e2eWriteArchive(archive, cfg); err != nil {
		return err
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	imgs, err := c.Import(ctx, f)
	if err != nil {
		return fmt.Errorf("importing: %w", err)
	}
	if len(imgs) == 0 {
		return errors.New("archive held no image")
	}
	for _, img := range imgs {
		if err := containerd.NewImage(c, img).Unpack(ctx, e2eSnapshotter); err != nil {
			return fmt.Errorf("unpacking %q: %w", img.Name, err)
		}
	}
	return nil
}

func e2eClip(s string) string {
	const limit = 16 << 10
	if len(s) > limit {
		s = s[:limit/2] + fmt.Sprintf("\n... [%d bytes cut] ...\n", len(s)-limit) + s[len(s)-limit/2:]
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

func TestMain(m *testing.M) {
	os.Exit(e2eMain(m))
}

func e2eMain(m *testing.M) int {
	if os.Geteuid() != 0 {
		H.skip = e2eNotRoot
		fmt.Fprintln(os.Stderr, "e2e: not root: the end-to-end tests will skip")
		return m.Run()
	}
	s := &e2eSuite{}
	code := 0
	if err := s.setUp(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: setup failed: %v\n", err)
		code = 1
	} else {
		code = m.Run()
		if n := s.checkLeaks(); n > 0 {
			fmt.Fprintf(os.Stderr, "e2e: FAIL: leak check: %d things were left behind (listed above)\n", n)
			code = 1
		} else {
			fmt.Fprintln(os.Stderr, "e2e: leak check: nothing left behind")
		}
	}
	if err := s.tearDown(code != 0); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: teardown: %v\n", err)
		code = 1
	}
	return code
}

// e2eSuite is the state TestMain keeps between setup and teardown.
type e2eSuite struct {
	tmp     string
	before  e2eHost
	client  *containerd.Client
	ctrd    *exec.Cmd
	ctrdLog string
	done    chan struct{} // closed when containerd has exited
}

func (s *e2eSuite) setUp() error {
	e2eRemoveStale()
	tmp, err := os.MkdirTemp("", e2eTmpPrefix)
	if err != nil {
		return err
	}
	// A unix socket path must fit in 108 bytes.
	if len(filepath.Join(tmp, "containerd.sock.ttrpc")) > 100 {
		_ = os.Remove(tmp)
		if tmp, err = os.MkdirTemp("/tmp", e2eTmpPrefix); err != nil {
			return err
		}
	}
	if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
		return err
	}
	s.tmp = tmp
	if err := os.WriteFile(filepath.Join(tmp, e2eOwnerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	s.before = e2eCapture(tmp)

	H.TmpDir = tmp
	H.Bin = filepath.Join(tmp, "podrun")
	H.Address = filepath.Join(tmp, "containerd.sock")
	H.Root = filepath.Join(tmp, "root")
	H.LogDir = filepath.Join(tmp, "logs")
	H.RunDir = filepath.Join(tmp, "run")
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	H.Node = strings.ToLower(host)
	H.CNIConfDir = filepath.Join(tmp, "cni-conf")
	for _, d := range []string{H.Root, H.LogDir, H.CNIConfDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}

	t0 := time.Now()
	if err := e2eBuild(H.Bin); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2e: built podrun in %v\n", time.Since(t0).Round(time.Millisecond))

	t0 = time.Now()
	if err := s.startContainerd(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2e: containerd (pid %d) answering on %s after %v\n", s.ctrd.Process.Pid, H.Address, time.Since(t0).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), H.Namespace), 2*time.Minute)
	defer cancel()
	if err := e2eImportImage(ctx, s.client, testimage.Config{Ref: H.Image}, filepath.Join(tmp, "busybox.tar")); err != nil {
		return fmt.Errorf("importing %q: %w", H.Image, err)
	}
	fmt.Fprintf(os.Stderr, "e2e: imported %s into namespace %s\n", H.Image, H.Namespace)
	return nil
}

const (
	e2eTmpPrefix = "podrun-e2e-"
	e2eOwnerFile = "owner.pid" // PID of the test binary that owns a suite temp dir
)

// e2eRemoveStale removes suite temp dirs left by earlier runs that died
// without tearing down (a panicking test, a go test timeout): those whose
// owner process is gone. Their containerd died with them (Pdeathsig).
func e2eRemoveStale() {
	seen := map[string]bool{}
	for _, dir := range []string{os.TempDir(), "/tmp"} {
		matches, _ := filepath.Glob(filepath.Join(dir, e2eTmpPrefix+"*"))
		for _, m := range matches {
			if seen[m] {
				continue
			}
			seen[m] = true
			st, err := os.Stat(m)
			if err != nil || !st.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(m, e2eOwnerFile))
			if err != nil {
				if time.Since(st.ModTime()) < time.Minute {
					continue // maybe a suite being set up right now
				}
			} else if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
					continue // its suite is still running
				}
			}
			for _, mp := range e2eMountsUnder(m) {
				_ = syscall.Unmount(mp, syscall.MNT_DETACH)
			}
			if err := os.RemoveAll(m); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: removing stale suite dir %s: %v\n", m, err)
				continue
			}
			fmt.Fprintf(os.Stderr, "e2e: removed stale suite dir %s left by an earlier run\n", m)
			if pids := e2eShims(filepath.Join(m, "containerd.sock")); len(pids) > 0 {
				fmt.Fprintf(os.Stderr, "e2e: warning: shims of that run are still running: pids %v\n", pids)
			}
		}
	}
}

// e2eBuild builds the podrun binary from the repository root.
func e2eBuild(out string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return fmt.Errorf("no go.mod above %s", wd)
		}
		root = parent
	}
	goBin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first in PATH
	if err != nil {
		return err
	}
	cmd := exec.Command(goBin, "build", "-tags", "containers_image_openpgp", "-o", out, ".")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building podrun (CGO_ENABLED=0 go build -tags containers_image_openpgp -o %s . in %s): %w\n%s", out, root, err, b)
	}
	return nil
}

func (s *e2eSuite) startContainerd() error {
	dir := filepath.Join(s.tmp, "containerd")
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), H.Address, H.Address+".ttrpc", filepath.Join(dir, "opt"))
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	configPath := filepath.Join(s.tmp, "containerd.toml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return err
	}
	s.ctrdLog = filepath.Join(s.tmp, "containerd.log")
	logf, err := os.Create(s.ctrdLog)
	if err != nil {
		return err
	}
	defer logf.Close()

	// Start containerd from a goroutine that keeps its OS thread locked until
	// containerd exits: Pdeathsig is tied to the thread that forked, and this
	// way containerd dies with the test binary (e.g. on a go test timeout).
	s.done = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer close(s.done)
		cmd := exec.Command("containerd", "--config", configPath)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("starting containerd: %w", err)
			return
		}
		s.ctrd = cmd
		started <- nil
		_ = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return err
	}

	deadline := time.Now().Add(20 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("containerd exited during startup (%v); log:\n%s", s.ctrd.ProcessState, e2eTail(s.ctrdLog, 30))
		default:
		}
		if c, err := containerd.New(H.Address, containerd.WithTimeout(time.Second)); err != nil {
			lastErr = err
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = c.Version(ctx)
			cancel()
			if err == nil {
				s.client = c
				return nil
			}
			lastErr = err
			_ = c.Close()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("containerd did not answer on %s within 20s: %v; log:\n%s", H.Address, lastErr, e2eTail(s.ctrdLog, 30))
}

// tearDown stops containerd by PID, kills shims it left, unmounts what is
// left under the temp dir and removes it.
func (s *e2eSuite) tearDown(failed bool) error {
	var errs []error
	if s.client != nil {
		_ = s.client.Close()
	}
	if s.ctrd != nil {
		if failed {
			fmt.Fprintf(os.Stderr, "e2e: last errors in the containerd log:\n%s", e2eTail(s.ctrdLog, 40, "level=error", "level=fatal", "panic"))
			fmt.Fprintf(os.Stderr, "e2e: the stream keeper's log:\n%s", e2eTail(filepath.Join(H.RunDir, "io", "keeper.log"), 40))
		}
		_ = s.ctrd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			fmt.Fprintf(os.Stderr, "e2e: containerd (pid %d) ignored SIGTERM for 10s: killing it\n", s.ctrd.Process.Pid)
			_ = s.ctrd.Process.Kill()
			<-s.done
		}
		// Shims outlive containerd by design; any still serving our address
		// is a leak. But a shared shim (run's pool) whose last task's delete
		// was cut off by a killed podrun never got containerd's Shutdown and
		// idles until its lane's next task ends: it is sent that Shutdown
		// (a shim with a task refuses it and stays a leak).
		for _, pid := range e2eShims(H.Address) {
			e2eShutdownIdleShim(pid)
		}
		for _, pid := range e2eShims(H.Address) {
			// Its command line and sockets say which it is: a shim
			// serving tasks, or a cleanup (`... delete`) that hung.
			argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			errs = append(errs, fmt.Errorf("containerd shim pid %d still running after containerd stopped (killed): %q, listening on %v",
				pid, strings.ReplaceAll(strings.TrimRight(string(argv), "\x00"), "\x00", " "), listeningSockets(pid)))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := e2eRemoveNamespaceCgroups(); err != nil {
		errs = append(errs, fmt.Errorf("removing the namespace's cgroups: %w", err))
	}
	if s.tmp == "" {
		return errors.Join(errs...)
	}
	for _, mp := range e2eMountsUnder(s.tmp) {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	if err := os.RemoveAll(s.tmp); err != nil {
		errs = append(errs, fmt.Errorf("removing the suite's temp dir: %w", err))
	}
	return errors.Join(errs...)
}

// e2eTail returns the last n lines of a file, only those containing one of
// the given strings when some are given.
func e2eTail(path string, n int, only ...string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	var lines []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		keep := len(only) == 0
		for _, o := range only {
			keep = keep || strings.Contains(l, o)
		}
		if keep && l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// ---- leak check ----

// e2eLeak is one thing left behind, and how to remove it.
type e2eLeak struct {
	what string
	fix  func() error // nil when there is nothing to do or the fix lies elsewhere; "already gone" is success
	// host marks host-wide things (netns, links, iptables, /var/lib/cni) that a
	// podrun run outside the suite could also have made: removed only in CI or
	// with PODRUN_E2E_FORCE_CLEANUP=1, never on a shared developer machine by default.
	host bool
}

// e2eForceHostCleanup tells whether leaked host-wide things may be removed.
func e2eForceHostCleanup() bool {
	return os.Getenv("CI") == "true" || os.Getenv("PODRUN_E2E_FORCE_CLEANUP") == "1"
}

// checkLeaks lists what the suite left behind, then removes it; it returns how many there were.
func (s *e2eSuite) checkLeaks() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The stream keeper ends a few seconds after its last container.
	for deadline := time.Now().Add(20 * time.Second); len(e2eKeepers(s.tmp)) > 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	leaks := s.containerdLeaks(ctx)
	leaks = append(leaks, e2eHostLeaks(s.before, e2eCapture(s.tmp), s.tmp)...)
	if len(leaks) == 0 {
		return 0
	}
	fmt.Fprintf(os.Stderr, "e2e: LEAK CHECK FAILED: %d things left after the suite:\n", len(leaks))
	for _, l := range leaks {
		fmt.Fprintf(os.Stderr, "  LEAK: %s\n", l.what)
	}
	skipped := 0
	for _, l := range leaks {
		switch {
		case l.fix == nil:
		case l.host && !e2eForceHostCleanup():
			skipped++
		default:
			if err := l.fix(); err != nil {
				fmt.Fprintf(os.Stderr, "  cleanup of %s: %v\n", l.what, err)
			}
		}
	}
	if skipped > 0 {
		fmt.Fprintf(os.Stderr, "e2e: left %d host-wide leaks in place (another podrun on this machine may own them): "+
			"set PODRUN_E2E_FORCE_CLEANUP=1 (implied by CI=true) to remove them\n", skipped)
	}
	return len(leaks)
}

// containerdLeaks lists containers, tasks, leases and snapshots (other than
// image layer chains) in every namespace of the private containerd.
func (s *e2eSuite) containerdLeaks(ctx context.Context) []e2eLeak {
	c := s.client
	// Collect garbage first (deleting a lease synchronously runs the GC), so
	// that only what is still referenced counts.
	if l, err := c.LeasesService().Create(namespaces.WithNamespace(ctx, H.Namespace), leases.WithRandomID()); err == nil {
		_ = c.LeasesService().Delete(namespaces.WithNamespace(ctx, H.Namespace), l, leases.SynchronousDelete)
	}
	nss, err := c.NamespaceService().List(ctx)
	if err != nil {
		return []e2eLeak{{what: fmt.Sprintf("cannot list containerd namespaces: %v", err)}}
	}
	var out []e2eLeak
	for _, ns := range nss {
		nctx := namespaces.WithNamespace(ctx, ns)

		ctrs, err := c.Containers(nctx)
		if err != nil {
			out = append(out, e2eLeak{what: fmt.Sprintf("cannot list containers in %s: %v", ns, err)})
		}
		for _, ctr := range ctrs {
			info, _ := ctr.Info(nctx)
			out = append(out, e2eLeak{
				what: fmt.Sprintf("containerd container %s/%s (image %s, labels %v)", ns, ctr.ID(), info.Image, info.Labels),
				fix:  func() error { return e2eGone(e2eDeleteContainer(nctx, ctr)) },
			})
		}

		resp, err := c.TaskService().List(nctx, &tasksapi.ListTasksRequest{})
		if err != nil {
			out = append(out, e2eLeak{what: fmt.Sprintf("cannot list tasks in %s: %v", ns, err)})
		} else {
			for _, task := range resp.Tasks {
				out = append(out, e2eLeak{what: fmt.Sprintf("containerd task %s/%s (pid %d, %v)", ns, task.ID, task.Pid, task.Status)})
			}
		}

		ls, err := c.LeasesService().List(nctx)
		if err != nil {
			out = append(out, e2eLeak{what: fmt.Sprintf("cannot list leases in %s: %v", ns, err)})
		}
		for _, l := range ls {
			out = append(out, e2eLeak{
				what: fmt.Sprintf("containerd lease %s/%s (labels %v)", ns, l.ID, l.Labels),
				fix:  func() error { return e2eGone(c.LeasesService().Delete(nctx, l, leases.SynchronousDelete)) },
			})
		}

		// Committed layer chains of the namespace's images are expected; nothing else is.
		chains := map[string]bool{}
		imgs, err := c.ListImages(nctx)
		if err != nil {
			out = append(out, e2eLeak{what: fmt.Sprintf("cannot list images in %s: %v", ns, err)})
		}
		for _, img := range imgs {
			diffIDs, err := img.RootFS(nctx)
			if err != nil {
				continue
			}
			for _, id := range identity.ChainIDs(diffIDs) {
				chains[id.String()] = true
			}
		}
		sn := c.SnapshotService(e2eSnapshotter)
		var stray []snapshots.Info
		err = sn.Walk(nctx, func(_ context.Context, info snapshots.Info) error {
			if info.Kind != snapshots.KindCommitted || !chains[info.Name] {
				stray = append(stray, info)
			}
			return nil
		})
		if err != nil {
			out = append(out, e2eLeak{what: fmt.Sprintf("cannot walk %s snapshots in %s: %v", e2eSnapshotter, ns, err)})
		}
		// Remove children before parents: active ones first.
		sort.SliceStable(stray, func(i, j int) bool {
			return stray[i].Kind != snapshots.KindCommitted && stray[j].Kind == snapshots.KindCommitted
		})
		for _, info := range stray {
			key := info.Name
			out = append(out, e2eLeak{
				what: fmt.Sprintf("containerd %s snapshot %s/%s (%v, parent %q, labels %v)", e2eSnapshotter, ns, key, info.Kind, info.Parent, info.Labels),
				fix:  func() error { return e2eGone(sn.Remove(nctx, key)) },
			})
		}
	}
	return out
}

func e2eDeleteContainer(ctx context.Context, ctr containerd.Container) error {
	if task, err := ctr.Task(ctx, nil); err == nil {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if exited, err := task.Wait(wctx); err == nil {
			_ = task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll)
			select {
			case <-exited:
			case <-wctx.Done():
			}
		}
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil {
			return fmt.Errorf("deleting task: %w", err)
		}
	}
	if err := ctr.Delete(ctx, containerd.WithSnapshotCleanup); err != nil {
		return fmt.Errorf("deleting container: %w", err)
	}
	return nil
}

// e2eHost is the host-level state the leak check compares before and after the suite.
type e2eHost struct {
	netns       map[string]bool     // /run/netns/podrun-*
	links       map[string]bool     // "name#ifindex" of veth* and veth-kind interfaces
	bridges     map[string]bool     // bridges named podrun* (a leak only with ports attached)
	bridgePorts map[string][]string // bridge name -> names of the links attached to it
	mounts      map[string]bool     // "mountpoint root" of suspect mounts
	iptables    map[string]bool     // "table\tline" of iptables-save lines mentioning CNI
	ipFiles     map[string]bool     // host-local reservations under /var/lib/cni/networks
	cniCache    map[string]bool     // libcni result cache under /var/lib/cni/results
	runc        map[string]bool     // runc state dirs of the suite's namespace
	cgroups     map[string]bool     // pod cgroups of the suite's namespace (resources_test.go)
	strayDirs   map[string]bool     // entries named *podrun* in $TMPDIR, /tmp, /run, /var/lib
	errs        []string
}

const (
	e2eNetnsDir    = "/run/netns"
	e2eIPAMDir     = "/var/lib/cni/networks"
	e2eCNICacheDir = "/var/lib/cni/results"
)

var e2eRuncDir = "/run/containerd/runc/" + e2eNamespace

func e2eCapture(tmp string) e2eHost {
	h := e2eHost{
		netns: map[string]bool{}, links: map[string]bool{}, bridges: map[string]bool{}, mounts: map[string]bool{},
		iptables: map[string]bool{}, ipFiles: map[string]bool{}, cniCache: map[string]bool{}, runc: map[string]bool{},
		strayDirs: map[string]bool{}, bridgePorts: map[string][]string{},
	}
	if ents, err := os.ReadDir(e2eNetnsDir); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "podrun-") {
				h.netns[e.Name()] = true
			}
		}
	}

	if out, err := exec.Command("ip", "-o", "-d", "link", "show").Output(); err != nil {
		h.errs = append(h.errs, fmt.Sprintf("ip -d link show: %v", err))
	} else {
		// ip, not /sys/class/net: sysfs shows the netns it was mounted in.
		links := e2eParseLinks(string(out))
		for _, l := range links {
			if l.kind == "veth" || strings.HasPrefix(l.name, "veth") {
				h.links[l.name+"#"+strconv.Itoa(l.index)] = true
			}
			if l.kind == "bridge" && strings.HasPrefix(l.name, "podrun") {
				h.bridges[l.name] = true
			}
			if l.master != "" {
				h.bridgePorts[l.master] = append(h.bridgePorts[l.master], l.name)
			}
		}
	}

	for _, m := range e2eMountinfo() {
		if e2eSuspectMount(m, tmp) {
			h.mounts[m.point+" "+m.root] = true
		}
	}

	if lines, err := e2eIptablesCNI(); err != nil {
		h.errs = append(h.errs, fmt.Sprintf("iptables-save: %v", err))
	} else {
		h.iptables = lines
	}

	_ = filepath.WalkDir(e2eIPAMDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && net.ParseIP(d.Name()) != nil {
			h.ipFiles[p] = true
		}
		return nil
	})
	if ents, err := os.ReadDir(e2eCNICacheDir); err == nil {
		for _, e := range ents {
			h.cniCache[filepath.Join(e2eCNICacheDir, e.Name())] = true
		}
	}
	if ents, err := os.ReadDir(e2eRuncDir); err == nil {
		for _, e := range ents {
			h.runc[e.Name()] = true
		}
	}
	h.cgroups = e2ePodCgroups()
	for _, dir := range []string{os.TempDir(), "/tmp", "/run", "/var/lib"} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if strings.Contains(strings.ToLower(e.Name()), "podrun") && p != tmp {
				h.strayDirs[p] = true
			}
		}
	}
	return h
}

// e2eHostLeaks lists what is in after and not in before, plus host-local IP
// reservations anywhere under the suite's temp dir.
func e2eHostLeaks(before, after e2eHost, tmp string) []e2eLeak {
	var out []e2eLeak
	for _, e := range after.errs {
		fmt.Fprintf(os.Stderr, "e2e: leak check: cannot check: %s\n", e)
	}
	for _, name := range e2eNew(before.netns, after.netns) {
		out = append(out, e2eLeak{what: "network namespace " + filepath.Join(e2eNetnsDir, name), host: true, fix: func() error {
			if _, err := os.Lstat(filepath.Join(e2eNetnsDir, name)); errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return e2eRun("ip", "netns", "delete", name)
		}})
	}
	for _, key := range e2eNew(before.links, after.links) {
		name, _, _ := strings.Cut(key, "#")
		out = append(out, e2eLeak{what: "veth interface " + name, host: true, fix: func() error { return e2eDeleteLink(name) }})
	}
	// CNI's bridge plugin never deletes its bridge: a new podrun* bridge with
	// no ports is the network's plumbing, which the suite removes as it made
	// it; one with ports attached is a leak.
	for _, name := range e2eNew(before.bridges, after.bridges) {
		ports := after.bridgePorts[name]
		if len(ports) == 0 {
			if err := e2eDeleteLink(name); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: leak check: removing bridge %s, which the suite's pods created: %v\n", name, err)
			}
			continue
		}
		out = append(out, e2eLeak{what: fmt.Sprintf("bridge %s with ports %v", name, ports), host: true, fix: func() error { return e2eDeleteLink(name) }})
	}
	for _, key := range e2eNew(before.mounts, after.mounts) {
		point, root, _ := strings.Cut(key, " ")
		out = append(out, e2eLeak{what: fmt.Sprintf("mount on %s (root %s)", point, root), host: !e2eUnder(point, tmp), fix: func() error {
			if err := syscall.Unmount(point, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				return err
			}
			return nil
		}})
	}
	newRules := e2eNew(before.iptables, after.iptables)
	var leakedRules []string
	for _, r := range newRules {
		if !e2eIptablesPlumbing(r) {
			leakedRules = append(leakedRules, r)
			table, line, _ := strings.Cut(r, "\t")
			out = append(out, e2eLeak{what: fmt.Sprintf("iptables rule (%s) %s", table, line), host: true})
		}
	}
	if len(leakedRules) > 0 {
		out[len(out)-1].fix = func() error { return e2eRemoveIptables(leakedRules) }
	}
	removeFile := func(p string) func() error {
		return func() error {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
	}
	ipFile := func(p string, host bool) {
		data, _ := os.ReadFile(p)
		out = append(out, e2eLeak{what: fmt.Sprintf("host-local IP reservation %s (%q)", p, strings.TrimSpace(string(data))),
			host: host, fix: removeFile(p)})
	}
	for _, p := range e2eNew(before.ipFiles, after.ipFiles) {
		ipFile(p, true)
	}
	// Reservations anywhere under the suite's dir (podrun keeps its IPAM data
	// under --root), not descending into containerd's data or other mounts.
	mounted := map[string]bool{}
	for _, m := range e2eMountinfo() {
		mounted[m.point] = true
	}
	_ = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && p != tmp && (mounted[p] || p == filepath.Join(tmp, "containerd")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && net.ParseIP(d.Name()) != nil {
			ipFile(p, false)
		}
		if d.IsDir() && filepath.Dir(p) == filepath.Join(H.RunDir, "io") {
			// A stream keeper's FIFOs and socket: removed with its container.
			out = append(out, e2eLeak{what: "stream keeper directory " + p, fix: func() error { return os.RemoveAll(p) }})
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.Contains(p, "/cni/cache/results/") {
			// libcni's record of an attachment (podrun's --root/cni/cache):
			// one left means a CNI DEL never ran for it.
			out = append(out, e2eLeak{what: "CNI result cache entry " + p, fix: removeFile(p)})
		}
		return nil
	})
	for _, p := range e2eNew(before.cniCache, after.cniCache) {
		out = append(out, e2eLeak{what: "CNI result cache file " + p, host: true, fix: removeFile(p)})
	}
	for _, id := range e2eNew(before.runc, after.runc) {
		out = append(out, e2eLeak{what: "runc state " + filepath.Join(e2eRuncDir, id), fix: func() error {
			if _, err := os.Stat(filepath.Join(e2eRuncDir, id)); errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return e2eRun("runc", "--root", e2eRuncDir, "delete", "--force", id)
		}})
	}
	for _, p := range e2eNew(before.cgroups, after.cgroups) {
		out = append(out, e2eLeak{what: "cgroup " + p, fix: func() error { return e2eRemoveCgroup(p) }})
	}
	for _, pid := range e2eKeepers(tmp) {
		out = append(out, e2eLeak{what: fmt.Sprintf("stream keeper process %d (podrun cri-io)", pid), fix: func() error {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
			return nil
		}})
	}
	for _, p := range e2eNew(before.strayDirs, after.strayDirs) {
		out = append(out, e2eLeak{what: "stray file or dir outside the suite's temp dir: " + p})
	}
	return out
}

// e2eGone treats "not found" as done.
func e2eGone(err error) error {
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

func e2eDeleteLink(name string) error {
	if exec.Command("ip", "link", "show", "dev", name).Run() != nil {
		return nil // already gone
	}
	return e2eRun("ip", "link", "delete", name)
}

// e2eNew lists the keys of after that are not in before, sorted.
func e2eNew(before, after map[string]bool) []string {
	var out []string
	for k := range after {
		if !before[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func e2eRun(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

type e2eLink struct {
	index  int
	name   string
	kind   string // "veth", "bridge", ... ("" for a physical device)
	master string // the bridge it is attached to
}

var (
	e2eLinkKind   = regexp.MustCompile(`\\\s+([a-z0-9_]+)\s`)
	e2eLinkMaster = regexp.MustCompile(` master (\S+) `)
)

// e2eParseLinks parses `ip -o -d link show`:
// "5: veth12@if2: <...> mtu 1500 master podrun0 ...\    link/ether ... \    veth \    bridge_slave ...".
func e2eParseLinks(out string) []e2eLink {
	var links []e2eLink
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, ": ", 3)
		if len(f) < 3 {
			continue
		}
		idx, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(f[1], "@")
		l := e2eLink{index: idx, name: name}
		if m := e2eLinkKind.FindStringSubmatch(f[2]); m != nil {
			l.kind = m[1]
		}
		if m := e2eLinkMaster.FindStringSubmatch(f[2]); m != nil {
			l.master = m[1]
		}
		links = append(links, l)
	}
	return links
}

type e2eMount struct {
	point, root string
}

func e2eMountinfo() []e2eMount {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []e2eMount
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		out = append(out, e2eMount{root: e2eUnescape(f[3]), point: e2eUnescape(f[4])})
	}
	return out
}

// e2eUnescape undoes mountinfo's octal escapes (\040 for a space).
func e2eUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func e2eUnder(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func e2eSuspectMount(m e2eMount, tmp string) bool {
	return e2eUnder(m.point, tmp) ||
		strings.HasPrefix(m.point, e2eNetnsDir+"/podrun-") ||
		strings.Contains(m.point, "/pods/") || strings.Contains(m.root, "/pods/")
}

// e2eMountsUnder returns the mount points under dir, deepest first.
func e2eMountsUnder(dir string) []string {
	var out []string
	for _, m := range e2eMountinfo() {
		if e2eUnder(m.point, dir) {
			out = append(out, m.point)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

var e2eChainCounters = regexp.MustCompile(`^(:\S+ \S+) \[\d+:\d+\]$`)

// e2eIptablesCNI returns iptables-save's lines that mention CNI, as
// "table\tline" with chain counters dropped.
func e2eIptablesCNI() (map[string]bool, error) {
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		return nil, err
	}
	lines := map[string]bool{}
	table := ""
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || line == "COMMIT":
			continue
		case strings.HasPrefix(line, "*"):
			table = line[1:]
			continue
		}
		if !strings.Contains(line, "CNI") {
			continue
		}
		lines[table+"\t"+e2eChainCounters.ReplaceAllString(line, "$1")] = true
	}
	return lines, nil
}

// e2eIptablesPlumbingRE matches the chains and jumps the portmap and firewall
// plugins install once and never remove: they are not per-pod leaks.
var e2eIptablesPlumbingRE = regexp.MustCompile(`^\S+\t(` +
	`:CNI-(HOSTPORT-(DNAT|SETMARK|MASQ)|FORWARD|ADMIN) \S+` +
	`|-A CNI-HOSTPORT-(SETMARK|MASQ) .*` +
	`|-A (PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING|CNI-FORWARD) .*-j CNI-(HOSTPORT-(DNAT|SETMARK|MASQ)|FORWARD|ADMIN)` +
	`)$`)

func e2eIptablesPlumbing(rule string) bool {
	return e2eIptablesPlumbingRE.MatchString(rule)
}

// e2eRemoveIptables deletes leaked rules, then flushes and deletes leaked
// chains, one iptables-restore --noflush call per command.
func e2eRemoveIptables(rules []string) error {
	type cmd struct{ table, line string }
	var dels, flushes, drops []cmd
	chains := map[string]bool{}
	for _, r := range rules {
		table, line, _ := strings.Cut(r, "\t")
		if strings.HasPrefix(line, ":") {
			chain := strings.Fields(line[1:])[0]
			chains[table+"\t"+chain] = true
			flushes = append(flushes, cmd{table, "-F " + chain})
			drops = append(drops, cmd{table, "-X " + chain})
		}
	}
	for _, r := range rules {
		table, line, _ := strings.Cut(r, "\t")
		if rest, ok := strings.CutPrefix(line, "-A "); ok {
			chain := strings.Fields(rest)[0]
			if !chains[table+"\t"+chain] {
				dels = append(dels, cmd{table, "-D " + rest})
			}
		}
	}
	var errs []error
	for _, c := range append(append(dels, flushes...), drops...) {
		restore := exec.Command("iptables-restore", "--noflush")
		restore.Stdin = strings.NewReader("*" + c.table + "\n" + c.line + "\nCOMMIT\n")
		if out, err := restore.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("iptables -t %s %s: %w: %s", c.table, c.line, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// e2eShims returns the PIDs of containerd shims serving the given containerd address.
func e2eShims(address string) []int {
	return e2eProcs(func(_ int, argv []string) bool {
		if !strings.Contains(filepath.Base(argv[0]), "containerd-shim") {
			return false
		}
		for i := 0; i+1 < len(argv); i++ {
			if (argv[i] == "-address" || argv[i] == "--address") && argv[i+1] == address {
				return true
			}
		}
		return false
	})
}

// e2eProcs returns the PIDs of the processes whose command line keep accepts.
// e2eKeepers are the stream keepers (`podrun cri-io --dir DIR`) of the
// suite's run dirs under tmp.
func e2eKeepers(tmp string) []int {
	return e2eProcs(func(_ int, argv []string) bool {
		return len(argv) > 3 && argv[1] == "cri-io" && argv[2] == "--dir" && e2eUnder(argv[3], tmp)
	})
}

func e2eProcs(keep func(pid int, argv []string) bool) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		if keep(pid, strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// e2eShutdownIdleShim sends shim pid the Shutdown containerd sends once a
// shim's task is deleted, on each unix socket it listens on, and gives it
// 2 s to exit: a shim serving no task exits, one serving a task stays.
func e2eShutdownIdleShim(pid int) {
	for _, path := range listeningSockets(pid) {
		conn, err := net.DialTimeout("unix", strings.TrimPrefix(path, "@"), time.Second)
		if err != nil {
			continue
		}
		client := ttrpc.NewClient(conn)
		ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), H.Namespace), 2*time.Second)
		_, _ = shim.NewTaskClient(client).Shutdown(ctx, &shim.ShutdownRequest{})
		cancel()
		client.Close()
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return
		}
	}
}

// listeningSockets are the paths of the unix sockets process pid listens
// on ("@..." for an abstract one).
func listeningSockets(pid int) []string {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	table, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		// Num RefCount Protocol Flags(00010000: listening) Type St Inode Path
		if len(f) >= 8 && f[3] == "00010000" && inodes[f[6]] {
			out = append(out, f[7])
		}
	}
	return out
}
