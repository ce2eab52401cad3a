package ctrd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/podrun/podrun/atomicfile"

	"github.com/podrun/podrun/engine"
)

// Private describes podrun's own containerd, started when no system
// containerd answers: its config and data live under Root, its socket and
// state under RunDir.
type Private struct {
	Root   string // e.g. /var/lib/podrun/containerd
	RunDir string // e.g. /run/podrun
}

// Address is the socket of the private containerd.
func (p Private) Address() string { return filepath.Join(p.RunDir, "containerd", "containerd.sock") }

func (p Private) config() string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = %q
`, filepath.Join(p.Root, "root"), filepath.Join(p.RunDir, "containerd", "state"), p.Address())
}

// Answers reports whether a containerd answers at address within timeout.
func Answers(ctx context.Context, address string, timeout time.Duration) bool {
	if _, err := os.Stat(address); err != nil {
		return false
	}
	client, err := containerd.New(address, containerd.WithTimeout(timeout))
	if err != nil {
		return false
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = client.Version(ctx)
	return err == nil
}

// Ensure returns the address of the private containerd, starting it
// (detached, in its own session, so that pods outlive podrun) when it is not
// running; started tells whether it did. Errors wrap engine.ErrUnavailable.
func (p Private) Ensure(ctx context.Context) (addr string, started bool, err error) {
	addr = p.Address()
	if Answers(ctx, addr, time.Second) {
		return addr, false, nil
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return "", false, fmt.Errorf("%w: no containerd answers and no containerd binary is installed (apt-get install containerd runc)", engine.ErrUnavailable)
	}
	for _, d := range []string{p.Root, filepath.Dir(addr)} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return "", false, fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
		}
	}
	conf := filepath.Join(p.Root, "config.toml")
	if err := atomicfile.WriteFile(conf, []byte(p.config()), 0o644); err != nil {
		return "", false, fmt.Errorf("%w: writing %s: %w", engine.ErrUnavailable, conf, err)
	}
	logf, err := os.OpenFile(filepath.Join(p.Root, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config", conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", false, fmt.Errorf("%w: starting %s: %w", engine.ErrUnavailable, bin, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The pid file is how it is found to be stopped: a containerd without
	// one is not left running.
	pidFile := filepath.Join(filepath.Dir(addr), "containerd.pid")
	if err := atomicfile.WriteFile(pidFile, []byte(fmt.Sprint(pid)), 0o644); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		return "", false, fmt.Errorf("%w: writing %s: %w", engine.ErrUnavailable, pidFile, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return "", false, fmt.Errorf("%w: private containerd exited at start (%v); see %s", engine.ErrUnavailable, err, logf.Name())
		case <-time.After(100 * time.Millisecond):
		}
		if Answers(ctx, addr, time.Second) {
			return addr, true, nil
		}
	}
	return "", false, fmt.Errorf("%w: private containerd (pid %d) did not answer within 20s; see %s", engine.ErrUnavailable, pid, logf.Name())
}
