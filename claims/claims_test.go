package claims

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/volumes"
)

// pods is a fake Lifecycle: the pods on the node, or the error listing them.
type pods struct {
	list []*run.PodInfo
	err  error
}

func (p pods) Pods(context.Context) ([]*run.PodInfo, error) { return p.list, p.err }

// podUsing is a pod of namespace shop that mounts claim.
func podUsing(name, claim string) *run.PodInfo {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
	}}}
	return &run.PodInfo{Namespace: "shop", Name: name, Pod: pod}
}

// TestClaims: each claim's volume is listed with the pods that use it, of
// its namespace only.
func TestClaims(t *testing.T) {
	root := t.TempDir()
	l := volumes.Layout{Root: root}
	for _, c := range []string{"shop/db-data", "shop/cache", "other/db-data"} {
		if err := os.MkdirAll(l.Claim(strings.Split(c, "/")[0], strings.Split(c, "/")[1]), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	node := Node{Lifecycle: pods{list: []*run.PodInfo{podUsing("db", "db-data"), podUsing("replica", "db-data"), {Namespace: "shop", Name: "gone"}}}, Root: root}
	got, err := node.Claims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	users := map[string][]string{}
	for _, c := range got {
		users[c.Namespace+"/"+c.Name] = c.UsedBy
	}
	want := map[string][]string{"shop/db-data": {"shop/db", "shop/replica"}, "shop/cache": nil, "other/db-data": nil}
	if len(users) != len(want) {
		t.Fatalf("Claims = %v, want %v", users, want)
	}
	for k, w := range want {
		if !slices.Equal(users[k], w) {
			t.Errorf("claim %s used by %v, want %v", k, users[k], w)
		}
	}
	if _, err := (Node{Lifecycle: pods{err: errors.New("no runtime")}, Root: root}).Claims(context.Background()); err == nil {
		t.Error("Claims with the pods not listed: no error")
	}
}

// TestRemoveClaim: a claim's volume goes unless a pod uses it; one not
// there is not found; when the pods cannot be listed nothing goes.
func TestRemoveClaim(t *testing.T) {
	for _, tt := range []struct {
		name      string
		pods      pods
		claim     string
		wantFound bool
		wantErr   string
		wantGone  bool
	}{
		{name: "unused", pods: pods{list: []*run.PodInfo{podUsing("web", "other")}}, claim: "db-data", wantFound: true, wantGone: true},
		{name: "in use", pods: pods{list: []*run.PodInfo{podUsing("db", "db-data")}}, claim: "db-data", wantFound: true, wantErr: "volume shop/db-data is used by pod shop/db: take it down first"},
		{name: "pods not listed", pods: pods{err: errors.New("no runtime")}, claim: "db-data", wantFound: true, wantErr: "no runtime"},
		{name: "not there", claim: "nothing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := volumes.Layout{Root: root}.Claim("shop", "db-data")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			found, err := Node{Lifecycle: tt.pods, Root: root}.RemoveClaim(context.Background(), "shop", tt.claim)
			if found != tt.wantFound || (err == nil) != (tt.wantErr == "") || err != nil && err.Error() != tt.wantErr {
				t.Errorf("RemoveClaim = %v, %v; want %v, %q", found, err, tt.wantFound, tt.wantErr)
			}
			if _, err := os.Stat(dir); os.IsNotExist(err) != tt.wantGone {
				t.Errorf("the volume's directory: %v; want gone %v", err, tt.wantGone)
			}
		})
	}
}
