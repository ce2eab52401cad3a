package manifest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// readDocument reads the object a document holds.
func (r *reader) readDocument(d document) {
	if d.json != nil {
		r.readJSON(d.src, d.json)
		return
	}
	r.readYAML(d.src, d.yaml)
}

// readObject reads one object and dispatches on its apiVersion and kind.
// prefix is the field path of the object within its document: "" for the
// document itself, "items[3]." for an item of a List.
func (r *reader) readObject(src Source, prefix string, data []byte) {
	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		r.problem(src, strings.TrimSuffix(prefix, "."), err.Error())
		return
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		r.problem(src, strings.TrimSuffix(prefix, "."), fmt.Sprintf("expected a Kubernetes object, got %s", jsonKind(raw)))
		return
	}
	apiVersion, kind := fmt.Sprint(obj["apiVersion"]), fmt.Sprint(obj["kind"])
	switch {
	case len(data) > MaxObjectSize && !(apiVersion == "v1" && kind == "List"):
		r.problem(src, strings.TrimSuffix(prefix, "."), fmt.Sprintf("the object is larger than %s, more than a cluster stores", byteSize(MaxObjectSize)))
	case isZero(obj["apiVersion"]):
		r.problem(src, prefix+"apiVersion", "Required value")
	case isZero(obj["kind"]):
		r.problem(src, prefix+"kind", "Required value")
	case apiVersion == "v1" && kind == "Pod":
		r.readPod(src, prefix, data, obj)
	case apiVersion == "v1" && kind == "ConfigMap":
		r.readConfigMap(src, prefix, data, obj)
	case apiVersion == "v1" && kind == "Secret":
		r.readSecret(src, prefix, data, obj)
	case apiVersion == "v1" && kind == "List" && prefix != "":
		// As kubectl, which reads one level: a List of Lists is refused
		// (reading it nested would cost time quadratic in its depth).
		r.problem(src, prefix+"kind", "a List inside a List is not supported")
	case apiVersion == "v1" && kind == "List":
		r.readJSONList(src, data)
	case apiVersion == "apps/v1" && (kind == "Deployment" || kind == "ReplicaSet" || kind == "StatefulSet" || kind == "DaemonSet"):
		r.readWorkload(src, prefix, data, obj, kind) // workloads.go
	case apiVersion == "batch/v1" && kind == "Job":
		r.readJob(src, prefix, obj) // jobs.go
	case apiVersion == "batch/v1" && kind == "CronJob":
		r.readCronJob(src, prefix, obj) // cronjobs.go
	case skippedKind(apiVersion, kind):
		r.skip(src, prefix, obj, kind) // skipped.go
	default:
		r.problem(src, strings.TrimSuffix(prefix, "."), fmt.Sprintf(
			"kind %q of apiVersion %q is not supported (podrun reads v1 Pod, ConfigMap, Secret and List, apps/v1 Deployment, ReplicaSet, StatefulSet and DaemonSet, batch/v1 Job and CronJob, and skips the kinds only a cluster uses)", kind, apiVersion))
	}
}

// readPod decodes, checks, defaults and validates a pod, and adds it.
func (r *reader) readPod(src Source, prefix string, data []byte, raw map[string]any) {
	p := r.decodePod(src, prefix, data, raw)
	if p == nil {
		return
	}
	if r.opts.StaticNode != "" {
		r.makeStatic(p, src, prefix) // static.go
	}
	r.addPod(p, src, prefix)
}

// decodePod decodes, checks, defaults and validates a pod (nil when it
// does not decode).
func (r *reader) decodePod(src Source, prefix string, data []byte, raw map[string]any) *Pod {
	pod := &corev1.Pod{}
	unsupported := unsupportedFields(raw) // before decode may remove values from raw
	unknown, ok := r.decode(src, prefix, data, raw, pod)
	for _, path := range unsupported {
		if !unknown[path] {
			r.problem(src, prefix+path, notSupported)
		}
	}
	if !ok {
		return nil
	}
	trimSlices(reflect.ValueOf(pod).Elem()) // values.go: what is kept, no more
	clearServerFields(&pod.ObjectMeta)
	pod.Status = corev1.PodStatus{} // accepted and dropped, as kubectl apply does
	Default(pod)
	r.fieldProblems(src, prefix, Validate(pod))
	for _, w := range resourceWarnings(&pod.Spec, field.NewPath("spec")) { // resources.go
		r.set.Warnings = append(r.set.Warnings, fmt.Sprintf("%s: %s%s", src, prefix, w))
	}
	r.fieldProblems(src, prefix, r.opts.admit(pod)) // policy.go
	for _, msg := range r.opts.violations(pod) {
		r.problem(src, strings.TrimSuffix(prefix, "."), msg)
	}
	p := &Pod{Pod: pod, Source: src}
	p.Hash, p.UID = Identity(pod)
	pod.UID = types.UID(p.UID)
	return p
}

// addPod adds a pod read at prefix of src to the set.
func (r *reader) addPod(p *Pod, src Source, prefix string) {
	r.set.Pods = append(r.set.Pods, p)
	r.names = append(r.names, named{"pod", p.Namespace + "/" + p.Name, src})
	r.located(p.Pod, src, prefix)
}

// readConfigMap decodes a ConfigMap and validates its name.
func (r *reader) readConfigMap(src Source, prefix string, data []byte, raw map[string]any) {
	cm := &corev1.ConfigMap{}
	if _, ok := r.decode(src, prefix, data, raw, cm); !ok {
		return
	}
	r.readMeta(src, prefix, &cm.ObjectMeta)
	r.readConfigData(src, prefix, cm) // configrefs.go
	r.names = append(r.names, named{"configmap", cm.Namespace + "/" + cm.Name, src})
	r.set.ConfigMaps = append(r.set.ConfigMaps, cm)
}

// readSecret decodes a Secret and validates its name.
func (r *reader) readSecret(src Source, prefix string, data []byte, raw map[string]any) {
	secret := &corev1.Secret{}
	if _, ok := r.decode(src, prefix, data, raw, secret); !ok {
		return
	}
	r.readMeta(src, prefix, &secret.ObjectMeta)
	r.readSecretData(src, prefix, secret) // configrefs.go
	r.names = append(r.names, named{"secret", secret.Namespace + "/" + secret.Name, src})
	r.located(secret, src, prefix)
	r.set.Secrets = append(r.set.Secrets, secret)
}

// readMeta clears, defaults and validates the metadata of a ConfigMap or Secret.
func (r *reader) readMeta(src Source, prefix string, meta *metav1.ObjectMeta) {
	clearServerFields(meta)
	if meta.Namespace == "" {
		meta.Namespace = metav1.NamespaceDefault
	}
	r.fieldProblems(src, prefix, validateName(meta, field.NewPath("metadata")))
}

// list is a v1 List, as `kubectl get -o yaml` prints several objects.
type list struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []json.RawMessage `json:"items"`
}

// clearServerFields drops the metadata the API server sets, which users may
// bring along from `kubectl get -o yaml` and which kubectl apply ignores.
func clearServerFields(meta *metav1.ObjectMeta) {
	meta.UID = ""
	meta.ResourceVersion = ""
	meta.Generation = 0
	meta.CreationTimestamp = metav1.Time{}
	meta.SelfLink = "" //lint:ignore SA1019 old `kubectl get -o yaml` output still has it
	meta.ManagedFields = nil
}

// fieldProblems records validation errors of an object at prefix.
func (r *reader) fieldProblems(src Source, prefix string, errs field.ErrorList) {
	for i, e := range errs {
		if r.full(src) { // counted, not worded
			r.dropped[src.File] += len(errs) - i
			return
		}
		r.problem(src, prefix+e.Field, e.ErrorBody())
	}
}

// maxTypeErrors bounds the type errors reported for one object.
const maxTypeErrors = 20

// decode decodes data strictly into obj: case-sensitive field names, no
// unknown and no duplicate fields. It records a problem for each and returns
// the paths of the unknown fields. ok is false when a value has the wrong
// type; each such value is recorded, removed from raw and decoding tried
// again, so that all problems are found at once.
func (r *reader) decode(src Source, prefix string, data []byte, raw map[string]any, obj any) (unknown map[string]bool, ok bool) {
	ok = true
	for range maxTypeErrors {
		strict, err := kjson.UnmarshalStrict(data, obj)
		if err == nil {
			return r.strictProblems(src, prefix, strict), ok
		}
		ok = false
		path, msg, remove := decodeError(raw, obj, err)
		r.problem(src, strings.TrimSuffix(prefix+path, "."), msg)
		if remove == nil {
			break
		}
		remove()
		if data, err = json.Marshal(raw); err != nil {
			break
		}
		reflect.ValueOf(obj).Elem().SetZero()
	}
	return map[string]bool{}, false
}

// strictProblems records the strict decoding errors (unknown and duplicate
// fields) and returns the paths of the unknown fields.
func (r *reader) strictProblems(src Source, prefix string, strict []error) map[string]bool {
	unknown := map[string]bool{}
	for _, e := range strict {
		path, msg := strictError(e)
		if msg == "unknown field" {
			unknown[path] = true
		}
		r.problem(src, prefix+path, msg)
	}
	return unknown
}

// strictError splits a strict decoding error (`unknown field "spec.foo"`)
// into its field path and its kind.
func strictError(err error) (path, msg string) {
	fe, ok := err.(interface{ FieldPath() string })
	if !ok {
		return "", err.Error()
	}
	path = fe.FieldPath()
	return path, strings.TrimSuffix(err.Error(), fmt.Sprintf(" %q", path))
}

// typeError matches the decoder's message for a value of the wrong JSON type:
// "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32".
var typeError = regexp.MustCompile(`^json: cannot unmarshal (\w+).* into Go struct field \w+\.(\S+) of type \S+$`)

// decodeError turns a fatal decoding error into a field path, a message and,
// for a value of the wrong type, a function removing the value from raw. The
// decoder names the field without list indices, so the value is looked up in
// raw. A whole number too large for its integer field is out of range, not
// of the wrong type; an invalid quantity is found by its type (quantity.go).
func decodeError(raw map[string]any, obj any, err error) (path, msg string, remove func()) {
	m := typeError.FindStringSubmatch(err.Error())
	if m == nil {
		return badQuantity(raw, obj, err)
	}
	got, dotted := m[1], m[2]
	var segs []string
	for _, s := range strings.Split(dotted, ".") {
		if s != "" && !isUpper(s[0]) { // Go names of inlined structs (VolumeSource) are not in the JSON
			segs = append(segs, s)
		}
	}
	msg = fmt.Sprintf("Invalid type: expected %s, got %s", expectedKind(err), got)
	match := func(v any) bool { return jsonKind(v) == got }
	if got == "number" && expectedKind(err) == "integer" { // 1.5: the one that is not whole
		match = func(v any) bool { f, ok := v.(float64); return ok && f != math.Trunc(f) }
	}
	if lit, lo, hi, ok := outOfRange(err); ok {
		msg = fmt.Sprintf("Invalid value: %s: out of range: must be between %d and %d, inclusive", lit, lo, hi)
		match = func(v any) bool { f, ok := v.(float64); return ok && (f < float64(lo) || f > float64(hi)) }
	}
	path, remove = findPath(raw, segs, match, "", nil)
	if remove == nil {
		path = strings.Join(segs, ".")
	}
	return path, msg, remove
}

// outOfRange reads a type error of the decoder for a whole number given to
// an integer field it does not fit ("cannot unmarshal number 99999999999
// into ... of type int32"): the number as written and the field's bounds.
func outOfRange(err error) (lit string, lo, hi int64, ok bool) {
	v := reflect.Indirect(reflect.ValueOf(err))
	if v.Kind() != reflect.Struct {
		return "", 0, 0, false
	}
	value, typ := v.FieldByName("Value"), v.FieldByName("Type")
	if !value.IsValid() || value.Kind() != reflect.String || !typ.IsValid() || !typ.CanInterface() {
		return "", 0, 0, false
	}
	t, _ := typ.Interface().(reflect.Type)
	lit, isNumber := strings.CutPrefix(value.String(), "number ")
	if !isNumber || t == nil {
		return "", 0, 0, false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
	default:
		return "", 0, 0, false
	}
	if f, _, err := big.ParseFloat(lit, 10, 0, big.ToNearestEven); err != nil || !f.IsInt() {
		return "", 0, 0, false // 1.5: not a whole number, a type error indeed
	}
	hi = int64(1)<<(t.Bits()-1) - 1
	return lit, -hi - 1, hi, true
}

func isUpper(b byte) bool { return 'A' <= b && b <= 'Z' }

// findPath finds the first value that match accepts at the dotted path
// segs below node, looking into every element of the lists on the way. It
// returns the value's full path with list indices and a function removing
// it from its parent (remove is how to remove node itself), or a nil
// function if there is no such value.
func findPath(node any, segs []string, match func(any) bool, path string, remove func()) (string, func()) {
	if len(segs) == 0 && match(node) {
		return path, remove
	}
	switch n := node.(type) {
	case []any:
		for i, el := range n {
			p, rm := findPath(el, segs, match, fmt.Sprintf("%s[%d]", path, i), func() { n[i] = nil })
			if rm != nil {
				return p, rm
			}
		}
	case map[string]any:
		if len(segs) > 0 {
			if child, ok := n[segs[0]]; ok {
				return findPath(child, segs[1:], match, joinPath(path, segs[0]), func() { delete(n, segs[0]) })
			}
			break
		}
		for _, key := range sortedKeys(n) { // a map field: the value of one of its keys
			if match(n[key]) {
				return joinPath(path, key), func() { delete(n, key) }
			}
		}
	}
	return "", nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonKind names the JSON type of a value decoded by encoding/json, as the
// decoder's type errors do.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	default:
		return "null"
	}
}

// expectedKind names the JSON type the decoder expected, read from the Go
// type its type error carries (the error type is internal to sigs.k8s.io/json).
func expectedKind(err error) string {
	v := reflect.Indirect(reflect.ValueOf(err))
	if v.Kind() != reflect.Struct {
		return "another type"
	}
	f := v.FieldByName("Type")
	if !f.IsValid() || !f.CanInterface() {
		return "another type"
	}
	t, ok := f.Interface().(reflect.Type)
	if !ok || t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	default:
		return t.Kind().String()
	}
}
