package volumes

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClaims(t *testing.T) {
	l := Layout{Root: t.TempDir(), UID: "u"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "db-data"}}},
		{Name: "seed", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "seed", ReadOnly: true}}},
	}}}
	// Locate (adoption) makes nothing.
	if _, err := Locate(l, pod, Options{}); err == nil {
		t.Error("Locate of claims never made: no error")
	}
	p, err := Setup(l, pod, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := l.Claim("shop", "db-data")
	if p.Paths["data"] != dir || !p.ReadOnly["seed"] || p.ReadOnly["data"] {
		t.Errorf("paths %v, read-only %v", p.Paths, p.ReadOnly)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o777 {
		t.Errorf("the claim's directory: %v, %v; want mode 0777", st, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	// Another Setup (a pod replaced) and Locate keep the data; Undo and
	// the pod directory's removal never touch it.
	if _, err := Setup(l, pod, nil, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Locate(l, pod, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Undo(); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(data) != "kept" {
		t.Errorf("the claim's data: %q, %v", data, err)
	}
	claims, err := Claims(l)
	if err != nil || len(claims) != 2 || claims[0].Name != "db-data" || claims[1].Name != "seed" || claims[0].Namespace != "shop" {
		t.Fatalf("Claims = %+v, %v", claims, err)
	}
	if !UsesClaim(pod, "seed") || UsesClaim(pod, "other") {
		t.Error("UsesClaim")
	}
	if err := RemoveClaim(l, "shop", "db-data"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after RemoveClaim: %v", err)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Errorf("RemoveClaim followed the symlink a container left: %v", err)
	}
	if err := RemoveClaim(l, "shop", "db-data"); err != nil {
		t.Errorf("RemoveClaim of a gone claim: %v", err)
	}
}
