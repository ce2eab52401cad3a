// Package history keeps, for each pod on the node, the last versions of
// it that became Ready: the manifest as applied and the ConfigMaps and
// Secrets it was given, as resolved, so that a version that never gets
// Ready can be replaced by the last one that did (kubectl's ReplicaSet
// history, for a pod on one node). At most Max versions per pod, in one
// file per pod, root-only, written atomically.
package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/podrun/podrun/atomicfile"
	corev1 "k8s.io/api/core/v1"
)

// Max is how many versions of a pod are kept.
const Max = 3

// ChangeCauseAnnotation is kubectl's annotation that `rollout history`
// shows as CHANGE-CAUSE.
const ChangeCauseAnnotation = "kubernetes.io/change-cause"

// Revision is one version of a pod that became Ready.
type Revision struct {
	// Revision numbers the versions of a pod, from 1, as kubectl numbers
	// a Deployment's: a version applied again gets the next number.
	Revision int `json:"revision"`
	// Hash is the manifest's content hash (manifest.Pod.Hash), UID the
	// pod's UID derived from it.
	Hash   string    `json:"hash"`
	UID    string    `json:"uid"`
	Source string    `json:"source"` // the file it came from, or "stdin"
	Ready  time.Time `json:"ready"`  // when it first became Ready
	// Pod is the manifest as applied (defaulted); ConfigMaps, Secrets and
	// PullSecrets what it was given with it.
	Pod         *corev1.Pod                  `json:"pod"`
	ConfigMaps  map[string]*corev1.ConfigMap `json:"configMaps,omitempty"`
	Secrets     map[string]*corev1.Secret    `json:"secrets,omitempty"`
	PullSecrets []*corev1.Secret             `json:"pullSecrets,omitempty"`
}

// ChangeCause is the version's kubernetes.io/change-cause annotation.
func (r Revision) ChangeCause() string {
	if r.Pod == nil {
		return ""
	}
	return r.Pod.Annotations[ChangeCauseAnnotation]
}

// Add is revs (oldest first) with r recorded as the newest version, and
// whether that changed anything: a version already the newest stays as it
// is; one recorded before moves to the end with the next number; the
// oldest go beyond max.
func Add(revs []Revision, r Revision, max int) ([]Revision, bool) {
	if n := len(revs); n > 0 && revs[n-1].Hash == r.Hash {
		return revs, false
	}
	next := 1
	if n := len(revs); n > 0 {
		next = revs[n-1].Revision + 1
	}
	out := slices.DeleteFunc(slices.Clone(revs), func(o Revision) bool { return o.Hash == r.Hash })
	r.Revision = next
	out = append(out, r)
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out, true
}

// Find is the version numbered n of revs (oldest first); n 0 is the
// newest one that is not current (the running version's hash), the one
// `kubectl rollout undo` goes back to, and a rollback too.
func Find(revs []Revision, n int, current string) (Revision, error) {
	for i := len(revs) - 1; i >= 0; i-- {
		if n == 0 && revs[i].Hash != current || n != 0 && revs[i].Revision == n {
			return revs[i], nil
		}
	}
	if n == 0 {
		return Revision{}, errors.New("no other version that became Ready is kept")
	}
	return Revision{}, fmt.Errorf("revision %d not found", n)
}

// Override is a version kept that stands in, on this node, for the one
// its file asks for, until the file changes: a rollback (the file's
// version failed: Reason and Message say how) or `rollout undo`.
type Override struct {
	Hash    string    `json:"hash"` // the file's version it stands in for
	To      Revision  `json:"to"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

// Store keeps the versions under Dir, one file per pod.
type Store struct {
	Dir string
	mu  sync.Mutex // one writer of a file in this process at a time
	// migrated: the override files named as before are renamed (migrate).
	migMu    sync.Mutex
	migrated bool
}

// The file names of a pod: its versions, and its override. A pod key makes
// neither "@" nor "_" (a namespace is a DNS label, a name a DNS subdomain),
// so no pod's versions can have another's override's name.
const (
	revisionsSuffix = ".json"
	overrideSuffix  = "@override.json"
	// legacyOverride ended an override file's name before: the name of the
	// versions of the pod of the same name with ".override" added (dots are
	// valid in a name), so removing one removed the other.
	legacyOverride = ".override.json"
)

// path is pod key's file: "namespace_name.json" (neither has a "_").
func (s *Store) path(key string) string {
	return filepath.Join(s.Dir, base(key)+revisionsSuffix)
}

// overridePath is pod key's override file, "namespace_name@override.json".
func (s *Store) overridePath(key string) string {
	return filepath.Join(s.Dir, base(key)+overrideSuffix)
}

// maxBase keeps every file name of a pod (base and "@override.json", and
// the temporary name renameio writes it under first: a dot before and up
// to 20 digits after) within the 255 bytes a name may have.
const maxBase = 255 - len(overrideSuffix) - 21

// base is the start of pod key's file names, "namespace_name"; a name too
// long for that (a namespace of 63 and a name of 253 characters are valid)
// is cut and a hash of the key added, as the log directory's name is.
func base(key string) string {
	b := strings.Replace(key, "/", "_", 1)
	if len(b) <= maxBase {
		return b
	}
	sum := sha256.Sum256([]byte(key))
	return b[:maxBase-17] + "-" + hex.EncodeToString(sum[:8])
}

// migrate renames, once per Store, the override files named as before
// ("namespace_name.override.json") to their names now. Such a name may be
// the versions of pod "namespace/name.override" as well: an override is a
// JSON object, versions a list, so the content says which.
func (s *Store) migrate() error {
	s.migMu.Lock()
	defer s.migMu.Unlock()
	if s.migrated {
		return nil
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the history: %w", err)
	}
	moved := false
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, legacyOverride) {
			continue
		}
		ok, err := moveOverride(s.Dir, name)
		if err != nil {
			return fmt.Errorf("moving the override %s: %w", name, err)
		}
		moved = moved || ok
	}
	if moved {
		if err := syncDir(s.Dir); err != nil {
			return err
		}
	}
	s.migrated = true
	return nil
}

// moveOverride renames dir/name, named as an override was before, to its
// name now if it holds an override; one there already is newer, and wins.
func moveOverride(dir, name string) (bool, error) {
	from := filepath.Join(dir, name)
	data, err := os.ReadFile(from)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // another podrun moved it
	}
	if err != nil {
		return false, err
	}
	if t := strings.TrimLeft(string(data), " \t\r\n"); !strings.HasPrefix(t, "{") {
		return false, nil // the versions of a pod whose name ends in ".override"
	}
	to := filepath.Join(dir, strings.TrimSuffix(name, legacyOverride)+overrideSuffix)
	if _, err := os.Lstat(to); err == nil {
		return true, remove(from)
	}
	if err := os.Rename(from, to); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return true, nil
}

// Override is what stands in for pod key's file, nil when nothing does.
func (s *Store) Override(key string) (*Override, error) {
	if err := s.migrate(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.overridePath(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var o Override
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("reading the override of pod %s: %w", key, err)
	}
	return &o, nil
}

// SetOverride records o for pod key, atomically.
func (s *Store) SetOverride(key string, o Override) error {
	if err := s.migrate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return s.write(s.overridePath(key), data)
}

// ClearOverride drops pod key's override; none is success.
func (s *Store) ClearOverride(key string) error {
	if err := s.migrate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return remove(s.overridePath(key))
}

// List is pod key's versions, oldest first; none when nothing is kept.
func (s *Store) List(key string) ([]Revision, error) {
	if err := s.migrate(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var revs []Revision
	if err := json.Unmarshal(data, &revs); err != nil {
		return nil, fmt.Errorf("reading the history of pod %s: %w", key, err)
	}
	return revs, nil
}

// Record adds r as pod key's newest version (Add), written atomically:
// a temporary file synced, renamed over the old one, the directory synced.
func (s *Store) Record(key string, r Revision) error {
	if err := s.migrate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	revs, err := s.List(key)
	if err != nil {
		return err
	}
	revs, changed := Add(revs, r, Max)
	if !changed {
		return nil
	}
	data, err := json.Marshal(revs)
	if err != nil {
		return err
	}
	if err := s.write(s.path(key), data); err != nil {
		return fmt.Errorf("recording the history of pod %s: %w", key, err)
	}
	return nil
}

// write replaces path with data: a temporary file synced, renamed over
// the old one, the directory synced; root-only.
func (s *Store) write(path string, data []byte) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(s.Dir, 0o700); err != nil { // made before with other bits
		return err
	}
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	return syncDir(s.Dir)
}

// Remove forgets pod key's versions and override; none kept is success.
func (s *Store) Remove(key string) error {
	if err := s.migrate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(remove(s.overridePath(key)), remove(s.path(key)))
}

func remove(path string) error {
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
