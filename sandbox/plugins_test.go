package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

// fakeProc lays out a /proc of processes under dir/proc, and a CNI bin
// dir with one plugin under dir/bin.
type fakeProc struct {
	t         *testing.T
	proc, bin string
}

func newFakeProc(t *testing.T) fakeProc {
	dir := t.TempDir()
	f := fakeProc{t: t, proc: filepath.Join(dir, "proc"), bin: filepath.Join(dir, "bin")}
	for _, d := range []string{f.proc, f.bin, filepath.Join(dir, "container", "opt", "cni", "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(f.bin, "bridge"), filepath.Join(dir, "container", "opt", "cni", "bin", "bridge")} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Entries that are no process.
	if err := os.Symlink("1", filepath.Join(f.proc, "self")); err != nil {
		t.Fatal(err)
	}
	return f
}

// process makes /proc/pid running exe with real and effective uid, and
// environment env.
func (f fakeProc) process(pid int, exe string, uid int, env ...string) {
	dir := filepath.Join(f.proc, strconv.Itoa(pid))
	if err := os.Mkdir(dir, 0o555); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, "exe")); err != nil {
		f.t.Fatal(err)
	}
	u := strconv.Itoa(uid)
	status := "Name:\tx\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t" + u + "\t" + u + "\t" + u + "\t" + u + "\nGid:\t0\t0\t0\t0\n"
	var environ []byte
	for _, e := range env {
		environ = append(append(environ, e...), 0)
	}
	for name, data := range map[string][]byte{"status": []byte(status), "environ": environ} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o444); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f fakeProc) exit(pid int) {
	if err := os.RemoveAll(filepath.Join(f.proc, strconv.Itoa(pid))); err != nil {
		f.t.Fatal(err)
	}
}

// waitReturns runs p.wait for id and reports whether it returned within d,
// and with what; the wait goes on in the background otherwise (later).
func waitReturns(p plugins, id string, d time.Duration) (returned bool, later <-chan error, err error) {
	done := make(chan error, 1)
	go func() { done <- p.wait(context.Background(), id) }()
	select {
	case err := <-done:
		return true, nil, err
	case <-time.After(d):
		return false, done, nil
	}
}

// TestPluginsOnlyRootsCNIBinaries: DEL waits while a process of root
// running a plugin of the bin dirs has the pod's ADD in its environment,
// and for nobody else with that environment: a non-root process running the
// plugin, a root process running a file of the same name in a container's
// root (another inode), a plugin running DEL, another pod's ADD.
func TestPluginsOnlyRootsCNIBinaries(t *testing.T) {
	f := newFakeProc(t)
	const id = "0123abcd"
	add := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=" + id, "CNI_IFNAME=eth0"}
	plugin := filepath.Join(f.bin, "bridge")
	impostor := filepath.Join(filepath.Dir(f.proc), "container", "opt", "cni", "bin", "bridge")
	f.process(10, plugin, 1000, add...)
	f.process(11, impostor, 0, add...)
	f.process(12, plugin, 0, "CNI_COMMAND=DEL", "CNI_CONTAINERID="+id)
	f.process(13, plugin, 0, "CNI_COMMAND=ADD", "CNI_CONTAINERID="+id+"-other")
	f.process(14, filepath.Join(f.bin, "gone"), 0, add...) // its exe does not resolve: a kernel thread, or gone
	p := plugins{proc: f.proc, binDirs: []string{filepath.Join(filepath.Dir(f.proc), "missing"), f.bin}}
	if returned, _, err := waitReturns(p, id, time.Second); !returned || err != nil {
		t.Fatalf("no plugin of the pod's ADD: returned %v, %v; want at once", returned, err)
	}

	f.process(20, plugin, 0, add...)
	returned, later, err := waitReturns(p, id, 200*time.Millisecond)
	if returned {
		t.Fatalf("returned (%v) while root ran the plugin for the pod's ADD", err)
	}
	f.exit(20)
	select {
	case err := <-later:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Second):
		t.Fatal("still waiting once the plugin exited")
	}

	// A /proc that cannot be listed is an error, not "no plugin".
	p.proc = filepath.Join(filepath.Dir(f.proc), "noproc")
	if returned, _, err := waitReturns(p, id, time.Second); !returned || err == nil {
		t.Errorf("unlistable /proc: returned %v, err %v; want an error", returned, err)
	}
}

// TestPluginsWaitBounded: a plugin of the pod's ADD that never ends
// delays DEL by pluginWait at most, on the injected clock.
func TestPluginsWaitBounded(t *testing.T) {
	f := newFakeProc(t)
	const id = "0123abcd"
	f.process(20, filepath.Join(f.bin, "bridge"), 0, "CNI_COMMAND=ADD", "CNI_CONTAINERID="+id)
	clk := testclock.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	p := plugins{proc: f.proc, binDirs: []string{f.bin}, clock: clk}
	done := make(chan error, 1)
	go func() { done <- p.wait(context.Background(), id) }()
	waiting := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !clk.HasWaiters(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the wait never polled again")
			}
		}
	}
	waiting()
	clk.Step(pluginWait - pluginPoll)
	waiting() // polled at 29.98 s: still waiting
	select {
	case err := <-done:
		t.Fatalf("returned (%v) before pluginWait", err)
	default:
	}
	clk.Step(pluginPoll)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // a hang, not a timing check
		t.Fatal("still waiting after pluginWait")
	}
}

// TestPluginsOnTheRealProc: on this machine's /proc, a program of the bin
// dir (a copy of sleep) running as root with the pod's ADD delays DEL until
// it exits; sleep itself, outside the bin dir, with the same environment,
// does not.
func TestPluginsOnTheRealProc(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a plugin runs as root")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	bin := t.TempDir()
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "bridge"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	id := "realproc-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	env := []string{"CNI_COMMAND=ADD", "CNI_CONTAINERID=" + id, "CNI_IFNAME=eth0"}
	other := exec.Command(sleep, "30")
	other.Env = env
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	// On a clock that never moves, a wait that took sleep for a plugin
	// would never end: one that ends did not wait (however slow /proc is).
	p := plugins{proc: "/proc", binDirs: []string{bin}, clock: testclock.NewFakeClock(time.Now())}
	bins, err := p.executables()
	if err != nil {
		t.Fatal(err)
	}
	// Its environment shows once it has run a moment.
	time.Sleep(50 * time.Millisecond)
	waited := make(chan error, 1)
	go func() { waited <- p.wait(context.Background(), id) }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("sleep outside the bin dir delayed DEL: the wait did not end")
	}
	p.clock = nil // the plugin's own wait below ends when it exits

	plugin := exec.Command(filepath.Join(bin, "bridge"), "1")
	plugin.Env = env
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = plugin.Wait(); close(exited) }()
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ok, err := p.adding(bins, []byte("\x00CNI_CONTAINERID="+id+"\x00")); err != nil || ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin's environment never showed")
		}
	}
	if err := p.wait(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Second):
		t.Error("wait returned while the plugin still ran")
	}
}
