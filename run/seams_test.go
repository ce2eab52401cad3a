package run

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/volumes"
)

// fakeMachine stands in for everything outside containerd that a Host
// changes: network namespaces, CNI attachments, cgroups and pod
// directories. Every side effect, the engine's calls included (fake.Engine's
// OnCall), goes into one log in order, so tests can check that an undo
// reverses exactly what was done; fail and before inject a failure or a
// cancellation at any of them.
type fakeMachine struct {
	mu       sync.Mutex
	log      []string
	netns    map[string]bool
	pins     map[string]uint64 // pinned namespaces, by path
	pinSeq   uint64
	cgroups  map[string]bool
	oomKills map[string]uint64     // the OOM-kill counter of a cgroup
	attached map[string]bool       // by sandbox container id
	dirs     map[string]bool       // pod directories, by UID
	files    map[string]string     // the host's files HostFile reads, by path
	read     []string              // the paths HostFile was asked for
	fail     map[string]int        // op prefix -> how many matching ops succeed before one fails
	before   func(op string) error // called before each op, unlocked (cancel a context here); an error fails the op
}

func newFakeMachine() *fakeMachine {
	return &fakeMachine{netns: map[string]bool{}, pins: map[string]uint64{}, cgroups: map[string]bool{}, oomKills: map[string]uint64{}, attached: map[string]bool{}, dirs: map[string]bool{}, fail: map[string]int{},
		files: map[string]string{hostsPath: "127.0.0.1\tlocalhost\n", sandbox.HostResolvConf: "nameserver 192.0.2.53\nsearch example.test\n"}}
}

// hostFile reads the fake host's file at path (Deps.HostFile); one that
// is not there is os.ErrNotExist, as os.ReadFile says it.
func (m *fakeMachine) hostFile(path string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.read = append(m.read, path)
	data, ok := m.files[path]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	return []byte(data), nil
}

// errInjected is the failure tests inject.
var errInjected = errors.New("injected failure")

// failOn makes the op number n (from 0) whose log line starts with prefix
// fail with errInjected.
func (m *fakeMachine) failOn(prefix string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail[prefix] = n
}

// op records op and returns the failure injected for it, if any.
func (m *fakeMachine) op(op string) error {
	m.mu.Lock()
	before := m.before
	m.mu.Unlock()
	if before != nil {
		if err := before(op); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recordLocked(op)
}

func (m *fakeMachine) recordLocked(op string) error {
	m.log = append(m.log, op)
	for prefix, n := range m.fail {
		if !strings.HasPrefix(op, prefix) {
			continue
		}
		if n > 0 {
			m.fail[prefix] = n - 1
			continue
		}
		delete(m.fail, prefix)
		return errInjected
	}
	return nil
}

// engineCall is fake.Engine's OnCall: engine calls go into the same log
// (the engine is locked here, so before is not called for them; the
// engine's own Fail and the context checks apply).
func (m *fakeMachine) engineCall(call string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, "engine."+call)
}

// Log returns the ops so far.
func (m *fakeMachine) Log() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.log)
}

// left lists what exists on the machine.
func (m *fakeMachine) left() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, set := range []struct {
		kind string
		m    map[string]bool
	}{{"netns", m.netns}, {"cgroup", m.cgroups}, {"cni", m.attached}, {"dir", m.dirs}} {
		for k := range set.m {
			out = append(out, set.kind+" "+k)
		}
	}
	for k := range m.pins {
		out = append(out, "pin "+k)
	}
	slices.Sort(out)
	return out
}

type fakeNetNS struct{ m *fakeMachine }

func (f fakeNetNS) Create(name string) (string, error) {
	if err := f.m.op("netns.create " + name); err != nil {
		return "", err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.m.netns[name] = true
	return sandbox.NetNSPath(name), nil
}

func (f fakeNetNS) Remove(name string) error {
	if err := f.m.op("netns.remove " + name); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	delete(f.m.netns, name)
	return nil
}

type fakePins struct{ m *fakeMachine }

func (f fakePins) Pin(p sandbox.Pins, _ string) error {
	if err := f.m.op("pins.pin " + p.Identity()); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	for _, path := range []string{p.IPC, p.UTS} {
		if path != "" {
			f.m.pinSeq++
			f.m.pins[path] = f.m.pinSeq
		}
	}
	return nil
}

func (f fakePins) Unpin(p sandbox.Pins) error {
	if err := f.m.op("pins.unpin " + p.Identity()); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	delete(f.m.pins, p.IPC)
	delete(f.m.pins, p.UTS)
	return nil
}

func (f fakePins) ID(path string) (uint64, bool) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	id, ok := f.m.pins[path]
	return id, ok
}

type fakeCgroups struct{ m *fakeMachine }

func (f fakeCgroups) Create(path string, _ *specs.LinuxResources) error {
	if err := f.m.op("cgroup.create " + path); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.m.cgroups[path] = true
	return nil
}

func (f fakeCgroups) Remove(path string) error {
	if err := f.m.op("cgroup.remove " + path); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	delete(f.m.cgroups, path)
	return nil
}

// OOMKills reads what a test set; a read is no change, so it is not logged.
func (f fakeCgroups) OOMKills(path string) (uint64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return f.m.oomKills[path], nil
}

// fakeNetwork attaches by recording; like a CNI plugin it fails when the
// context is done and treats a DEL of what is not attached as success.
type fakeNetwork struct{ m *fakeMachine }

func (f fakeNetwork) Config() ([]byte, error) {
	return []byte(`{"cniVersion":"1.0.0","name":"fake","plugins":[{"type":"fake"}]}`), nil
}

func (f fakeNetwork) Add(ctx context.Context, _ []byte, a sandbox.Attachment) ([]net.IP, error) {
	err := f.m.op("cni.add " + a.ContainerID)
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.m.attached[a.ContainerID] = true // half-made until DEL, even when ADD fails
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return []net.IP{net.ParseIP("10.88.0.2")}, nil
}

func (f fakeNetwork) Del(ctx context.Context, _ []byte, a sandbox.Attachment) error {
	if err := f.m.op("cni.del " + a.ContainerID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	delete(f.m.attached, a.ContainerID)
	return nil
}

// fakeDisk keeps pod directories as plain directories (the root is a
// t.TempDir): no tmpfs, no bind mounts.
type fakeDisk struct{ m *fakeMachine }

func (f fakeDisk) Make(l volumes.Layout, record string, data []byte) error {
	if err := f.m.op("disk.make " + l.UID); err != nil {
		return err
	}
	f.m.mu.Lock()
	f.m.dirs[l.UID] = true
	f.m.mu.Unlock()
	if err := os.MkdirAll(l.Pod(), 0o750); err != nil {
		return err
	}
	return os.WriteFile(l.File(record), data, 0o640)
}

func (f fakeDisk) Create(l volumes.Layout) error {
	if err := f.m.op("disk.create " + l.UID); err != nil {
		return err
	}
	if _, err := os.Lstat(l.Pod()); err != nil {
		return err // made by Make only
	}
	return os.MkdirAll(l.Shm(), 0o750)
}

func (f fakeDisk) Remove(l volumes.Layout) error {
	if err := f.m.op("disk.remove " + l.UID); err != nil {
		return err
	}
	f.m.mu.Lock()
	delete(f.m.dirs, l.UID)
	f.m.mu.Unlock()
	return os.RemoveAll(l.Pod())
}

func (f fakeDisk) Setup(l volumes.Layout, pod *corev1.Pod, _ *volumes.Config, _ volumes.Options) (*volumes.Prepared, error) {
	if err := f.m.op("disk.setup " + l.UID); err != nil {
		return nil, err
	}
	return fakePrepared(l, pod), nil
}

// fakePrepared has every volume of pod as an emptyDir of l.
func fakePrepared(l volumes.Layout, pod *corev1.Pod) *volumes.Prepared {
	p := &volumes.Prepared{Paths: map[string]string{}}
	for _, v := range pod.Spec.Volumes {
		p.Paths[v.Name] = l.EmptyDir(v.Name)
	}
	return p
}

func (f fakeDisk) Locate(l volumes.Layout, pod *corev1.Pod, o volumes.Options) (*volumes.Prepared, error) {
	if err := f.m.op("disk.locate " + l.UID); err != nil {
		return nil, err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if !f.m.dirs[l.UID] {
		return nil, fmt.Errorf("pod directory of %s: %w", l.UID, os.ErrNotExist)
	}
	return fakePrepared(l, pod), nil
}

func (f fakeDisk) Undo(*volumes.Prepared) error { return f.m.op("disk.undo") }

func (f fakeDisk) WriteFile(path string, data []byte, perm os.FileMode) error {
	if err := f.m.op("disk.write " + filepath.Base(path)); err != nil {
		return err
	}
	return os.WriteFile(path, data, perm)
}

func (f fakeDisk) RemoveFile(path string) error {
	if err := f.m.op("disk.rm " + filepath.Base(path)); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// deps are fakes of every seam on machine m, with engine e, whose calls go
// into m's log unless e has a hook already (set before any call: another
// host's goroutines may be calling e).
func (m *fakeMachine) deps(e *fake.Engine) Deps {
	if e.OnCall == nil {
		e.OnCall = m.engineCall
	}
	return Deps{Engine: e, Network: fakeNetwork{m}, NetNS: fakeNetNS{m}, Pins: fakePins{m}, Cgroups: fakeCgroups{m}, Disk: fakeDisk{m},
		Admission: func() (admission.Node, error) { return roomyNode, nil },
		HostIPs:   func() []net.IP { return []net.IP{fakeHostIP} }, HostFile: m.hostFile}
}

// fakeHostIP is the fake machine's address (status.hostIP).
var fakeHostIP = net.ParseIP("192.0.2.10")

// roomyNode admits every test pod.
var roomyNode = admission.Node{Name: "node", Allocatable: corev1.ResourceList{
	corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi")}}
