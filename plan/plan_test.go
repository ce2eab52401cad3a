package plan

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/manifest"
)

const fileA, fileB = "/m/a.yaml", "/m/b.yaml"

func pod(name, uid string, ports ...corev1.ContainerPort) *manifest.Pod {
	return &manifest.Pod{Pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: ports}}},
	}, UID: uid, Source: manifest.Source{File: fileA}}
}

func want(name, uid string) Desired { return Desired{Pod: pod(name, uid)} }

// onNode is a pod on the node, complete and running unless changed.
func onNode(name, uid string, edit ...func(*Existing)) Existing {
	p := pod(name, uid).Pod
	p.Status.Phase = corev1.PodRunning
	e := Existing{UID: uid, Namespace: "default", Name: name, Source: fileA, Pod: p, Complete: true, Owned: true}
	for _, fn := range edit {
		fn(&e)
	}
	return e
}

func supervised(e *Existing) { e.Supervised = true }
func incomplete(e *Existing) { e.Complete = false; e.Pod.Status.Phase = corev1.PodPending }
func notOwned(e *Existing)   { e.Owned = false }
func fromB(e *Existing)      { e.Source = fileB }
func notAdoptable(e *Existing) {
	e.NotAdoptable = "pod cannot be adopted: its sandbox is not running"
}

// show renders actions as "op key uid [remove...] [pull-first] [err]".
func show(actions []Action) []string {
	var out []string
	for _, a := range actions {
		s := fmt.Sprintf("%s %s %s", a.Op, a.Key, a.UID)
		if len(a.Remove) > 0 {
			s += " remove=" + strings.Join(a.Remove, ",")
			for _, uid := range a.Remove {
				s += fmt.Sprintf(" (%s)", a.Why[uid])
			}
		}
		if a.PullFirst {
			s += " pull-first"
		}
		if a.Phase != "" {
			s += " phase=" + string(a.Phase)
		}
		if a.Err != nil {
			s += " err=" + a.Err.Error()
		}
		out = append(out, s)
	}
	return out
}

var errBackOff = errors.New("ImagePullBackOff")

// testNode has room for every test pod.
var testNode = admission.Node{Name: "node", Allocatable: corev1.ResourceList{
	corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}}

const portsFailed = "NodePorts: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"

// TestDecide is the table of what happens to a pod, for `up` (no
// supervision, nothing pruned), `up -f` (supervised) and the daemon
// (supervised, pruned, pull before kill).
func TestDecide(t *testing.T) {
	up := Input{Admit: testNode}
	upF := Input{Supervise: true, Admit: testNode}
	daemon := Input{Supervise: true, Prune: true, PullFirst: true, Admit: testNode}
	with := func(base Input, desired []Desired, node []Existing, broken ...string) Input {
		base.Desired, base.Node = desired, node
		base.Broken = map[string]bool{}
		for _, s := range broken {
			base.Broken[s] = true
		}
		return base
	}
	tests := []struct {
		name string
		in   Input
		want []string
	}{
		{"create: nothing on the node", with(up, []Desired{want("web", "u1")}, nil),
			[]string{"create default/web u1"}},
		{"unchanged: same content, complete", with(up, []Desired{want("web", "u1")}, []Existing{onNode("web", "u1")}),
			[]string{"keep default/web u1 phase=Running"}},
		{"unchanged and supervised by this process", with(daemon, []Desired{want("web", "u1")}, []Existing{onNode("web", "u1", supervised)}),
			[]string{"keep default/web u1 phase=Running"}},
		{"adopt: unchanged, nobody supervises it", with(upF, []Desired{want("web", "u1")}, []Existing{onNode("web", "u1")}),
			[]string{"adopt default/web u1 phase=Running"}},
		{"not adoptable: replaced", with(daemon, []Desired{want("web", "u1")}, []Existing{onNode("web", "u1", notAdoptable)}),
			[]string{"replace default/web u1 remove=u1 (pod cannot be adopted: its sandbox is not running) phase=Running"}},
		{"replaced: manifest changed", with(up, []Desired{want("web", "u2")}, []Existing{onNode("web", "u1")}),
			[]string{"replace default/web u2 remove=u1 (manifest changed)"}},
		{"replaced by the daemon: pull first", with(daemon, []Desired{want("web", "u2")}, []Existing{onNode("web", "u1", supervised)}),
			[]string{"replace default/web u2 remove=u1 (manifest changed) pull-first"}},
		{"replaced: half made by a crash", with(up, []Desired{want("web", "u1")}, []Existing{onNode("web", "u1", incomplete)}),
			[]string{"replace default/web u1 remove=u1 (left incomplete)"}},
		{"replaced: a pod of another source with the name", with(daemon, []Desired{want("web", "u2")}, []Existing{onNode("web", "u1", notOwned)}),
			[]string{"replace default/web u2 remove=u1 (manifest changed) pull-first"}},
		{"image back-off: stays pending", with(daemon, []Desired{{Pod: pod("web", "u1"), ImageWait: errBackOff}}, []Existing{onNode("web", "u1", incomplete)}),
			[]string{"wait default/web u1 err=ImagePullBackOff"}},
		{"image back-off of a replacement: replace (pull first decides)", with(daemon, []Desired{{Pod: pod("web", "u2"), ImageWait: errBackOff}}, []Existing{onNode("web", "u1", supervised)}),
			[]string{"replace default/web u2 remove=u1 (manifest changed) pull-first"}},
		{"image back-off, nothing there: create (its pull fails fast)", with(daemon, []Desired{{Pod: pod("web", "u1"), ImageWait: errBackOff}}, nil),
			[]string{"create default/web u1"}},
		{"removed: no source wants it", with(daemon, nil, []Existing{onNode("web", "u1", supervised)}),
			[]string{"remove default/web u1"}},
		{"up never removes", with(up, nil, []Existing{onNode("web", "u1")}), nil},
		{"up does not replace a pod the daemon owns", with(up, []Desired{want("web", "u2")}, []Existing{onNode("web", "u1", fromB, func(e *Existing) { e.Yield = true })}),
			[]string{"reject default/web u2 err=pod default/web belongs to the running podrun daemon (from /m/b.yaml): change it there, or remove that file first; nothing was changed"}},
		{"up of the daemon's own pod, unchanged", with(up, []Desired{want("web", "u1")}, []Existing{onNode("web", "u1", func(e *Existing) { e.Yield = true })}),
			[]string{"keep default/web u1 phase=Running"}},
		{"the daemon never removes what it does not own", with(daemon, nil, []Existing{onNode("web", "u1", notOwned)}), nil},
		{"broken source: its pods kept and adopted", with(daemon, nil, []Existing{onNode("web", "u1"), onNode("old", "u3", fromB, supervised)}, fileA),
			[]string{"remove default/old u3", "adopt default/web u1 phase=Running"}},
		{"broken source: supervised or unadoptable pods left as they are", with(daemon, nil, []Existing{onNode("web", "u1", supervised), onNode("db", "u2", notAdoptable)}, fileA),
			nil},
		{"broken source: a refused pod left as it is (nothing runs to adopt)", with(daemon, nil, []Existing{onNode("web", "u1", func(e *Existing) { e.Refused = true })}, fileA),
			nil},
		{"a pod removed frees its host port for a new one", with(daemon, []Desired{{Pod: pod("new", "u2", tcp(8080, ""))}},
			[]Existing{onNode("old", "u1", supervised, func(e *Existing) { e.Pod.Spec.Containers[0].Ports = []corev1.ContainerPort{tcp(8080, "")} })}),
			[]string{"remove default/old u1", "create default/new u2"}},
		{"a pod kept (broken source) holds its host port", with(daemon, []Desired{{Pod: pod("new", "u2", tcp(8080, ""))}},
			[]Existing{onNode("old", "u1", fromB, supervised, func(e *Existing) { e.Pod.Spec.Containers[0].Ports = []corev1.ContainerPort{tcp(8080, "")} })}, fileB),
			[]string{"reject default/new u2 err=pod default/new refused by the node: " + portsFailed + " (0.0.0.0:8080/TCP held by pod default/old); nothing was started"}},
		{"one pod of a two-pod file changed: removals first, then each pod in order",
			with(daemon, []Desired{want("db", "u2"), want("web", "u1b")},
				[]Existing{onNode("db", "u2", supervised), onNode("gone", "u9", fromB), onNode("web", "u1", supervised)}),
			[]string{"remove default/gone u9", "keep default/db u2 phase=Running", "replace default/web u1b remove=u1 (manifest changed) pull-first"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(Decide(tt.in)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decide =\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func tcp(host int32, ip string) corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: 80, HostPort: host, HostIP: ip, Protocol: corev1.ProtocolTCP}
}

// TestHostPortConflicts: the scheduler's NodePorts rule (same protocol and
// port, and the same address or either on every address), against the
// node's pods and earlier pods of the same call; a pod of the same name is
// being replaced and a finished pod has released its network: they hold
// nothing. A rejected pod touches nothing.
func TestHostPortConflicts(t *testing.T) {
	udp := corev1.ContainerPort{ContainerPort: 53, HostPort: 8053, Protocol: corev1.ProtocolUDP}
	node := []Existing{
		{Namespace: "default", Name: "held", Pod: pod("held", "", tcp(8080, ""), udp).Pod},
		{Namespace: "default", Name: "local", Pod: pod("local", "", tcp(9090, "127.0.0.1")).Pod},
		{Namespace: "default", Name: "web", UID: "w0", Pod: pod("web", "", tcp(7070, "")).Pod},
		{Namespace: "default", Name: "done", Pod: pod("done", "", tcp(5050, "")).Pod}, // finished: its network is released
		{Namespace: "default", Name: "crashed"},                                       // no state: nothing known
	}
	node[3].Pod.Status.Phase = corev1.PodSucceeded
	names := []string{"a", "b", "c", "d", "web", "e", "f", "g", "h"}
	ports := [][]corev1.ContainerPort{
		{tcp(8080, "127.0.0.1")}, // held on every address
		{tcp(8053, "")},          // ok: 8053 is held for UDP
		{tcp(9090, "127.0.0.2")}, // ok: another address
		{tcp(9090, "0.0.0.0")},   // every address includes 127.0.0.1 and c's 127.0.0.2
		{tcp(7070, "")},          // ok: replaces web
		{tcp(6060, "")},          // ok
		{tcp(6060, "10.0.0.1")},  // e of this call holds it
		{{ContainerPort: 80}},    // no host port
		{tcp(5050, "")},          // ok: done has finished
	}
	var desired []Desired
	for i, n := range names {
		desired = append(desired, Desired{Pod: pod(n, "u-"+n, ports[i]...)})
	}
	rejected := map[string]string{}
	for _, a := range Decide(Input{Desired: desired, Node: node, Admit: testNode}) {
		if a.Op == Reject {
			rejected[a.Key] = a.Err.Error()
		}
	}
	want := map[string]string{
		"default/a": "pod default/a refused by the node: " + portsFailed + " (127.0.0.1:8080/TCP held by pod default/held); nothing was started",
		"default/d": "pod default/d refused by the node: " + portsFailed + " (0.0.0.0:9090/TCP held by pod default/local, 0.0.0.0:9090/TCP held by pod default/c); nothing was started",
		"default/f": "pod default/f refused by the node: " + portsFailed + " (10.0.0.1:6060/TCP held by pod default/e); nothing was started",
	}
	if !reflect.DeepEqual(rejected, want) {
		t.Errorf("rejected = %v\nwant %v", rejected, want)
	}
}

// TestAdmission: a pod not yet running is admitted against the pods the
// node keeps and those admitted before it in the same call; a running pod
// is never re-admitted (nor touched by another's admission); a refused
// pod recorded Failed stays so until its content changes; a replacement
// is admitted without the pods it replaces.
func TestAdmission(t *testing.T) {
	mem := func(q string) func(*manifest.Pod) {
		return func(p *manifest.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
		}
	}
	podMem := func(name, uid, q string) *manifest.Pod {
		p := pod(name, uid)
		mem(q)(p)
		return p
	}
	running := func(name, uid, q string, edit ...func(*Existing)) Existing {
		e := onNode(name, uid, edit...)
		e.Pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
		return e
	}
	refused := func(e *Existing) { e.Refused, e.Pod.Status.Phase = true, corev1.PodFailed }
	const outOfMemory = "OutOfmemory: Node didn't have enough resource: memory, requested: "
	for _, tc := range []struct {
		name    string
		desired []Desired
		node    []Existing
		want    []string // op and, for a reject, the start of its refusal
	}{
		{"fits next to a running pod", []Desired{{Pod: podMem("b", "u2", "1Gi")}}, []Existing{running("a", "u1", "3Gi")},
			[]string{"create"}},
		{"too big next to a running pod", []Desired{{Pod: podMem("b", "u2", "2Gi")}}, []Existing{running("a", "u1", "3Gi")},
			[]string{"reject " + outOfMemory + "2147483648, used: 3221225472, capacity: 4294967296"}},
		{"a finished pod holds nothing", []Desired{{Pod: podMem("b", "u2", "2Gi")}},
			[]Existing{running("a", "u1", "3Gi", func(e *Existing) { e.Pod.Status.Phase = corev1.PodSucceeded })},
			[]string{"create"}},
		{"earlier pods of the call count", []Desired{{Pod: podMem("a", "u1", "3Gi")}, {Pod: podMem("b", "u2", "2Gi")}}, nil,
			[]string{"create", "reject " + outOfMemory + "2147483648, used: 3221225472"}},
		{"a refused pod frees what it asked for", []Desired{{Pod: podMem("a", "u1", "5Gi")}, {Pod: podMem("b", "u2", "2Gi")}}, nil,
			[]string{"reject " + outOfMemory + "5368709120, used: 0", "create"}},
		{"a running pod is kept (adopted), whatever it asks", []Desired{{Pod: podMem("a", "u1", "8Gi")}}, []Existing{running("a", "u1", "8Gi")},
			[]string{"adopt"}},
		{"a replacement is admitted without the pod it replaces", []Desired{{Pod: podMem("a", "u2", "3Gi")}}, []Existing{running("a", "u1", "3Gi")},
			[]string{"replace"}},
		{"a refused pod recorded Failed stays so", []Desired{{Pod: podMem("a", "u1", "8Gi")}}, []Existing{running("a", "u1", "8Gi", refused)},
			[]string{"keep"}},
		{"a refused pod whose file changed is admitted again", []Desired{{Pod: podMem("a", "u2", "1Gi")}}, []Existing{running("a", "u1", "8Gi", refused)},
			[]string{"replace"}},
		{"nodeSelector", []Desired{{Pod: func() *manifest.Pod {
			p := pod("a", "u1")
			p.Spec.NodeSelector = map[string]string{"disktype": "ssd"}
			return p
		}()}}, nil, []string{"reject NodeAffinity: Predicate NodeAffinity failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Desired: tc.desired, Node: tc.node, Admit: testNode, Supervise: true}
			var got []string
			for _, a := range Decide(in) {
				s := string(a.Op)
				if a.Refusal != nil {
					s += " " + a.Refusal.Error()
				}
				got = append(got, s)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Decide = %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("action %d = %q, want %q...", i, got[i], tc.want[i])
				}
			}
		})
	}
}
