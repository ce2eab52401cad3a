// Package kept is the node's kept copy of what the API server told it to
// run: each pod bound to the node as the API gave it, the ConfigMaps and
// Secrets it names and its service-account tokens, with the cluster they
// came from, so that after a reboot with the API server unreachable every
// pod comes back as it was. The API's view wins whenever it answers: the
// copy only ever stands in for it (docs/node.md, "What is kept on the
// device, and when the API wins").
//
// One file per pod, <dir>/pods/<UID>.json, root's alone (the directory
// 0700, the files 0600), written atomically and durably (a temporary file
// in the same directory synced, renamed over the old one, the directory
// synced), checksummed, read bounded. A file that is damaged, of a newer
// format, not trusted or of another cluster is never run: it is reported
// with its path and moved to <dir>/aside/, never deleted. One of another
// cluster is moved only once this cluster's API server answered (Save,
// Reconcile): until then the kubeconfig may be what is wrong (another
// server, another CA), and the device's kept state is left as it is.
package kept

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/manifest"
)

// Pod is one pod the API bound to the node, with what it was given.
type Pod struct {
	// Pod is the pod as the API gave it (UID, resourceVersion, spec,
	// metadata.deletionTimestamp when it is being deleted, and the status
	// the node last wrote), but its managedFields.
	Pod *corev1.Pod `json:"pod"`
	// ConfigMaps and Secrets are the objects of the pod's namespace it
	// names (volumes, env, envFrom, imagePullSecrets), by name, as fetched.
	ConfigMaps map[string]*corev1.ConfigMap `json:"configMaps,omitempty"`
	Secrets    map[string]*corev1.Secret    `json:"secrets,omitempty"`
	// Tokens are its projected service-account tokens as the API issued
	// them (status.token, status.expirationTimestamp), by a key of the
	// caller's (e.g. "volume/path"). Kept as they are, expired or not.
	Tokens map[string]*authenticationv1.TokenRequest `json:"tokens,omitempty"`
	// Saved is when it was kept (set by Save).
	Saved time.Time `json:"saved"`
}

// Key is the pod's namespace/name.
func (p Pod) Key() string { return p.Pod.Namespace + "/" + p.Pod.Name }

// New is pod as the API gave it with the ConfigMaps and Secrets read for
// it (objects: those of a manifest.Set, as the API source reads them), to
// be kept (Save).
func New(pod *corev1.Pod, objects *manifest.Set) Pod {
	p := Pod{Pod: pod}
	if objects == nil {
		return p
	}
	for _, cm := range objects.ConfigMaps {
		if p.ConfigMaps == nil {
			p.ConfigMaps = map[string]*corev1.ConfigMap{}
		}
		p.ConfigMaps[cm.Name] = cm
	}
	for _, s := range objects.Secrets {
		if p.Secrets == nil {
			p.Secrets = map[string]*corev1.Secret{}
		}
		p.Secrets[s.Name] = s
	}
	return p
}

// Objects are the ConfigMaps and Secrets kept with the pod, sorted by
// name, as a manifest.Set: what the API source resolves the pod against
// (manifest.Resolve) when they cannot be read from the API server.
func (p Pod) Objects() *manifest.Set {
	set := &manifest.Set{}
	for _, name := range slices.Sorted(maps.Keys(p.ConfigMaps)) {
		set.ConfigMaps = append(set.ConfigMaps, p.ConfigMaps[name])
	}
	for _, name := range slices.Sorted(maps.Keys(p.Secrets)) {
		set.Secrets = append(set.Secrets, p.Secrets[name])
	}
	return set
}

// DefaultMaxFileSize bounds one kept pod's file: a pod and the objects it
// names in JSON, each at most manifest.MaxObjectSize (1.5 MiB, what etcd
// stores): ten of the largest, or any number of usual ones.
const DefaultMaxFileSize = 16 << 20

// Options are a Store's.
type Options struct {
	// Dir holds the kept state (Dir(root) under podrun's state directory).
	Dir string
	// Cluster is the cluster the node is of now (ClusterOf): only its
	// pods are run.
	Cluster Cluster
	// MaxPods bounds the pods kept and loaded (the node's --max-pods;
	// admission.DefaultMaxPods when 0).
	MaxPods int
	// MaxFileSize bounds one pod's file (DefaultMaxFileSize when 0).
	MaxFileSize int64
	// Clock stamps Pod.Saved and the names of files kept aside.
	Clock clock.PassiveClock
}

// Dir is the kept state's directory under podrun's state directory
// (--root).
func Dir(root string) string { return filepath.Join(root, "kept") }

// ClusterOf is the Cluster of a kubeconfig's client configuration (its
// server and CA bundle, read from its file when not inline) for the node
// named node.
func ClusterOf(rc *rest.Config, node string) (Cluster, error) {
	ca := rc.CAData
	if len(ca) == 0 && rc.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			return Cluster{}, fmt.Errorf("the cluster's CA: %w", err)
		}
	}
	return NewCluster(rc.Host, ca, node), nil
}

// Problem is a kept file that is not run: where it is, why, and where it
// was kept aside ("" when it stays where it is).
type Problem struct {
	Path  string
	Aside string
	Err   error
}

func (p *Problem) Error() string {
	msg := fmt.Sprintf("kept state %s %v", p.Path, p.Err)
	if p.Aside != "" {
		msg += "; kept aside as " + p.Aside
	}
	return msg
}

func (p *Problem) Unwrap() error { return p.Err }

// Store is the node's kept state. Its methods are safe for concurrent use;
// one process at a time uses a directory (the daemon's lock).
type Store struct {
	o  Options
	fs *dirs
	mu sync.Mutex
	// sums are the essences (essence) of the pods kept, by UID: a Save
	// that changes none of it writes nothing. nil until the directory
	// was first read (load).
	sums map[types.UID][32]byte
	// pending are the problems of a read that Save or Reconcile made
	// before any Load, for the next Load to return.
	pending []*Problem
	// others are the files of another cluster a read left where they
	// are, by name, until the API server proves the kubeconfig's cluster
	// (prove); proven: it did, and such files are set aside when read.
	others map[string]*refusal
	proven bool
	// settled are the problems of the files prove set aside, for the
	// next Reconcile to return.
	settled []*Problem
}

// Open is the Store of o.Dir, made (root's alone) when missing.
func Open(o Options) (*Store, error) {
	if o.MaxPods <= 0 {
		o.MaxPods = admission.DefaultMaxPods
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	dir, err := filepath.Abs(o.Dir) // the paths in messages are whole
	if err != nil {
		return nil, fmt.Errorf("kept state: %w", err)
	}
	fs, err := makeDirs(dir)
	if err != nil {
		return nil, fmt.Errorf("kept state: %w", err)
	}
	return &Store{o: o, fs: fs}, nil
}

// ErrTooMany is a pod not kept because the node keeps MaxPods already.
var ErrTooMany = errors.New("the node keeps as many pods as it may run")

// Save keeps p (replacing what was kept of its UID): called on every
// change the API source sees of a pod bound to the node, its objects or
// tokens. A change of its status alone (conditions, container statuses,
// resourceVersion) writes nothing: only the phase is worth a write. A pod
// whose file would be over MaxFileSize, or a new pod beyond MaxPods, is
// refused and nothing changes. Before any Load, the directory is read
// first as Load reads it (its problems kept for the next Load), so that
// nothing of another cluster is overwritten. A pod to keep came from the
// API server: its cluster is proven (prove).
func (s *Store) Save(p Pod) error {
	if p.Pod == nil {
		return errors.New("keeping a pod: no pod")
	}
	name, err := fileName(p.Pod.UID)
	if err != nil {
		return fmt.Errorf("keeping pod %s: %w", p.Key(), err)
	}
	sum, err := essence(p)
	if err != nil {
		return fmt.Errorf("keeping pod %s: %w", p.Key(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loaded(); err != nil {
		return fmt.Errorf("keeping pod %s: %w", p.Key(), err)
	}
	s.prove()
	old, ok := s.sums[p.Pod.UID]
	if ok && old == sum {
		return nil
	}
	if !ok && len(s.sums) >= s.o.MaxPods {
		return fmt.Errorf("keeping pod %s: %w (%d, its max-pods)", p.Key(), ErrTooMany, s.o.MaxPods)
	}
	p.Saved = s.o.Clock.Now().UTC()
	if p.Pod.ManagedFields != nil { // the API's bookkeeping: nothing a reboot needs
		p.Pod = p.Pod.DeepCopy()
		p.Pod.ManagedFields = nil
	}
	data, err := encode(s.o.Cluster, p)
	if err != nil {
		return fmt.Errorf("keeping pod %s: %w", p.Key(), err)
	}
	if int64(len(data)) > s.o.MaxFileSize {
		return fmt.Errorf("keeping pod %s: its kept copy (%d bytes with its objects) is larger than the limit of %d bytes: it would not come back after a reboot without the API server", p.Key(), len(data), s.o.MaxFileSize)
	}
	if err := s.fs.write(name, data); err != nil {
		return fmt.Errorf("keeping pod %s: %w", p.Key(), err)
	}
	s.sums[p.Pod.UID] = sum
	return nil
}

// Remove forgets the pod of uid: called once the API deleted it and the
// node tore it down. Nothing kept is success.
func (s *Store) Remove(uid types.UID) error {
	name, err := fileName(uid)
	if err != nil {
		return fmt.Errorf("forgetting pod %s: %w", uid, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fs.remove(name); err != nil {
		return fmt.Errorf("forgetting pod %s: %w", uid, err)
	}
	delete(s.sums, uid)
	return nil
}

// Reconcile is the API's view winning: given the full list of the pods
// bound to the node from a successful re-list, it forgets every kept pod
// that list does not have (deleted while the node was away), and returns
// their UIDs. The pods of the list are kept by Save as the source sees
// them. The list proves the kubeconfig's cluster: the files of another
// cluster a Load left in place are set aside (prove), and aside are the
// problems that say so (once each).
func (s *Store) Reconcile(live []*corev1.Pod) (removed []types.UID, aside []*Problem, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Files of another cluster or damaged are set aside first, never
	// forgotten with the pods the API no longer has.
	if err := s.loaded(); err != nil {
		return nil, nil, err
	}
	s.prove()
	aside, s.settled = s.settled, nil
	names, _, err := s.fs.list(s.maxEntries())
	if err != nil {
		return nil, aside, fmt.Errorf("kept state: %w", err)
	}
	var kept []types.UID
	for _, name := range names {
		if uid := uidOf(name); uid != "" {
			kept = append(kept, uid)
		}
	}
	var errs []error
	for _, uid := range stale(kept, live) {
		name, _ := fileName(uid)
		if err := s.fs.remove(name); err != nil {
			errs = append(errs, fmt.Errorf("forgetting pod %s: %w", uid, err))
			continue
		}
		delete(s.sums, uid)
		removed = append(removed, uid)
	}
	return removed, aside, errors.Join(errs...)
}

// prove is the kubeconfig's cluster answering (the lock held): the files
// of another cluster left in place are set aside now, their problems
// kept for the next Reconcile, and those read later are set aside at
// once.
func (s *Store) prove() {
	s.proven = true
	for _, name := range slices.Sorted(maps.Keys(s.others)) {
		s.settled = append(s.settled, s.setAside(name, s.others[name]))
	}
	s.others = nil
}

// Load is the pods kept, sorted by namespace/name, to be run when the API
// server cannot answer. A leftover temporary file (a crash before its
// rename) is removed. Each file that is not run is a Problem: damaged, of
// a newer format, not trusted or of another cluster, it is moved to
// aside/ (one of another cluster only once the cluster is proven: Save,
// Reconcile; until then it stays where it is, and says so); a second copy
// of a namespace/name (the older) or one beyond MaxPods stays where it is. The error is for the store as a whole (its
// directory not trusted: nothing is read, nothing moved). A pod with
// metadata.deletionTimestamp was being deleted: it is returned, not to be
// started again.
func (s *Store) Load() ([]Pod, []*Problem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pods, problems, err := s.load()
	problems = append(s.pending, problems...)
	s.pending = nil
	return pods, problems, err
}

// loaded reads the directory (load) unless it was read already, keeping
// the problems for the next Load.
func (s *Store) loaded() error {
	if s.sums != nil {
		return nil
	}
	_, problems, err := s.load()
	s.pending = append(s.pending, problems...)
	return err
}

// load is Load, the lock held.
func (s *Store) load() ([]Pod, []*Problem, error) {
	names, more, err := s.fs.list(s.maxEntries())
	if err != nil {
		return nil, nil, fmt.Errorf("kept state: %w", err)
	}
	var problems []*Problem
	if more {
		problems = append(problems, &Problem{Path: s.fs.pods, Err: fmt.Errorf("holds more than %d entries: the rest are not read", s.maxEntries())})
	}
	var pods []Pod
	s.sums = map[types.UID][32]byte{}
	s.others = nil
	for _, name := range names {
		if isTemp(name) {
			_ = s.fs.remove(name) // a crash before its rename; the old file, if any, stands
			continue
		}
		uid := uidOf(name)
		if uid == "" {
			problems = append(problems, &Problem{Path: s.fs.path(name), Err: errors.New("is not a kept pod's file (UID.json): not read")})
			continue
		}
		if len(pods) == s.o.MaxPods {
			s.sums[uid] = [32]byte{} // still kept: it counts against MaxPods
			problems = append(problems, &Problem{Path: s.fs.path(name), Err: fmt.Errorf("is beyond the node's %d pods (max-pods): not run", s.o.MaxPods)})
			continue
		}
		p, bad := s.read(name, uid)
		if bad != nil && bad.reason == reasonOtherCluster && !s.proven {
			if s.others == nil {
				s.others = map[string]*refusal{}
			}
			s.others[name] = bad
			problems = append(problems, &Problem{Path: s.fs.path(name), Err: errors.New(bad.msg + ": not run; left in place until this cluster's API server answers (the kubeconfig may be what is wrong), then set aside")})
			continue
		}
		if bad != nil {
			problems = append(problems, s.setAside(name, bad))
			continue
		}
		pods = append(pods, p)
		if sum, err := essence(p); err == nil {
			s.sums[uid] = sum
		}
	}
	pods, superseded := newest(pods)
	for _, p := range superseded {
		name, _ := fileName(p.Pod.UID)
		problems = append(problems, &Problem{Path: s.fs.path(name), Err: fmt.Errorf("is pod %s, kept again since under another UID: not run", p.Key())})
	}
	return pods, problems, nil
}

// read is the pod kept in file name, or why it is not to be run.
func (s *Store) read(name string, uid types.UID) (Pod, *refusal) {
	data, err := s.fs.read(name, s.o.MaxFileSize)
	var untrusted *untrustedError
	switch {
	case errors.As(err, &untrusted):
		return Pod{}, &refusal{reasonUntrusted, fmt.Sprintf("is not trusted (%v)", untrusted.err)}
	case err != nil:
		return Pod{}, &refusal{reasonDamaged, fmt.Sprintf("is damaged (%v)", err)}
	}
	return decode(data, uid, s.o.Cluster)
}

// setAside moves the file name refused for bad to aside/, and is the
// Problem that says so.
func (s *Store) setAside(name string, bad *refusal) *Problem {
	p := &Problem{Path: s.fs.path(name), Err: errors.New(bad.msg + ": not run")}
	to, err := s.fs.setAside(name, asideName(name, bad.reason, s.o.Clock.Now()))
	if err != nil {
		p.Err = fmt.Errorf("%s: not run; keeping it aside: %w", bad.msg, err)
		return p
	}
	p.Aside = to
	return p
}

// maxEntries bounds the entries of the pods directory read: the pods,
// their temporary files and some stray ones.
func (s *Store) maxEntries() int { return 2*s.o.MaxPods + 64 }
