package volumes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/downward"
)

func i64(v int64) *int64 { return &v }

// TestTokenPayload: a projected serviceAccountToken source is the token
// issued for it (by volume and path), with the kubelet's mode: the
// volume's defaultMode, or 0600 owned by the one user all containers run
// as, or 0600 with an fsGroup; without a token the volume cannot be
// written.
func TestTokenPayload(t *testing.T) {
	vol := func(def int32) *corev1.Volume {
		return &corev1.Volume{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: i32(def), Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}
	}
	tokens := map[string]*authenticationv1.TokenRequest{"kube-api-access-x/token": {Status: authenticationv1.TokenRequestStatus{Token: "jwt"}}}
	sc := func(u *int64) *corev1.SecurityContext { return &corev1.SecurityContext{RunAsUser: u} }
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		def  int32
		want string // mode user
	}{
		{"no user", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, 0o644, "644 <nil>"},
		{"pod user", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: i64(1000)},
			Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}, 0o644, "600 1000"},
		{"one container user each, the same", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i", SecurityContext: sc(i64(7))}},
			Containers: []corev1.Container{{Name: "a", SecurityContext: sc(i64(7))}}}, 0o644, "600 7"},
		{"container overrides the pod's", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: i64(1000)},
			Containers: []corev1.Container{{Name: "a", SecurityContext: sc(i64(0))}}}, 0o644, "600 0"},
		{"two users", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", SecurityContext: sc(i64(1))}, {Name: "b", SecurityContext: sc(i64(2))}}}, 0o644, "644 <nil>"},
		{"one container without", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", SecurityContext: sc(i64(1))}, {Name: "b"}}}, 0o440, "440 <nil>"},
		{"fsGroup", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{FSGroup: i64(2000)},
			Containers: []corev1.Container{{Name: "a"}}}, 0o644, "600 <nil>"},
	} {
		pod := &corev1.Pod{Spec: tc.spec}
		got, err := Payload(vol(tc.def), &Config{Tokens: tokens, Downward: downward.Info{Pod: pod}})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		f := got["token"]
		user := "<nil>"
		if f.FsUser != nil {
			user = fmt.Sprint(*f.FsUser)
		}
		if g := fmt.Sprintf("%o %s", f.Mode.Perm(), user); g != tc.want || string(f.Data) != "jwt" || len(got) != 1 {
			t.Errorf("%s: %s %q (%d files), want %s", tc.name, g, f.Data, len(got), tc.want)
		}
	}
	pod := &corev1.Pod{}
	if _, err := Payload(vol(0o644), &Config{Downward: downward.Info{Pod: pod}}); err == nil || !strings.Contains(err.Error(), `no service account token for "token" yet`) {
		t.Errorf("without a token: %v", err)
	}
}

// TestAtomicWriteFsUser: a file with FsUser and its top-level link are
// given to that user (root only); the others stay root's.
func TestAtomicWriteFsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	dir := t.TempDir()
	payload := map[string]FileProjection{
		"token":  {Data: []byte("jwt"), Mode: 0o600, FsUser: i64(1234)},
		"ca.crt": {Data: []byte("CA"), Mode: 0o644},
	}
	if _, err := AtomicWrite(dir, payload, nil); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) uint32 {
		info, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return info.Sys().(*syscall.Stat_t).Uid
	}
	for p, want := range map[string]uint32{"token": 1234, "..data/token": 1234, "ca.crt": 0, "..data/ca.crt": 0} {
		if got := owner(filepath.Join(dir, p)); got != want {
			t.Errorf("%s owned by %d, want %d", p, got, want)
		}
	}
}
