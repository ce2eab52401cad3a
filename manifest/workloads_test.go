package manifest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: IMAGE}]
`

func deploymentDoc(replicas, image string) string {
	return strings.NewReplacer("REPLICAS", replicas, "IMAGE", image).Replace(deployment)
}

func TestWorkloadPods(t *testing.T) {
	parse := func(doc string) *Set {
		t.Helper()
		set, err := Options{}.ParseUnresolved("w.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	names := func(set *Set) []string {
		var out []string
		for _, p := range set.Pods {
			out = append(out, p.Name)
		}
		return out
	}
	three := parse(deploymentDoc("3", "busybox:1.36"))
	if len(three.Pods) != 3 || strings.Join(three.Workloads, ",") != "shop/Deployment/web" {
		t.Fatalf("pods %v, workloads %v", names(three), three.Workloads)
	}
	hash := three.Pods[0].Labels["pod-template-hash"]
	seen := map[string]bool{}
	for _, p := range three.Pods {
		if !strings.HasPrefix(p.Name, "web-"+hash+"-") || len(p.Name) != len("web-"+hash+"-")+5 || seen[p.Name] {
			t.Errorf("pod name %q: want web-%s-<5 characters>, unique", p.Name, hash)
		}
		seen[p.Name] = true
		if p.Namespace != "shop" || p.Labels["app"] != "web" || Workload(p.Pod) != "Deployment/web" {
			t.Errorf("pod %s: namespace %q, labels %v, workload %q", p.Name, p.Namespace, p.Labels, Workload(p.Pod))
		}
		if ref := p.OwnerReferences; len(ref) != 1 || ref[0].Kind != "ReplicaSet" || ref[0].Name != "web-"+hash || !*ref[0].Controller {
			t.Errorf("pod %s owner %+v, want its ReplicaSet web-%s", p.Name, ref, hash)
		}
	}
	// The same file again: the same pods. Scaled: only the difference.
	if again := names(parse(deploymentDoc("3", "busybox:1.36"))); strings.Join(again, ",") != strings.Join(names(three), ",") {
		t.Errorf("the same file gives other pods: %v, then %v", names(three), again)
	}
	if two := names(parse(deploymentDoc("2", "busybox:1.36"))); strings.Join(two, ",") != strings.Join(names(three)[:2], ",") {
		t.Errorf("scaled to 2: %v, want the first two of %v", two, names(three))
	}
	if zero := parse(deploymentDoc("0", "busybox:1.36")); len(zero.Pods) != 0 || len(zero.Workloads) != 1 {
		t.Errorf("scaled to 0: pods %v, workloads %v", names(zero), zero.Workloads)
	}
	changed := parse(deploymentDoc("3", "busybox:1.37"))
	if h := changed.Pods[0].Labels["pod-template-hash"]; h == hash {
		t.Errorf("a changed template keeps its hash %s", h)
	}

	ss := parse(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db-headless
  replicas: 2
  selector: {matchLabels: {app: db}}
  volumeClaimTemplates: [{metadata: {name: data}}]
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: busybox:1.36, volumeMounts: [{name: data, mountPath: /data}]}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: a, image: busybox:1.36}]}
`)
	if strings.Join(names(ss)[:2], ",") != "db-0,db-1" || len(ss.Pods) != 3 {
		t.Fatalf("pods %v, want db-0, db-1 and one agent", names(ss))
	}
	db1 := ss.Pods[1]
	if db1.Spec.Hostname != "db-1" || db1.Spec.Subdomain != "db-headless" || db1.Labels["statefulset.kubernetes.io/pod-name"] != "db-1" ||
		db1.Labels["apps.kubernetes.io/pod-index"] != "1" || Workload(db1.Pod) != "StatefulSet/db" {
		t.Errorf("db-1: hostname %q, subdomain %q, labels %v, workload %q", db1.Spec.Hostname, db1.Spec.Subdomain, db1.Labels, Workload(db1.Pod))
	}
	if v := db1.Spec.Volumes; len(v) != 1 || v[0].Name != "data" || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "data-db-1" {
		t.Errorf("db-1 volumes %+v, want data: the claim data-db-1", v)
	}
	if a := ss.Pods[2]; !strings.HasPrefix(a.Name, "agent-") || Workload(a.Pod) != "DaemonSet/agent" {
		t.Errorf("the DaemonSet's pod %q, workload %q: want one agent-<suffix>", a.Name, Workload(a.Pod))
	}
}

func TestWorkloadProblems(t *testing.T) {
	_, err := Options{}.ParseUnresolved("w.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: -1
  paused: true
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: busybox:1.36, imagePullPolicy: Sometimes}]
`))
	for _, want := range []string{
		"w.yaml (document 1): spec.paused: a paused Deployment is not supported",
		"w.yaml (document 1): spec.replicas: Invalid value: -1: must be greater than or equal to 0",
		"w.yaml (document 1): spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
		`w.yaml (document 1): spec.template.spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("problems lack %q:\n%v", want, err)
		}
	}
}

func TestSkippedKinds(t *testing.T) {
	set, err := Options{}.ParseUnresolved("bundle.yaml", []byte(`apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: tls}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec: {containers: [{name: app, image: busybox:1.36}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Pods) != 1 || len(set.Notes) != 3 ||
		set.Notes[0] != `bundle.yaml (document 1): Service "web" skipped (a cluster's object: one node has nothing to do with it)` ||
		!strings.Contains(set.Notes[2], `Certificate "tls" skipped (a custom resource`) {
		t.Errorf("pods %d, notes %q", len(set.Pods), set.Notes)
	}
	if _, err := (Options{}).ParseUnresolved("typo.yaml", []byte("apiVersion: v1\nkind: Servce\nmetadata: {name: x}\n")); err == nil {
		t.Error("a kind of a Kubernetes group that does not exist (a typo) is not a problem")
	}
}

func TestWorkloadRollouts(t *testing.T) {
	withStrategy := func(replicas, strategy string) string {
		return strings.Replace(deploymentDoc(replicas, "busybox:1.36"), "  selector:", strategy+"  selector:", 1)
	}
	for _, tc := range []struct {
		name, doc string
		want      Rollout
		problem   string
	}{
		{"defaults of 2 replicas", deploymentDoc("2", "busybox:1.36"), Rollout{Kind: "Deployment", Replicas: 2, MaxSurge: 1}, ""},
		{"defaults of 10 replicas", deploymentDoc("10", "busybox:1.36"), Rollout{Kind: "Deployment", Replicas: 10, MaxSurge: 3, MaxUnavailable: 2}, ""},
		{"defaults of 1 replica", deploymentDoc("1", "busybox:1.36"), Rollout{Kind: "Deployment", Replicas: 1, MaxSurge: 1}, ""},
		{"counts", withStrategy("3", "  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 2}}\n"), Rollout{Kind: "Deployment", Replicas: 3, MaxUnavailable: 2}, ""},
		{"recreate", withStrategy("3", "  strategy: {type: Recreate}\n"), Rollout{Kind: "Deployment", Replicas: 3, Recreate: true}, ""},
		{"both 0", withStrategy("3", "  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0%}}\n"), Rollout{},
			"w.yaml (document 1): spec.strategy.rollingUpdate.maxUnavailable: Invalid value: may not be 0 when `maxSurge` is 0"},
		{"negative", withStrategy("3", "  strategy: {rollingUpdate: {maxSurge: -1}}\n"), Rollout{},
			"w.yaml (document 1): spec.strategy.rollingUpdate.maxSurge: Invalid value: must be greater than or equal to 0"},
		{"statefulset OnDelete", `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  updateStrategy: {type: OnDelete}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: busybox:1.36}]}
`, Rollout{}, "w.yaml (document 1): spec.updateStrategy.type: OnDelete is not supported by podrun: a changed template replaces the pods (RollingUpdate)"},
		{"statefulset parallel", `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: busybox:1.36}]}
`, Rollout{Kind: "StatefulSet", Replicas: 2, MaxUnavailable: 1}, ""},
	} {
		set, err := Options{}.ParseUnresolved("w.yaml", []byte(tc.doc))
		if tc.problem != "" {
			if err == nil || err.Error() != tc.problem {
				t.Errorf("%s: error %v, want %s", tc.name, err, tc.problem)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, r := range set.Rollouts {
			if r != tc.want {
				t.Errorf("%s: rollout %+v, want %+v", tc.name, r, tc.want)
			}
		}
	}
}

// TestOwnedBy: a file's workloads own the pods they make, of any scale or
// template, and no other.
func TestOwnedBy(t *testing.T) {
	set, err := Options{}.ParseUnresolved("w.yaml", []byte(deploymentDoc("2", "busybox:1.36")))
	if err != nil {
		t.Fatal(err)
	}
	other, err := Options{}.ParseUnresolved("w.yaml", []byte(deploymentDoc("1", "busybox:1.37"))) // another template
	if err != nil {
		t.Fatal(err)
	}
	owned := OwnedBy(set.Workloads)
	for _, p := range append(set.Pods, other.Pods...) {
		if !owned(p.Pod) {
			t.Errorf("pod %s of shop/Deployment/web is not owned by it", p.Name)
		}
	}
	elsewhere := set.Pods[0].Pod.DeepCopy()
	elsewhere.Namespace = "default"
	bare := set.Pods[0].Pod.DeepCopy()
	bare.OwnerReferences = nil
	for name, p := range map[string]*corev1.Pod{"another namespace's": elsewhere, "a bare pod": bare, "a pod without record": nil} {
		if owned(p) {
			t.Errorf("%s is owned by shop/Deployment/web", name)
		}
	}
}
