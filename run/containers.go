// The container steps of Up: "init/NAME" (runInit), "sidecar/NAME"
// (startSidecar) and "container/NAMES" (startApps, with prepareApps), and
// how a container is created and started, its environment resolved at each
// start (envSources); how it ends is kept in exits.go, the shim it runs in
// chosen in shims.go.

package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/status"
	"github.com/podrun/podrun/supervisor"
	"github.com/podrun/podrun/volumes"
)

// startContainer creates (unless prepareApps did) and starts attempt
// `restart` of container c.
func (r *podRun) startContainer(ctx context.Context, c *corev1.Container, kind string, restart int) (string, error) {
	id := ContainerID(r.pod.UID, c.Name, restart)
	s := r.takePrepared(id)
	if s == nil {
		var err error
		if s, err = r.createContainer(ctx, c, kind, restart); err != nil {
			return "", err
		}
	}
	logPath := r.logPath(c.Name, restart)
	if _, err := r.h.engine.Start(ctx, id, logPath); err != nil {
		if serr := (*engine.StartError)(nil); errors.As(err, &serr) {
			r.recordStartError(ctx, id, serr)
		}
		return "", withLogTail(err, logPath)
	}
	// The container runs: failing to label it must not count as a failed
	// start. Its identity is known now (Create added the image's groups).
	started := map[string]string{labels.StartedAt: r.h.clock.Now().UTC().Format(time.RFC3339Nano)}
	if s.Process != nil {
		started[labels.User] = status.UserLabel(s.Process.User.UID, s.Process.User.GID, s.Process.User.AdditionalGids)
	}
	if err := r.h.engine.SetLabels(ctx, id, started); err != nil {
		r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("recording the start of %s: %v", id, err)})
	}
	return id, nil
}

// recordStartError records on attempt id that it could not start, as
// containerd's CRI records it: exited with code 128 and reason StartError,
// never started (its start time the zero of Unix time), the error its
// message.
func (r *podRun) recordStartError(ctx context.Context, id string, serr *engine.StartError) {
	l := map[string]string{
		labels.ExitCode:   strconv.Itoa(status.StartErrorCode),
		labels.Reason:     status.ReasonStartError,
		labels.Message:    labels.Clip(serr.Error()),
		labels.StartedAt:  time.Unix(0, 0).UTC().Format(time.RFC3339Nano),
		labels.FinishedAt: r.h.clock.Now().UTC().Format(time.RFC3339Nano),
	}
	if err := r.h.engine.SetLabels(context.WithoutCancel(ctx), id, l); err != nil {
		r.h.report(Event{Pod: r.key, Msg: fmt.Sprintf("recording the failed start of %s: %v", id, err)})
	}
}

// createContainer creates attempt `restart` of container c and returns
// its spec.
func (r *podRun) createContainer(ctx context.Context, c *corev1.Container, kind string, restart int) (*specs.Spec, error) {
	id := ContainerID(r.pod.UID, c.Name, restart)
	img := r.images[c.Image]
	sources, err := r.envSources(c)
	if err != nil {
		return nil, err
	}
	// The kubelet's GenerateRunContainerOptions: its failures (a ConfigMap
	// or key gone, a subPath that escapes) leave the container Waiting in
	// CreateContainerConfigError, like spec's runAsNonRoot check.
	env, err := spec.ResolveEnv(c, sources)
	if err != nil {
		return nil, &spec.ConfigError{Container: c.Name, Msg: err.Error()}
	}
	mounts, err := r.vols.Mounts(c, spec.VarMap(env))
	if err != nil {
		return nil, &spec.ConfigError{Container: c.Name, Msg: err.Error()}
	}
	termLog := r.layout.TerminationLog(c.Name, id)
	if err := os.MkdirAll(filepath.Dir(termLog), 0o750); err != nil {
		return nil, err
	}
	if err := r.h.disk.WriteFile(termLog, nil, 0o666); err != nil {
		return nil, err
	}
	limits, oomScoreAdj := resources.Container(r.pod.Pod, c, r.h.node())
	ipc, uts := r.sandboxNamespaces()
	s, err := spec.Container(ctx, spec.ContainerInput{
		ID: id, Pod: r.pod.Pod, Container: c, Image: img.Config, Env: env, Mounts: mounts, TerminationLog: termLog,
		Security:  spec.DetectHost(r.h.cfg.Root), // seccomp, AppArmor, <root>/seccomp profiles (spec/security.go)
		Resources: limits, OOMScoreAdj: oomScoreAdj, ShimGroup: shimGroup(r.pod.Pod, c.Name, kind, runtime.NumCPU()),
		Sandbox: spec.Sandbox{
			ID: r.sandboxID, IPC: ipc, UTS: uts, PID: int(r.pausePID), NetNSPath: r.netns, HostNetwork: r.hostNetwork(), Hostname: r.hostname,
			EtcHosts: r.layout.File("etc-hosts"), ResolvConf: r.layout.File("resolv.conf"),
			HostnameFile: r.layout.File("hostname"), Shm: r.layout.Shm(), Cgroup: r.h.podCgroup(r.pod.UID),
		},
	})
	if err != nil {
		return nil, err
	}
	l := r.labels(c.Name, kind, restart, stopSignal(c, img))
	l[labels.ImageID] = imageID(img)
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		l[labels.PostStart] = labels.PostStartRunning // until its supervisor sees the hook through
	}
	if err := r.h.engine.Create(ctx, engine.ContainerSpec{ID: id, Image: img.Ref, Labels: l, Spec: s, ImageGroups: spec.MergeImageGroups(r.pod.Pod),
		Stdin: c.Stdin, StdinOnce: c.StdinOnce}); err != nil {
		return nil, err
	}
	return s, nil
}

// prepareApps creates the first attempts of the app containers while CNI
// ADD runs, when nothing starts before them (no init containers) and
// their environment does not read the downward API (the pod's IPs are not
// known yet): their start then only starts their tasks. A container it
// cannot create is left to its start, which reports why.
func (r *podRun) prepareApps(ctx context.Context) error {
	if len(r.pod.Spec.InitContainers) > 0 {
		return nil
	}
	var wg sync.WaitGroup
	for i := range r.pod.Spec.Containers {
		c := &r.pod.Spec.Containers[i]
		if usesDownward(c) {
			continue
		}
		wg.Go(func() {
			if s, err := r.createContainer(ctx, c, labels.KindApp, 0); err == nil {
				r.prepMu.Lock()
				if r.prepared == nil {
					r.prepared = map[string]*specs.Spec{}
				}
				r.prepared[ContainerID(r.pod.UID, c.Name, 0)] = s
				r.prepMu.Unlock()
			}
		})
	}
	wg.Wait()
	return nil
}

// takePrepared returns the spec of container id if prepareApps created it
// (once).
func (r *podRun) takePrepared(id string) *specs.Spec {
	r.prepMu.Lock()
	defer r.prepMu.Unlock()
	s := r.prepared[id]
	delete(r.prepared, id)
	return s
}

// undoPrepared removes the app containers prepareApps created and nothing
// started.
func (r *podRun) undoPrepared(ctx context.Context) error {
	var undo []func(context.Context) error
	for i := range r.pod.Spec.Containers {
		if id := ContainerID(r.pod.UID, r.pod.Spec.Containers[i].Name, 0); r.takePrepared(id) != nil {
			undo = append(undo, r.undoContainer(r.pod.Spec.Containers[i].Name))
		}
	}
	return inOrder(undo...)(ctx)
}

// imageID is an image's reference by digest, as the kubelet reports imageID.
func imageID(img engine.Image) string {
	repo, _, _ := strings.Cut(img.Ref, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return repo + "@" + img.Digest
}

// runInit runs init container c to completion in the pod's supervisor,
// which restarts a failed one with the kubelet's back-off unless the policy
// is Never. A final failure is an *ExitError, or its failure to start
// (left to its restarts: retryStarts); when ctx ends first, the
// error says how its last attempt ended.
func (r *podRun) runInit(c *corev1.Container) func(context.Context) error {
	return func(ctx context.Context) error {
		l := r.w.Start(c, supervisor.RoleInit, 0, nil)
		err := r.w.WaitFor(ctx, func() (bool, error) {
			st := l.State()
			if err := r.startFailure(st); err != nil {
				return false, err
			}
			return st.Done, nil
		})
		st := l.State()
		exit := &ExitError{Container: c.Name, Code: st.LastCode, OOMKilled: st.OOMKilled, Tail: readTail(r.logPath(c.Name, st.Restarts))}
		switch {
		case err != nil && st.StartErr != nil && ctx.Err() != nil: // left to its restarts (retryStarts)
			return fmt.Errorf("init container %q could not start: %w; gave up: %w", c.Name, st.StartErr, err)
		case err != nil && st.Exited && ctx.Err() != nil:
			return fmt.Errorf("init %w; gave up: %w", exit, err)
		case err != nil:
			return err
		case st.ExitCode != 0 && st.StartErr != nil:
			r.final = r.finalStatus(ctx)
			return fmt.Errorf("init container %q could not start: %w", c.Name, st.StartErr)
		case st.ExitCode != 0:
			exit.Code = st.ExitCode
			r.final = r.finalStatus(ctx)
			return fmt.Errorf("init %w", exit)
		}
		return nil
	}
}

// finalStatus is the status of a pod whose init container failed for good
// under restartPolicy Never, taken before its steps are undone: the
// kubelet keeps such a pod Failed, its init containers' states shown. Nil
// without keepFailed, under another policy, or when it cannot be listed.
func (r *podRun) finalStatus(ctx context.Context) *corev1.PodStatus {
	if !r.keepFailed || r.pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		return nil
	}
	p, err := r.h.PodOf(ctx, r.key, r.pod.UID)
	if err != nil || p == nil || p.Pod.Status.Phase != corev1.PodFailed {
		return nil
	}
	return p.Pod.Status.DeepCopy()
}

// startFailure is the failure to start that fails a step waiting for a
// container in state st: none for one made but not started when such a
// container is left to its restarts (retryStarts).
func (r *podRun) startFailure(st supervisor.State) error {
	err := st.Failed()
	if serr := (*engine.StartError)(nil); r.retryStarts && errors.As(err, &serr) {
		return nil
	}
	return err
}

// startApps starts supervising the app containers and waits until they
// have started (postStart done), or failed to. Their tasks start one after
// another in spec order, each once the one before has started or failed to
// (its postStart hook returned), as the kubelet's SyncPod starts them: a
// container may rely on what the one before it made at its start.
func (r *podRun) startApps(cs []*corev1.Container) func(context.Context) error {
	return func(ctx context.Context) error {
		loops := make([]*supervisor.Loop, 0, len(cs))
		for _, c := range cs {
			l := r.w.Start(c, supervisor.RoleApp, 0, nil)
			loops = append(loops, l)
			err := r.w.WaitFor(ctx, func() (bool, error) {
				st := l.State()
				if err := r.startFailure(st); err != nil {
					return false, err
				}
				return st.Tried || st.Done, nil
			})
			if err != nil {
				return err
			}
		}
		return r.w.WaitFor(ctx, func() (bool, error) {
			all := true
			for _, l := range loops {
				st := l.State()
				if err := r.startFailure(st); err != nil {
					return false, err
				}
				all = all && (st.RanOnce || st.Done || st.Failed() != nil)
			}
			return all, nil
		})
	}
}

// startSidecar starts a native sidecar and waits until it has started (its
// startup probe passed), as the next init container does.
func (r *podRun) startSidecar(c *corev1.Container) func(context.Context) error {
	return func(ctx context.Context) error {
		l := r.w.Start(c, supervisor.RoleSidecar, 0, nil)
		err := r.w.WaitFor(ctx, func() (bool, error) {
			st := l.State()
			if err := r.startFailure(st); err != nil {
				return false, err
			}
			return st.Started, nil
		})
		if err != nil && ctx.Err() != nil {
			return r.notReady(err, []*supervisor.Loop{l})
		}
		return err
	}
}

// envSources returns what the env valueFrom and envFrom of container c
// read. It is called at each start of the container, as the kubelet resolves
// the environment at each start: the pod's IPs are known by then
// (containers start after CNI), and the node's facts are read afresh — only
// when c's env asks for them (fieldRef, resourceFieldRef), as most
// containers' do not.
func (r *podRun) envSources(c *corev1.Container) (spec.EnvSources, error) {
	info := downward.Info{Pod: r.pod.Pod}
	if usesDownward(c) {
		info.PodIPs = r.state.PodIPs // known once the network is up (prepareApps skips c before)
		node, err := downward.NodeAllocatable(r.h.cfg.Root)
		if err != nil {
			return spec.EnvSources{}, err
		}
		if info.NodeName, err = downward.NodeName(); err != nil {
			return spec.EnvSources{}, err
		}
		info.Node = node
		if ips := r.h.hostIPs(); len(ips) > 0 {
			info.HostIP = ips[0].String() // as list.go reports status.hostIP
		}
	}
	r.objMu.Lock()
	defer r.objMu.Unlock()
	return spec.EnvSources{ConfigMaps: r.pod.ConfigMaps, Secrets: r.pod.Secrets, Downward: info, EnvFile: r.envFile}, nil
}

// envFile reads an env file an earlier container wrote into one of the
// pod's emptyDir volumes (fileKeyRef), inside the volume by descriptor.
func (r *podRun) envFile(volume, path string) (map[string]string, error) {
	dir, ok := r.vols.Paths[volume]
	if !ok {
		return nil, fmt.Errorf("no volume %q", volume)
	}
	return volumes.ReadEnvFile(dir, path)
}

// usesDownward reports whether c's env reads the downward API.
func usesDownward(c *corev1.Container) bool {
	return slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.ValueFrom != nil && (e.ValueFrom.FieldRef != nil || e.ValueFrom.ResourceFieldRef != nil)
	})
}

// setObjects replaces the ConfigMaps and Secrets the pod's next container
// starts read, as a restarted container on Kubernetes reads the objects of
// the time.
func (r *podRun) setObjects(from *manifest.Pod) {
	r.objMu.Lock()
	defer r.objMu.Unlock()
	r.pod.ConfigMaps, r.pod.Secrets = from.ConfigMaps, from.Secrets
}
