package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestMountsSubPathExpr(t *testing.T) {
	vol, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(vol, "escape")); err != nil {
		t.Fatal(err)
	}
	p := &Prepared{layout: testLayout(t), Paths: map[string]string{"v": vol}}
	vars := map[string]string{"POD": "web-1", "LINK": "escape", "ABS": "/tmp"}
	mount := func(expr string) (string, error) {
		c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/m", SubPathExpr: expr}}}
		ms, err := p.Mounts(c, vars)
		if err != nil {
			return "", err
		}
		return ms[0].Source, nil
	}
	real, _ := filepath.EvalSymlinks(vol)
	if src, err := mount("logs/$(POD)"); err != nil || !sameFile(src, filepath.Join(real, "logs/web-1")) {
		t.Errorf("subPathExpr logs/$(POD): %q, %v", src, err)
	} else if st, err := os.Stat(filepath.Join(real, "logs/web-1")); err != nil || !st.IsDir() {
		t.Errorf("subPathExpr directory not created: %v", err)
	}
	for expr, want := range map[string]string{
		"$(LINK)/$(POD)": `subPathExpr "$(LINK)/$(POD)": subPath "escape/web-1" resolves to`,
		"$(ABS)":         "must not be an absolute path",
		"$(MISSING)":     "missing value for MISSING",
	} {
		if src, err := mount(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("subPathExpr %q: %q, %v; want an error containing %q", expr, src, err, want)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("a subPathExpr created %v outside its volume", entries)
	}
}
