package manifest

import (
	"fmt"
	"sort"
	"strings"
)

// notSupported is the problem of a field podrun does not implement yet.
const notSupported = "field not supported by podrun yet"

// supportedPodFields lists the fields of a Pod document that podrun
// implements, as dotted paths in which "[]" stands for the elements of a list.
// A listed field is supported together with everything below it. Setting any
// other field is a problem, so that a manifest never means less on podrun than
// on Kubernetes without the user being told. To support a field, add its path.
var supportedPodFields = join(
	[]string{
		"apiVersion",
		"kind",
		"status", // accepted and dropped, as kubectl apply drops it

		"metadata.name",
		"metadata.namespace",
		"metadata.labels",
		"metadata.annotations",
		// Set by the API server; accepted and ignored, as kubectl apply ignores them.
		"metadata.uid",
		"metadata.resourceVersion",
		"metadata.generation",
		"metadata.creationTimestamp",
		"metadata.selfLink",
		"metadata.managedFields",

		"spec.volumes[].name",
		"spec.volumes[].hostPath.path",
		"spec.volumes[].hostPath.type",
		"spec.volumes[].emptyDir.medium",
		"spec.volumes[].emptyDir.sizeLimit",
		"spec.volumes[].emptyDir.mode",
		"spec.volumes[].persistentVolumeClaim", // a named local volume (volumes/claims.go)
		// Config volumes (configvolumes.go, configrefs.go); projected
		// serviceAccountToken, clusterTrustBundle and podCertificate sources
		// need an API server and stay rejected.
		"spec.volumes[].configMap",
		"spec.volumes[].secret",
		"spec.volumes[].downwardAPI",
		"spec.volumes[].projected.defaultMode",
		"spec.volumes[].projected.sources[].configMap",
		"spec.volumes[].projected.sources[].secret",
		"spec.volumes[].projected.sources[].downwardAPI",

		"spec.restartPolicy",
		"spec.terminationGracePeriodSeconds",
		"spec.hostNetwork",
		"spec.hostPID",
		"spec.hostIPC",
		"spec.shareProcessNamespace",
		"spec.hostname",
		"spec.subdomain",
		"spec.setHostnameAsFQDN",
		"spec.dnsPolicy", // ClusterFirst falls back to Default: podrun has no cluster DNS
		"spec.dnsConfig",
		"spec.hostAliases",
		"spec.enableServiceLinks",
		"spec.imagePullSecrets", // each must name a pull Secret of the same input (pullsecrets.go)
		// podrun runs no API server: the service account names are accepted,
		// but no token is mounted whatever automountServiceAccountToken says.
		"spec.serviceAccountName",
		"spec.serviceAccount",
		"spec.automountServiceAccountToken",
		// securityContext (security.go); windowsOptions and
		// seLinuxChangePolicy are not supported.
		"spec.securityContext.seLinuxOptions",
		"spec.securityContext.runAsUser",
		"spec.securityContext.runAsGroup",
		"spec.securityContext.runAsNonRoot",
		"spec.securityContext.supplementalGroups",
		"spec.securityContext.supplementalGroupsPolicy", // Merge or Strict (spec.MergeImageGroups)
		"spec.securityContext.fsGroup",
		"spec.securityContext.fsGroupChangePolicy",
		"spec.securityContext.sysctls",
		"spec.securityContext.seccompProfile",
		"spec.securityContext.appArmorProfile",
		// Admitted as the kubelet admits a pod (admission): nodeName,
		// nodeSelector, required node affinity; the rest of scheduling
		// means nothing on one machine: accepted and ignored.
		"spec.nodeName",
		"spec.nodeSelector",
		"spec.affinity",
		"spec.schedulerName",
		"spec.priority",
		"spec.priorityClassName",
		"spec.preemptionPolicy",
		"spec.tolerations",
		"spec.topologySpreadConstraints",
		// The node's side of a pod's life: the active deadline is enforced as
		// the kubelet does (package eviction); os.name must be linux (node.go).
		"spec.activeDeadlineSeconds",
		"spec.hostnameOverride", // the pod's hostname (sandbox.PodHostname)
		"spec.os",
		// cpu and memory become cgroup settings (resources.go); other
		// resource names are refused by validation.
		"spec.resources.requests",
		"spec.resources.limits",
	},
	prefixed("spec.initContainers[].", supportedContainerFields),
	// "Always": a native sidecar; else the init container's own policy and
	// rules (supervisor/supervisor.go).
	[]string{"spec.initContainers[].restartPolicy", "spec.initContainers[].restartPolicyRules"},
	prefixed("spec.containers[].", supportedContainerFields),
	// A container's own restart policy and rules (package supervisor).
	[]string{"spec.containers[].restartPolicy", "spec.containers[].restartPolicyRules"},
)

// supportedContainerFields are the supported fields of init and app containers.
var supportedContainerFields = []string{
	"name",
	"image",
	"command",
	"args",
	"workingDir",
	"ports[].name",
	"ports[].containerPort",
	"ports[].protocol",
	"ports[].hostPort",
	"ports[].hostIP",
	"env[].name",
	"env[].value",
	"env[].valueFrom.fileKeyRef", // an env file in an emptyDir (spec/env.go)
	"env[].valueFrom.fieldRef",
	"env[].valueFrom.resourceFieldRef",
	"env[].valueFrom.configMapKeyRef",
	"env[].valueFrom.secretKeyRef",
	"envFrom[].prefix",
	"envFrom[].configMapRef",
	"envFrom[].secretRef",
	"volumeMounts[].name",
	"volumeMounts[].mountPath",
	"volumeMounts[].readOnly",
	"volumeMounts[].subPath",
	"volumeMounts[].subPathExpr",
	"imagePullPolicy",
	"terminationMessagePath",
	"terminationMessagePolicy",
	"livenessProbe",
	"readinessProbe",
	"startupProbe",
	"lifecycle.postStart.exec",
	"lifecycle.postStart.httpGet",
	"lifecycle.postStart.sleep",
	"lifecycle.preStop.exec",
	"lifecycle.preStop.httpGet",
	"lifecycle.preStop.sleep",
	"lifecycle.stopSignal",
	// securityContext (security.go): not windowsOptions.
	"securityContext.seLinuxOptions",
	"securityContext.runAsUser",
	"securityContext.runAsGroup",
	"securityContext.runAsNonRoot",
	"securityContext.privileged",
	"securityContext.capabilities",
	"securityContext.readOnlyRootFilesystem",
	"securityContext.allowPrivilegeEscalation",
	"securityContext.seccompProfile",
	"securityContext.appArmorProfile",
	"securityContext.procMount",
	// cpu and memory (resources.go); not claims (dynamic resource allocation).
	"resources.requests",
	"resources.limits",
	// Held by a stream keeper and served by podrun attach (attach package).
	"stdin",
	"stdinOnce",
	"tty",
	// Accepted and ignored: podrun never resizes a container in place (a
	// changed resources field replaces the pod), so no policy applies.
	"resizePolicy",
}

// zeroMatters lists the fields whose zero value means something else than
// leaving them unset (runAsUser: 0 is root, not the image's user), so that
// setting them to zero still counts as setting them.
var zeroMatters = setOf(join(
	[]string{
		"spec.hostUsers",
		"spec.securityContext.runAsUser",
		"spec.securityContext.runAsGroup",
		"spec.securityContext.fsGroup",
		"spec.securityContext.supplementalGroups[]",
	},
	prefixed("spec.initContainers[].", zeroMattersInContainers),
	prefixed("spec.containers[].", zeroMattersInContainers),
	prefixed("spec.ephemeralContainers[].", zeroMattersInContainers),
))

var zeroMattersInContainers = []string{
	"securityContext.runAsUser",
	"securityContext.runAsGroup",
	"securityContext.allowPrivilegeEscalation",
}

// fieldTree is supportedPodFields as a tree: each key maps to the tree below
// it, "[]" to the tree of list elements; a nil tree supports everything below.
type fieldTree map[string]fieldTree

var supportedPodTree = buildTree(supportedPodFields)

func buildTree(paths []string) fieldTree {
	root := fieldTree{}
	for _, path := range paths {
		node := root
		segs := strings.Split(strings.ReplaceAll(path, "[]", ".[]"), ".")
		for i, seg := range segs {
			if sub, ok := node[seg]; ok && sub == nil {
				break // already supported with everything below
			}
			if i == len(segs)-1 {
				node[seg] = nil
				break
			}
			if node[seg] == nil {
				node[seg] = fieldTree{}
			}
			node = node[seg]
		}
	}
	return root
}

// unsupportedFields returns the paths of the fields set in a raw Pod document
// that podrun does not support, outermost first: a whole readinessProbe is
// one path. Zero values (null, {}, [], "", false, 0) count as unset, so that
// `resources: {}` and `kubectl get -o yaml` output pass.
func unsupportedFields(raw map[string]any) []string {
	var paths []string
	walkUnsupported(raw, supportedPodTree, "", "", &paths)
	return paths
}

// walkUnsupported appends to paths the unsupported fields set below v. path is
// v's path with list indices, generic the same with "[]" instead.
func walkUnsupported(v any, tree fieldTree, path, generic string, paths *[]string) {
	if tree == nil {
		return
	}
	switch n := v.(type) {
	case map[string]any:
		if _, wantsList := tree["[]"]; wantsList {
			return // a type error, which decoding reports
		}
		for _, key := range sortedKeys(n) {
			sub, ok := tree[key]
			switch {
			case ok:
				walkUnsupported(n[key], sub, joinPath(path, key), joinPath(generic, key), paths)
			case isSet(n[key], joinPath(generic, key)):
				*paths = append(*paths, joinPath(path, key))
			}
		}
	case []any:
		for i, el := range n {
			walkUnsupported(el, tree["[]"], fmt.Sprintf("%s[%d]", path, i), generic+"[]", paths)
		}
	}
}

// isSet reports whether v, found at the generic path, sets anything.
func isSet(v any, generic string) bool {
	switch n := v.(type) {
	case nil:
		return false
	case map[string]any:
		for key, child := range n {
			if isSet(child, joinPath(generic, key)) {
				return true
			}
		}
		return false
	case []any:
		for _, child := range n {
			if isSet(child, generic+"[]") {
				return true
			}
		}
		return false
	default:
		return !isZero(v) || zeroMatters[generic]
	}
}

// isZero reports whether a raw JSON value is null, "", false, 0, {} or [].
func isZero(v any) bool {
	switch n := v.(type) {
	case nil:
		return true
	case string:
		return n == ""
	case bool:
		return !n
	case float64:
		return n == 0
	case map[string]any:
		return len(n) == 0
	case []any:
		return len(n) == 0
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

func prefixed(prefix string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = prefix + p
	}
	return out
}

func setOf(items []string) map[string]bool {
	set := make(map[string]bool, len(items))
	for _, item := range items {
		set[item] = true
	}
	return set
}
