package manifest

import (
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

const staticPod = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: app, image: busybox:1.36}]
`

func TestStaticPods(t *testing.T) {
	parse := func(o Options, source, doc string) *Pod {
		t.Helper()
		set, err := o.ParseUnresolved(source, []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return set.Pods[0]
	}
	applied := parse(Options{}, "/etc/podrun/manifests/web.yaml", staticPod)
	if applied.Name != "web" || applied.Annotations[ConfigSourceAnnotation] != "" {
		t.Errorf("a pod of up: name %q, annotations %v; want the file's, none", applied.Name, applied.Annotations)
	}

	seenAt := time.Date(2026, 11, 29, 10, 0, 0, 123, time.UTC)
	o := Options{StaticNode: "edge-1", Clock: testclock.NewFakePassiveClock(seenAt)}
	p := parse(o, "/etc/podrun/manifests/web.yaml", staticPod)
	if p.Name != "web-edge-1" || p.Spec.NodeName != "edge-1" || p.Key() != "default/web-edge-1" {
		t.Errorf("static pod: name %q, nodeName %q, key %q", p.Name, p.Spec.NodeName, p.Key())
	}
	if len(p.UID) != 32 || string(p.Pod.UID) != p.UID || p.Annotations[ConfigHashAnnotation] != p.UID {
		t.Errorf("UID %q (pod's %q), config.hash %q: want 32 hex digits, the same everywhere", p.UID, p.Pod.UID, p.Annotations[ConfigHashAnnotation])
	}
	if p.Annotations[ConfigSourceAnnotation] != "file" {
		t.Errorf("config.source = %q, want file", p.Annotations[ConfigSourceAnnotation])
	}
	if seen, err := time.Parse(time.RFC3339Nano, p.Annotations[ConfigSeenAnnotation]); err != nil || !seen.Equal(seenAt) {
		t.Errorf("config.seen = %q (%v)", p.Annotations[ConfigSeenAnnotation], err)
	}
	if name, ok := StaticName(p.Pod); !ok || name != "web" {
		t.Errorf("StaticName = %q, %v; want web", name, ok)
	}
	if _, ok := StaticName(applied.Pod); ok {
		t.Error("StaticName of a pod of up: ok")
	}

	same := parse(o, "/etc/podrun/manifests/web.yaml", staticPod)
	if same.UID != p.UID || same.Hash != p.Hash {
		t.Error("the same file read again has another UID or hash")
	}
	for what, other := range map[string]*Pod{
		"an edit":      parse(o, "/etc/podrun/manifests/web.yaml", strings.Replace(staticPod, "1.36", "1.37", 1)),
		"another file": parse(o, "/etc/podrun/manifests/web2.yaml", staticPod),
		"another node": parse(Options{StaticNode: "edge-2"}, "/etc/podrun/manifests/web.yaml", staticPod),
		"the URL":      parse(o, "https://example.invalid/pods.yaml", staticPod),
	} {
		if other.UID == p.UID || other.Hash == p.Hash || other.Annotations[ConfigHashAnnotation] == p.Annotations[ConfigHashAnnotation] {
			t.Errorf("%s keeps the UID, hash or config.hash", what)
		}
	}
	if u := parse(o, "https://example.invalid/pods.yaml", staticPod); u.Annotations[ConfigSourceAnnotation] != "http" {
		t.Errorf("config.source of the URL's pod = %q, want http", u.Annotations[ConfigSourceAnnotation])
	}

	long := strings.Replace(staticPod, "name: web}", "name: "+strings.Repeat("a", 250)+"}", 1)
	if _, err := o.ParseUnresolved("/m/long.yaml", []byte(long)); err == nil || !strings.Contains(err.Error(), "metadata.name") {
		t.Errorf("a static pod name over 253 characters: %v", err)
	}
}
