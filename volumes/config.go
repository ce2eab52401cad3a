package volumes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/manifest"
)

// Config is what the config volumes (configMap, secret, downwardAPI,
// projected) of a pod are made of: the objects of its namespace it
// references, by name, and what the downward API exposes of it.
type Config struct {
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	Downward   downward.Info
	// Tokens are the service account tokens of the projected volumes'
	// serviceAccountToken sources, by manifest.TokenKey (an API server's
	// pods only).
	Tokens map[string]*authenticationv1.TokenRequest
}

// configPlugin is the kubelet's plugin directory name of a config volume
// kind, "" for other kinds.
func configPlugin(v *corev1.Volume) string {
	switch {
	case v.ConfigMap != nil:
		return "kubernetes.io~configmap"
	case v.Secret != nil:
		return "kubernetes.io~secret"
	case v.DownwardAPI != nil:
		return "kubernetes.io~downward-api"
	case v.Projected != nil:
		return "kubernetes.io~projected"
	}
	return ""
}

// onTmpfs reports whether a config volume lives in memory: secret and
// projected volumes, as the kubelet keeps them (projected ones may hold
// secrets), so that secrets never reach the disk.
func onTmpfs(v *corev1.Volume) bool { return v.Secret != nil || v.Projected != nil }

// ConfigDir is a config volume's directory.
func (l Layout) ConfigDir(v *corev1.Volume) string {
	return filepath.Join(l.Pod(), "volumes", configPlugin(v), v.Name)
}

// configVolume creates a config volume's directory (a tmpfs for secret and
// projected) and writes its files. With cfg nil (a pod adopted from its
// state, whose objects are not kept on disk), the files written when the
// pod was set up are used as they are.
func (p *Prepared) configVolume(l Layout, pod *corev1.Pod, v *corev1.Volume, cfg *Config) error {
	dir := l.ConfigDir(v)
	p.Paths[v.Name] = dir
	p.ReadOnly[v.Name] = true
	if cfg == nil {
		if _, err := os.Readlink(filepath.Join(dir, dataDirName)); err != nil {
			return fmt.Errorf("its files were never written: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if onTmpfs(v) {
		if err := mountConfigTmpfs(dir); err != nil {
			return err
		}
	} else if err := os.Chmod(dir, 0o777); err != nil { // as the kubelet's emptyDir wrapper makes it
		return err
	}
	_, err := writeConfigVolume(dir, pod, v, cfg)
	return err
}

// mountConfigTmpfs mounts the tmpfs of a secret or projected volume at dir,
// unless one is there already. Unlike a pod's /dev/shm it is not noexec, as
// the kubelet's is not: a file with an executable mode can be run.
func mountConfigTmpfs(dir string) error {
	if mounted, err := mountinfo.Mounted(dir); err == nil && mounted {
		return nil
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NODEV|unix.MS_NOSUID, "mode=1777"); err != nil {
		return fmt.Errorf("mounting tmpfs at %s: %w", dir, err)
	}
	return nil
}

// Updatable reports whether a volume's files follow its objects: configMap,
// secret and projected volumes.
func Updatable(v *corev1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.Projected != nil
}

// UpdateConfig rewrites the configMap, secret and projected volumes of a
// running pod from cfg, in place and atomically, as the kubelet does when a
// ConfigMap or Secret changes (env does not change; downwardAPI volumes
// cannot, since a podrun pod's labels and annotations are part of its
// identity). It returns the names of the volumes whose files changed.
func UpdateConfig(l Layout, pod *corev1.Pod, cfg *Config) ([]string, error) {
	var changed []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !Updatable(v) {
			continue
		}
		dir := l.ConfigDir(v)
		if _, err := os.Stat(dir); err != nil {
			return changed, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		// Never write a secret onto the disk below a tmpfs that is gone.
		if mounted, err := mountinfo.Mounted(dir); onTmpfs(v) && (err != nil || !mounted) {
			return changed, fmt.Errorf("volume %q: its tmpfs is not mounted at %s", v.Name, dir)
		}
		ok, err := writeConfigVolume(dir, pod, v, cfg)
		if err != nil {
			return changed, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		if ok {
			changed = append(changed, v.Name)
		}
	}
	return changed, nil
}

// writeConfigVolume writes a config volume's payload into dir; with
// fsGroup, the files get group read and the tree the group, as the
// kubelet's SetVolumeOwnership does for these read-only volume kinds.
func writeConfigVolume(dir string, pod *corev1.Pod, v *corev1.Volume, cfg *Config) (bool, error) {
	payload, err := Payload(v, cfg)
	if err != nil {
		return false, err
	}
	var setPerms func() error
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		gid := int(*sc.FSGroup)
		for k, f := range payload {
			f.Mode |= fsGroupRO
			payload[k] = f
		}
		setPerms = func() error { return setOwnership(dir, gid, fsGroupRO) }
	}
	return AtomicWrite(dir, payload, setPerms)
}

// Payload computes the files of a configMap, secret, downwardAPI or
// projected volume as the kubelet's volume plugins do (MakePayload,
// CollectData): every key when items is empty, else the items' keys at
// their paths; each file with its item's mode, else defaultMode. A missing
// object or key is an error unless optional (the manifest's checks refuse
// such a pod before it runs); a missing optional object gives no files.
func Payload(v *corev1.Volume, cfg *Config) (map[string]FileProjection, error) {
	out := map[string]FileProjection{}
	var err error
	switch {
	case v.ConfigMap != nil:
		s := v.ConfigMap
		err = configMapPayload(out, cfg, s.Name, s.Items, s.Optional, mode(s.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode))
	case v.Secret != nil:
		s := v.Secret
		err = secretPayload(out, cfg, s.SecretName, s.Items, s.Optional, mode(s.DefaultMode, corev1.SecretVolumeSourceDefaultMode))
	case v.DownwardAPI != nil:
		err = downwardPayload(out, cfg, v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode))
	case v.Projected != nil:
		def := mode(v.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for _, src := range v.Projected.Sources {
			switch {
			case src.ConfigMap != nil:
				err = configMapPayload(out, cfg, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, def)
			case src.Secret != nil:
				err = secretPayload(out, cfg, src.Secret.Name, src.Secret.Items, src.Secret.Optional, def)
			case src.DownwardAPI != nil:
				err = downwardPayload(out, cfg, src.DownwardAPI.Items, def)
			case src.ServiceAccountToken != nil:
				err = tokenPayload(out, cfg, v.Name, src.ServiceAccountToken, def)
			default:
				err = errors.New("projected source kind not supported by podrun")
			}
			if err != nil {
				return out, err
			}
		}
	default:
		err = errors.New("not a config volume")
	}
	return out, err
}

func mode(m *int32, def int32) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	return os.FileMode(def)
}

func itemMode(it corev1.KeyToPath, def os.FileMode) os.FileMode {
	if it.Mode != nil {
		return os.FileMode(*it.Mode)
	}
	return def
}

func isOptional(b *bool) bool { return b != nil && *b }

// keyed adds to out the data of an object: every key, or the items.
func keyed(out map[string]FileProjection, kind, name string, data map[string][]byte, items []corev1.KeyToPath, optional *bool, def os.FileMode) error {
	if len(items) == 0 {
		for k, d := range data {
			out[k] = FileProjection{Data: d, Mode: def}
		}
		return nil
	}
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			if isOptional(optional) {
				continue
			}
			return fmt.Errorf("%s %q has no key %q", kind, name, it.Key)
		}
		out[it.Path] = FileProjection{Data: d, Mode: itemMode(it, def)}
	}
	return nil
}

func configMapPayload(out map[string]FileProjection, cfg *Config, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) error {
	cm := cfg.ConfigMaps[name]
	if cm == nil {
		if isOptional(optional) {
			return nil
		}
		return fmt.Errorf("ConfigMap %q not found", name)
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyed(out, "ConfigMap", name, data, items, optional, def)
}

func secretPayload(out map[string]FileProjection, cfg *Config, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) error {
	s := cfg.Secrets[name]
	if s == nil {
		if isOptional(optional) {
			return nil
		}
		return fmt.Errorf("Secret %q not found", name)
	}
	return keyed(out, "Secret", name, s.Data, items, optional, def)
}

// downwardPayload adds the downwardAPI items: labels and annotations in the
// kubelet's key="value" format, resources divided by their divisor.
func downwardPayload(out map[string]FileProjection, cfg *Config, items []corev1.DownwardAPIVolumeFile, def os.FileMode) error {
	for _, it := range items {
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = downward.FieldValue(cfg.Downward, it.FieldRef)
		case it.ResourceFieldRef != nil:
			value, err = downward.ResourceValue(cfg.Downward, it.ResourceFieldRef.ContainerName, it.ResourceFieldRef)
		default:
			err = errors.New("neither fieldRef nor resourceFieldRef is set")
		}
		if err != nil {
			return fmt.Errorf("downwardAPI item %q: %w", it.Path, err)
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode)
		}
		out[it.Path] = FileProjection{Data: []byte(value), Mode: m}
	}
	return nil
}

// tokenPayload adds a serviceAccountToken source's file as the kubelet's
// projected plugin writes it: the token requested for the pod (an error
// while there is none: the kubelet fails the volume's mount), with the
// volume's defaultMode, or 0600 owned by the pod's one user when all its
// containers run as one (FsUserFrom) or with an fsGroup (which then adds
// group read, as the kubelet's SetVolumeOwnership makes it 0640).
func tokenPayload(out map[string]FileProjection, cfg *Config, volume string, tp *corev1.ServiceAccountTokenProjection, def os.FileMode) error {
	tr := cfg.Tokens[manifest.TokenKey(volume, tp.Path)]
	if tr == nil || tr.Status.Token == "" {
		return fmt.Errorf("no service account token for %q yet", tp.Path)
	}
	var user *int64
	if pod := cfg.Downward.Pod; pod != nil {
		user = fsUser(pod) // not tp.User: the kubelet's alpha AtomicWriteVolumeUserFields
		if sc := pod.Spec.SecurityContext; user != nil || (sc != nil && sc.FSGroup != nil) {
			def = 0o600
		}
	}
	out[tp.Path] = FileProjection{Data: []byte(tr.Status.Token), Mode: def, FsUser: user}
	return nil
}

// fsUser is the user all of pod's containers run as, nil when one of them
// sets none or two differ: the kubelet's FsUserFrom.
func fsUser(pod *corev1.Pod) *int64 {
	var user *int64
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			var u *int64
			if sc := pod.Spec.SecurityContext; sc != nil {
				u = sc.RunAsUser
			}
			if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
				u = c.SecurityContext.RunAsUser
			}
			if u == nil || (user != nil && *user != *u) {
				return nil
			}
			user = u
		}
	}
	return user
}
