package manifest

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func defaulted(mutate func(*corev1.Pod)) *corev1.Pod {
	pod := basePod()
	mutate(pod)
	Default(pod)
	return pod
}

// TestIdentityIsStable pins the identity of one pod: a change here changes the
// UID of every running pod, so podrun would restart them all after an upgrade.
// (A new k8s.io/api that adds a non-omitempty field to PodSpec does that too.)
func TestIdentityIsStable(t *testing.T) {
	hash, uid := Identity(defaulted(func(*corev1.Pod) {}))
	const (
		wantHash = "c138f7ca721dfeb9048cb126e138661c8547bafeef810f06d0555f10db34f710"
		wantUID  = "6a14024e-d056-5066-b9de-912947f4b0b8"
	)
	if hash != wantHash || uid != wantUID {
		t.Errorf("Identity = %s, %s; want %s, %s", hash, uid, wantHash, wantUID)
	}
	if again, _ := Identity(defaulted(func(*corev1.Pod) {})); again != hash {
		t.Errorf("Identity differs between two calls: %s, %s", hash, again)
	}
}

var uuidV5 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestIdentityChangesWithThePod(t *testing.T) {
	baseHash, baseUID := Identity(defaulted(func(*corev1.Pod) {}))
	tests := map[string]func(*corev1.Pod){
		"name":          func(p *corev1.Pod) { p.Name = "web2" },
		"namespace":     func(p *corev1.Pod) { p.Namespace = "shop" },
		"label":         func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web"} },
		"annotation":    func(p *corev1.Pod) { p.Annotations = map[string]string{"note": "x"} },
		"image":         func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" },
		"command":       func(p *corev1.Pod) { p.Spec.Containers[0].Command = []string{"nginx", "-g", "daemon off;"} },
		"restartPolicy": func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever },
		"volume":        func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data")} },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			hash, uid := Identity(defaulted(mutate))
			if hash == baseHash || uid == baseUID {
				t.Errorf("changing the %s kept the identity %s, %s", name, hash, uid)
			}
			if !uuidV5.MatchString(uid) {
				t.Errorf("UID %q is not a version 5 UUID", uid)
			}
		})
	}
}

// TestIdentityIgnoresServerFields checks that what the API server adds and
// what the defaults fill in do not change a pod's identity, so that a manifest
// and its `kubectl get -o yaml` output are the same pod.
func TestIdentityIgnoresServerFields(t *testing.T) {
	const written = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx:1.27
`
	const fetched = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  uid: 0b0c3c9e-0000-4000-8000-000000000000
  resourceVersion: "42"
  creationTimestamp: "2024-05-01T10:00:00Z"
spec:
  containers:
  - name: app
    image: nginx:1.27
    imagePullPolicy: IfNotPresent
    resources: {}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  restartPolicy: Always
  schedulerName: default-scheduler
  securityContext: {}
  terminationGracePeriodSeconds: 30
status:
  phase: Running
`
	a, err := Parse("written.yaml", []byte(written))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("fetched.yaml", []byte(fetched))
	if err != nil {
		t.Fatal(err)
	}
	pa, pb := a.Pods[0], b.Pods[0]
	if pa.Hash != pb.Hash || pa.UID != pb.UID {
		t.Errorf("identities differ: %s %s vs %s %s", pa.Hash, pa.UID, pb.Hash, pb.UID)
	}
	if string(pa.Pod.UID) != pa.UID {
		t.Errorf("metadata.uid = %q, want %q", pa.Pod.UID, pa.UID)
	}
	wantHash, wantUID := Identity(defaulted(func(*corev1.Pod) {}))
	if pa.Hash != wantHash || pa.UID != wantUID {
		t.Errorf("Parse and Identity disagree: %s %s vs %s %s", pa.Hash, pa.UID, wantHash, wantUID)
	}
}
