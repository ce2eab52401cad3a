package podoracle

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const kubeletPod = `{
 "metadata": {"name": "web-1", "namespace": "ns-a", "uid": "u-1", "labels": {"app": "web", "x": "1"}},
 "spec": {"nodeName": "anchor-node", "containers": [{"name": "app", "image": "i"}], "volumes": [{"name": "v"}]},
 "status": {
  "phase": "Running", "qosClass": "BestEffort", "hostIP": "192.0.2.10", "podIP": "10.77.0.2",
  "podIPs": [{"ip": "10.77.0.2"}], "startTime": "2026-11-29T19:00:00Z",
  "conditions": [
   {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-29T19:00:00Z"},
   {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [app] in web-1 (u-1)"}
  ],
  "containerStatuses": [{
   "name": "app", "ready": false, "started": true, "restartCount": 1, "image": "i", "imageID": "sha256:1",
   "containerID": "containerd://1",
   "state": {"running": {"startedAt": "2026-11-29T19:00:01Z"}},
   "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "message": "m", "finishedAt": "x"}},
   "user": {"linux": {"uid": 0, "gid": 0}}
  }]
 }
}`

// podrunPod is kubeletPod as another run of it reports it: other name,
// namespace, UID, IPs, times, container ID and node; the same fields.
const podrunPod = `{
 "metadata": {"name": "web-2", "namespace": "ns-b", "uid": "u-2", "labels": {"app": "web", "x": "2"}},
 "spec": {"nodeName": "vm", "containers": [{"name": "app", "image": "i"}], "volumes": [{"name": "v"}]},
 "status": {
  "phase": "Running", "qosClass": "BestEffort", "hostIP": "192.0.2.2", "podIP": "10.88.0.9",
  "podIPs": [{"ip": "10.88.0.9"}], "startTime": "2026-11-29T19:05:00Z",
  "conditions": [
   {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-29T19:05:00Z"},
   {"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [app] in web-2 (u-2)"}
  ],
  "containerStatuses": [{
   "name": "app", "ready": false, "started": true, "restartCount": 1, "image": "i", "imageID": "sha256:2",
   "containerID": "containerd://2",
   "state": {"running": {"startedAt": "2026-11-29T19:05:01Z"}},
   "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "message": "other", "finishedAt": "y"}},
   "user": {"linux": {"gid": 0, "uid": 0}}
  }]
 }
}`

func TestNormalise(t *testing.T) {
	f := Normalise(decode(t, kubeletPod), Options{Replace: map[string]string{"web-1": "<name>"}})
	want := map[string]string{
		"metadata.labels.keys":                               `"app,x"`,
		"metadata.uid":                                       `"<set>"`,
		"status.has.podIPs":                                  `true`,
		"status.hostIP":                                      `"<set>"`,
		"status.startTime":                                   `"<set>"`,
		"status.reason":                                      `null`,
		"status.conditions[Ready].reason":                    `"ContainersNotReady"`,
		"status.conditions[Ready].message":                   `"containers with unready status: [app] in <name> (<uid>)"`,
		"status.conditions[Initialized].reason":              `null`,
		"status.conditions.order":                            `"Initialized,Ready"`,
		"status.containerStatuses[app].state.kind":           `"running"`,
		"status.containerStatuses[app].lastState.kind":       `"terminated"`,
		"status.containerStatuses[app].lastState.exitCode":   `2`,
		"status.containerStatuses[app].imageID":              `"<set>"`,
		"status.containerStatuses[app].user":                 `"{\"linux\":{\"gid\":0,\"uid\":0}}"`,
		"status.containerStatuses[app].has.containerID":      `true`,
		"status.containerStatuses[app].restartCount":         `1`,
		"status.containerStatuses[app].lastState.reason":     `"Error"`,
		"status.containerStatuses[app].state.reason":         Absent,
		"status.containerStatuses[app].lastState.message":    Absent, // last_state_of: kind, reason, exit code
		"status.containerStatuses[app].lastState.finishedAt": Absent,
		"metadata.namespace":                                 Absent, // without Spec
		"spec.nodeName":                                      Absent,
	}
	for k, v := range want {
		if got := get(f, k); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
	s := Normalise(decode(t, kubeletPod), Options{Spec: true})
	for k, v := range map[string]string{
		"spec.nodeName":                    `"<node>"`,
		"spec.containers[app].image":       `"i"`,
		"spec.volumes[v].name":             `"v"`,
		"metadata.namespace":               `"ns-a"`,
		"status.conditions[Ready].message": `"containers with unready status: [app] in web-1 (<uid>)"`,
	} {
		if got := get(s, k); got != v {
			t.Errorf("with Spec: %s = %s, want %s", k, got, v)
		}
	}
	if f := Normalise(nil, Options{}); len(f) != 1 || f["<pod>"] != `"absent"` {
		t.Errorf("no pod: %v", f)
	}
}

func TestFlatten(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Fields
	}{
		{`{}`, Fields{"p": "{}"}},
		{`[]`, Fields{"p": "[]"}},
		{`[{"name": "a", "v": 1}, {"name": "b"}]`, Fields{"p[a].name": `"a"`, "p[a].v": `1`, "p[b].name": `"b"`}},
		{`[{"name": "a"}, {"name": "a"}]`, Fields{"p[0].name": `"a"`, "p[1].name": `"a"`}}, // names not unique: by index
		{`[{"name": "a"}, {"x": 1}]`, Fields{"p[0].name": `"a"`, "p[1].x": `1`}},
		{`["x", 2]`, Fields{"p[0]": `"x"`, "p[1]": `2`}},
		{`{"a": {"b": null}}`, Fields{"p.a.b": `null`}},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.in), &v); err != nil {
			t.Fatal(err)
		}
		got := Fields{}
		flatten(v, "p", got)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.in, got, tc.want)
			continue
		}
		for k, w := range tc.want {
			if got[k] != w {
				t.Errorf("%s: %s = %s, want %s", tc.in, k, got[k], w)
			}
		}
	}
}

func TestSetMark(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want any
	}{
		{nil, nil}, {"", nil}, {[]any{}, nil}, {map[string]any{}, nil},
		{"x", "<set>"}, {[]any{1}, "<set>"}, {map[string]any{"a": 1}, "<set>"}, {false, "<set>"}, {0.0, "<set>"},
	} {
		if got := setMark(tc.in); got != tc.want {
			t.Errorf("setMark(%#v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	a := Normalise(decode(t, kubeletPod), Options{Replace: map[string]string{"web-1": "<name>", "ns-a": "<ns>"}})
	b := Normalise(decode(t, podrunPod), Options{Replace: map[string]string{"web-2": "<name>", "ns-b": "<ns>"}})
	eq, total, diffs := Compare(a, b)
	if len(diffs) != 0 || eq != total || total != len(a) {
		t.Errorf("two runs of one pod: %d/%d equal, %v", eq, total, diffs)
	}

	p := decode(t, podrunPod)
	st := p["status"].(map[string]any)
	delete(st, "podIPs")
	st["phase"] = "Pending"
	b = Normalise(p, Options{Replace: map[string]string{"web-2": "<name>", "ns-b": "<ns>"}})
	eq, total, diffs = Compare(a, b)
	var paths []string
	for _, d := range diffs {
		paths = append(paths, d.Path+"="+d.A+"|"+d.B)
	}
	want := []string{`status.has.podIPs=true|` + Absent, `status.phase="Running"|"Pending"`}
	if !slices.Equal(paths, want) || total != len(a) || eq != total-2 {
		t.Errorf("diffs %v (%d/%d), want %v", paths, eq, total, want)
	}
	eq, total, diffs = Compare(a, b, regexp.MustCompile(`^status\.phase$`))
	if len(diffs) != 1 || total != len(a)-1 || eq != total-1 {
		t.Errorf("ignoring status.phase: %v (%d/%d)", diffs, eq, total)
	}
}
