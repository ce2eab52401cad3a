package volumes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/downward"
)

// entries lists a directory's names, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

var tsDirRE = regexp.MustCompile(`^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$`)

func TestAtomicWriteLayout(t *testing.T) {
	dir := t.TempDir()
	payload := map[string]FileProjection{
		"a":           {Data: []byte("A"), Mode: 0o644},
		"conf/b.conf": {Data: []byte("B"), Mode: 0o400},
		"conf/c.conf": {Data: []byte("C"), Mode: 0o600},
	}
	if changed, err := AtomicWrite(dir, payload, nil); err != nil || !changed {
		t.Fatalf("first write: changed %v, %v", changed, err)
	}
	names := entries(t, dir)
	if len(names) != 4 || !tsDirRE.MatchString(names[0]) || names[1] != "..data" || names[2] != "a" || names[3] != "conf" {
		t.Fatalf("layout %v, want [..<timestamp> ..data a conf]", names)
	}
	ts := names[0]
	if l, _ := os.Readlink(filepath.Join(dir, "..data")); l != ts {
		t.Errorf("..data -> %q, want %q", l, ts)
	}
	for name, want := range map[string]string{"a": "..data/a", "conf": "..data/conf"} {
		if l, err := os.Readlink(filepath.Join(dir, name)); err != nil || l != want {
			t.Errorf("%s -> %q (%v), want %q", name, l, err, want)
		}
	}
	for p, f := range payload {
		info, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, p))
		if info.Mode().Perm() != f.Mode || !bytes.Equal(data, f.Data) {
			t.Errorf("%s: mode %v content %q, want %v %q", p, info.Mode().Perm(), data, f.Mode, f.Data)
		}
	}
	if info, _ := os.Stat(filepath.Join(dir, ts)); info.Mode().Perm() != 0o755 {
		t.Errorf("timestamped dir mode %v, want 0755", info.Mode().Perm())
	}

	// The same payload again changes nothing.
	if changed, err := AtomicWrite(dir, payload, nil); err != nil || changed {
		t.Fatalf("same payload: changed %v, %v", changed, err)
	}
	if names := entries(t, dir); names[0] != ts {
		t.Errorf("same payload rewrote the files: %v", names)
	}

	// An update drops stale keys, top-level and nested, and the old dir.
	update := map[string]FileProjection{
		"conf/b.conf": {Data: []byte("B2"), Mode: 0o400},
		"d":           {Data: []byte("D"), Mode: 0o644},
	}
	if changed, err := AtomicWrite(dir, update, nil); err != nil || !changed {
		t.Fatalf("update: changed %v, %v", changed, err)
	}
	names = entries(t, dir)
	if len(names) != 4 || names[0] == ts || !tsDirRE.MatchString(names[0]) || strings.Join(names[1:], " ") != "..data conf d" {
		t.Fatalf("layout after update %v, want [..<new timestamp> ..data conf d]", names)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "conf/b.conf")); string(data) != "B2" {
		t.Errorf("conf/b.conf = %q after update", data)
	}
	if _, err := os.Lstat(filepath.Join(dir, "conf/c.conf")); !os.IsNotExist(err) {
		t.Errorf("stale nested key still there: %v", err)
	}
}

func TestAtomicWriteRefusesEscapes(t *testing.T) {
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", "..data", ""} {
		if _, err := AtomicWrite(t.TempDir(), map[string]FileProjection{p: {Data: []byte("x"), Mode: 0o644}}, nil); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}

// A reader never sees a half-written file nor a mix of versions: each
// version's files are all one repeated byte, of one length.
func TestAtomicWriteNeverHalfWritten(t *testing.T) {
	dir := t.TempDir()
	version := func(b byte) map[string]FileProjection {
		return map[string]FileProjection{
			"big":     {Data: bytes.Repeat([]byte{b}, 1<<20), Mode: 0o644},
			"sub/big": {Data: bytes.Repeat([]byte{b}, 1<<20), Mode: 0o644},
		}
	}
	if _, err := AtomicWrite(dir, version('a'), nil); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	errc := make(chan string, 1)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				// Resolve ..data once, as a reader of several files would.
				ts, err := os.Readlink(filepath.Join(dir, "..data"))
				if err != nil {
					select {
					case errc <- "..data missing: " + err.Error():
					default:
					}
					return
				}
				first, err1 := os.ReadFile(filepath.Join(dir, "big"))
				nested, err2 := os.ReadFile(filepath.Join(dir, ts, "sub/big"))
				if os.IsNotExist(err2) {
					continue // that version was removed meanwhile
				}
				if err1 != nil || err2 != nil || len(first) != 1<<20 || len(nested) != 1<<20 ||
					bytes.Count(first, first[:1]) != len(first) || bytes.Count(nested, nested[:1]) != len(nested) {
					select {
					case errc <- "a half-written or mixed file was visible":
					default:
					}
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := range 50 {
		if _, err := AtomicWrite(dir, version(byte('b'+i%20)), nil); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case msg := <-errc:
		t.Fatal(msg)
	default:
	}
	if reads.Load() == 0 {
		t.Fatal("no read happened during the updates")
	}
	if n := len(entries(t, dir)); n != 4 {
		t.Errorf("%d entries after the updates, want 4 (old versions removed)", n)
	}
}

func i32(v int32) *int32 { return &v }

func TestPayloadModes(t *testing.T) {
	optional := true
	cfg := &Config{
		ConfigMaps: map[string]*corev1.ConfigMap{"cm": {
			Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}}},
		Secrets: map[string]*corev1.Secret{"s": {Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("pw")}}},
		Downward: downward.Info{
			Pod: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "web-0", Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
			},
			Node: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
		},
	}
	type files map[string]string // path -> "mode content"
	for _, tc := range []struct {
		name string
		v    corev1.VolumeSource
		want files
	}{
		{"configMap, all keys", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, DefaultMode: i32(0o640)}},
			files{"a": "640 1", "b": "640 2", "bin": "640 \x00\x01"}},
		{"configMap items with a mode", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, DefaultMode: i32(0o644),
			Items: []corev1.KeyToPath{{Key: "a", Path: "x/a.conf", Mode: i32(0o400)}, {Key: "b", Path: "b"}}}},
			files{"x/a.conf": "400 1", "b": "644 2"}},
		{"optional missing configMap", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: &optional}}, files{}},
		{"optional missing key", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Optional: &optional,
			Items: []corev1.KeyToPath{{Key: "zz", Path: "zz"}, {Key: "a", Path: "a"}}}}, files{"a": "644 1"}},
		{"secret", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: i32(0o400)}},
			files{"user": "400 admin", "pass": "400 pw"}},
		{"downwardAPI", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: i32(0o644), Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
			{Path: "tier", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['tier']"}, Mode: i32(0o600)},
			{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
			{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.cpu"}},
		}}}, files{"labels": "644 app=\"web\"\ntier=\"front\"", "tier": "600 front", "mem": "644 64", "cpu": "644 4"}},
		{"projected", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: i32(0o440), Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "a", Path: "cm/a"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Items: []corev1.KeyToPath{{Key: "user", Path: "s/user", Mode: i32(0o400)}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}},
		}}}, files{"cm/a": "440 1", "s/user": "400 admin", "name": "440 web-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &corev1.Volume{Name: "v", VolumeSource: tc.v}
			got, err := Payload(v, cfg)
			if err != nil {
				t.Fatal(err)
			}
			gotFiles := files{}
			for p, f := range got {
				gotFiles[p] = fmt.Sprintf("%o %s", f.Mode.Perm(), f.Data)
			}
			if len(gotFiles) != len(tc.want) {
				t.Fatalf("got %q, want %q", gotFiles, tc.want)
			}
			for p, w := range tc.want {
				if gotFiles[p] != w {
					t.Errorf("%s: got %q, want %q", p, gotFiles[p], w)
				}
			}
		})
	}
	_, err := Payload(&corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "zz", Path: "zz"}}}}}, cfg)
	if err == nil || !strings.Contains(err.Error(), `has no key "zz"`) {
		t.Errorf("missing non-optional key: %v", err)
	}
}

func TestSetupAndUpdateConfig(t *testing.T) {
	l := testLayout(t)
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, DefaultMode: i32(0o644)}}},
			{Name: "dapi", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: i32(0o644),
				Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}}},
		},
		Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "cm", MountPath: "/cm", ReadOnly: false}}}},
	}}
	pod.Name = "p"
	cfg := &Config{ConfigMaps: map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"k": "v1"}}}, Downward: downward.Info{Pod: pod}}
	p, err := Setup(l, pod, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := p.Paths["cm"]
	if dir != filepath.Join(l.Pod(), "volumes", "kubernetes.io~configmap", "cm") {
		t.Errorf("configMap volume at %s", dir)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o777 {
		t.Errorf("volume directory mode %v, %v; want 0777 as the kubelet makes it", info.Mode().Perm(), err)
	}
	if data, _ := os.ReadFile(filepath.Join(p.Paths["dapi"], "name")); string(data) != "p" {
		t.Errorf("downwardAPI name = %q", data)
	}
	ms, err := p.Mounts(&pod.Spec.Containers[0], nil)
	if err != nil || len(ms) != 1 || !ms[0].ReadOnly {
		t.Errorf("a configMap volume must be mounted read-only whatever readOnly says: %+v, %v", ms, err)
	}

	// Adopting: the files written at setup are used as they are.
	if q, err := Locate(l, pod, Options{}); err != nil || q.Paths["cm"] != dir {
		t.Errorf("Locate: %v, %v", q, err)
	}
	if _, err := Locate(testLayout(t), pod, Options{}); err == nil {
		t.Error("Locate of a pod never set up succeeded")
	}

	cfg.ConfigMaps["cm"] = &corev1.ConfigMap{Data: map[string]string{"k": "v2"}}
	changed, err := UpdateConfig(l, pod, cfg)
	if err != nil || strings.Join(changed, ",") != "cm" {
		t.Fatalf("UpdateConfig: changed %v, %v; want [cm]", changed, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "k")); string(data) != "v2" {
		t.Errorf("k = %q after the update", data)
	}
	if changed, err := UpdateConfig(l, pod, cfg); err != nil || len(changed) != 0 {
		t.Errorf("UpdateConfig with the same objects: changed %v, %v", changed, err)
	}

	// A secret volume whose tmpfs is gone is never written to the disk.
	sec := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}}}
	if err := os.MkdirAll(l.ConfigDir(&sec.Spec.Volumes[0]), 0o750); err != nil {
		t.Fatal(err)
	}
	cfg.Secrets = map[string]*corev1.Secret{"s": {Data: map[string][]byte{"pw": []byte("x")}}}
	if _, err := UpdateConfig(l, sec, cfg); err == nil || !strings.Contains(err.Error(), "tmpfs is not mounted") {
		t.Errorf("UpdateConfig of a secret volume without its tmpfs: %v", err)
	}
	if ents := entries(t, l.ConfigDir(&sec.Spec.Volumes[0])); len(ents) != 0 {
		t.Errorf("secret files written to the disk: %v", ents)
	}
}
