package run

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/manifest"
)

func TestNamed(t *testing.T) {
	info := func(uid, name, node string) *PodInfo {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		if node != "" {
			pod.Spec.NodeName = node
			pod.Annotations = map[string]string{manifest.ConfigSourceAnnotation: "file"}
		}
		return &PodInfo{UID: uid, Namespace: "default", Name: name, Pod: pod}
	}
	static := info("1", "web-edge", "edge")
	applied := info("2", "db", "")
	dbStatic := info("3", "db-edge", "edge")
	twin := info("4", "api-a-b", "b")    // api-a on node b ...
	twin2 := info("5", "api-a-b", "a-b") // ... and api on node a-b: the same name
	pods := []*PodInfo{static, applied, dbStatic, twin, twin2}
	for _, tc := range []struct {
		name string
		want []string
		err  string
	}{
		{"web-edge", []string{"1"}, ""},
		{"web", []string{"1"}, ""},   // as written in its file
		{"db", []string{"2"}, ""},    // a pod of that very name wins
		{"edge", nil, ""},            // nothing
		{"api-a", []string{"4"}, ""}, // one pod only
		{"nginx", nil, ""},
	} {
		got, err := Named(pods, Target{Namespace: "default", Name: tc.name})
		var uids []string
		for _, p := range got {
			uids = append(uids, p.UID)
		}
		if (err != nil) != (tc.err != "") || strings.Join(uids, ",") != strings.Join(tc.want, ",") {
			t.Errorf("Named(%s) = %v, %v; want %v", tc.name, uids, err, tc.want)
		}
	}
	// Two static pods of different names, both "app" in their files.
	a, b := info("6", "app-x", "x"), info("7", "app-y", "y")
	if _, err := Named([]*PodInfo{a, b}, Target{Namespace: "default", Name: "app"}); err == nil {
		t.Error("an ambiguous name: no error")
	}
	if got, _ := Named(pods, Target{Namespace: "other", Name: "web"}); len(got) != 0 {
		t.Errorf("another namespace: %v", got)
	}
}
