// Package podoracle compares two pod objects field by field by the rules of
// kubelet-anchor's oracle.py (../shared/kubelet-anchor): what a node
// reports of a pod is flattened into named fields, with what differs by
// nature between two runs of the same pod (UIDs, times, container IDs, IP
// values, node names, the pod's own name and namespace in messages)
// normalised away, and the two flattenings are diffed.
package podoracle

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Options say what Normalise compares beyond oracle.py's status fields.
type Options struct {
	// Spec adds the whole spec (oracle.py does: its two sides default a
	// manifest each). Two pods of one API server have the spec the API
	// server made, which no node writes.
	Spec bool
	// Replace maps strings found in string values (messages) to what they
	// stand for (e.g. a generated pod name to "<name>"); the pod's own UID
	// always becomes "<uid>", as in oracle.py.
	Replace map[string]string
}

// Absent is the value of a field one side does not have.
const Absent = "<absent>"

// Fields are the compared fields by path, each value JSON-encoded.
type Fields map[string]string

// Diff is a field whose values differ.
type Diff struct {
	Path string
	A, B string // JSON, or Absent
}

// Normalise flattens pod (as the API serves it, decoded into a map) into
// oracle.py's fields.
func Normalise(pod map[string]any, o Options) Fields {
	if pod == nil {
		return Fields{"<pod>": enc("absent")}
	}
	md := obj(pod["metadata"])
	st := obj(pod["status"])
	f := Fields{
		"metadata.labels.keys":      enc(keys(obj(md["labels"]))),
		"metadata.annotations.keys": enc(keys(obj(md["annotations"]))),
		"metadata.uid":              enc(setMark(md["uid"])),
		"status.phase":              enc(st["phase"]),
		"status.qosClass":           enc(st["qosClass"]),
		"status.reason":             enc(st["reason"]),
		"status.message":            enc(st["message"]),
		"status.hostIP":             enc(setMark(st["hostIP"])),
		"status.podIP":              enc(setMark(st["podIP"])),
		"status.startTime":          enc(setMark(st["startTime"])),
	}
	if o.Spec {
		// oracle.py's two sides share a namespace; two pods of one API
		// server compared need not.
		f["metadata.namespace"] = enc(md["namespace"])
	}
	for k := range st {
		f["status.has."+k] = enc(true)
	}
	var order []string
	for _, c := range list(st["conditions"]) {
		c := obj(c)
		typ, _ := c["type"].(string)
		order = append(order, typ)
		for _, k := range []string{"status", "reason", "message"} {
			f[fmt.Sprintf("status.conditions[%s].%s", typ, k)] = enc(c[k])
		}
	}
	f["status.conditions.order"] = enc(strings.Join(order, ","))
	for _, key := range []string{"initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"} {
		for _, c := range list(st[key]) {
			c := obj(c)
			prefix := fmt.Sprintf("status.%s[%v].", key, c["name"])
			for k, v := range containerStatus(c) {
				if m, ok := v.(map[string]any); ok {
					flatten(m, prefix+k, f)
				} else {
					f[prefix+k] = enc(v)
				}
			}
		}
	}
	if o.Spec {
		spec := obj(pod["spec"])
		if s, _ := spec["nodeName"].(string); s != "" {
			spec = clone(spec)
			spec["nodeName"] = "<node>"
		}
		flatten(spec, "spec", f)
	}
	replace := map[string]string{}
	for k, v := range o.Replace {
		replace[k] = v
	}
	if uid, _ := md["uid"].(string); uid != "" {
		replace[uid] = "<uid>"
	}
	if len(replace) > 0 {
		// longest first: a name that contains another is replaced whole
		olds := make([]string, 0, len(replace))
		for k := range replace {
			if k != "" {
				olds = append(olds, k)
			}
		}
		slices.SortFunc(olds, func(a, b string) int { return len(b) - len(a) })
		var pairs []string
		for _, k := range olds {
			pairs = append(pairs, k, replace[k])
		}
		r := strings.NewReplacer(pairs...)
		for k, v := range f {
			var s string
			if strings.HasPrefix(v, `"`) && json.Unmarshal([]byte(v), &s) == nil {
				f[k] = enc(r.Replace(s))
			}
		}
	}
	return f
}

// Compare diffs two flattenings: the number of fields equal, the number of
// fields either has, and the differences sorted by path. Fields whose path
// matches one of ignore are left out of all three.
func Compare(a, b Fields, ignore ...*regexp.Regexp) (equal, total int, diffs []Diff) {
	paths := map[string]bool{}
	for k := range a {
		paths[k] = true
	}
	for k := range b {
		paths[k] = true
	}
	sorted := make([]string, 0, len(paths))
next:
	for k := range paths {
		for _, rx := range ignore {
			if rx.MatchString(k) {
				continue next
			}
		}
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		va, vb := get(a, k), get(b, k)
		if va != vb {
			diffs = append(diffs, Diff{Path: k, A: va, B: vb})
		}
	}
	return len(sorted) - len(diffs), len(sorted), diffs
}

func get(f Fields, k string) string {
	if v, ok := f[k]; ok {
		return v
	}
	return Absent
}

// containerStatus is oracle.py's norm_cs.
func containerStatus(c map[string]any) map[string]any {
	o := map[string]any{
		"ready":        c["ready"],
		"started":      c["started"],
		"restartCount": c["restartCount"],
		"state":        stateOf(c["state"], false),
		"lastState":    stateOf(c["lastState"], true),
		"image":        c["image"],
		"imageID":      setMark(c["imageID"]),
		"user":         nil,
	}
	if u, ok := c["user"]; ok {
		o["user"] = enc(u) // Go's encoding sorts keys, as sort_keys=True
	}
	for k := range c {
		o["has."+k] = true
	}
	return o
}

// stateOf is oracle.py's state_of (last: last_state_of): the state's kind
// and its reason, exit code, message and signal.
func stateOf(v any, last bool) map[string]any {
	st := obj(v)
	if len(st) == 0 {
		return map[string]any{"kind": nil}
	}
	kind := strings.Split(keys(st), ",")[0] // one of running, waiting, terminated
	d := obj(st[kind])
	o := map[string]any{"kind": kind}
	want := []string{"reason", "exitCode", "message", "signal"}
	if last {
		want = want[:2]
	}
	for _, k := range want {
		if x, ok := d[k]; ok {
			o[k] = x
		}
	}
	return o
}

// flatten is oracle.py's: maps by key, lists of uniquely named maps by
// name ([app]), other lists by index; empty ones as {} and [].
func flatten(v any, path string, out Fields) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			out[path] = "{}"
		}
		for k, x := range v {
			flatten(x, path+"."+k, out)
		}
	case []any:
		if len(v) == 0 {
			out[path] = "[]"
		}
		named := len(v) > 0
		seen := map[any]bool{}
		for _, x := range v {
			m, ok := x.(map[string]any)
			n, has := m["name"]
			if !ok || !has || seen[n] {
				named = false
				break
			}
			seen[n] = true
		}
		for i, x := range v {
			key := fmt.Sprintf("[%d]", i)
			if named {
				key = fmt.Sprintf("[%v]", x.(map[string]any)["name"])
			}
			flatten(x, path+key, out)
		}
	default:
		out[path] = enc(v)
	}
}

// setMark is "<set>" for a value that is set, else nil.
func setMark(v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if v == "" {
			return nil
		}
	case []any:
		if len(v) == 0 {
			return nil
		}
	case map[string]any:
		if len(v) == 0 {
			return nil
		}
	}
	return "<set>"
}

func keys(m map[string]any) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// enc is v in JSON, "<" and ">" as they are.
func enc(v any) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
