package manifest

import (
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/resources"
)

// Options are the node's admission rules, which Load and Parse apply to every
// pod after validating it, as a cluster's admission and the kubelet would:
// the Pod Security Standards level, the host paths hostPath volumes may use
// and the unsafe sysctls pods may set. The zero value is the kubelet's
// default: any level, any host path, only the safe sysctls.
type Options struct {
	// Policy is the Pod Security Standards level pods must meet, as a
	// namespace's pod-security.kubernetes.io/enforce label: "privileged",
	// "baseline" or "restricted", always at the latest version; "" checks
	// nothing.
	Policy string
	// AllowedHostPaths are absolute path prefixes; when any is given, a
	// hostPath volume must be under one of them, with PodSecurityPolicy's
	// allowedHostPaths semantics: "/foo" allows /foo and /foo/bar, not /foobar.
	AllowedHostPaths []string
	// AllowedUnsafeSysctls are the kubelet's --allowed-unsafe-sysctls: names
	// ("kernel.msgmax") or prefixes with a trailing "*" ("net.core.*") of
	// namespaced sysctls pods may set besides the safe ones.
	AllowedUnsafeSysctls []string
	// MaxFileSize is the largest manifest file (or stdin, or URL body)
	// read, in bytes; 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// StaticNode, when set, makes every pod read a static pod of the node
	// of that name, as the kubelet names and annotates the pods of its
	// manifest directory and URL (static.go): the daemon's.
	StaticNode string
	// Clock stamps when a static pod was seen (ConfigSeenAnnotation); nil
	// is the real one.
	Clock clock.PassiveClock
}

// NamespacedSysctls are patterns matching every sysctl known to be
// namespaced: as AllowedUnsafeSysctls they admit any pod a node could run,
// for commands that only need the pods' names (down).
var NamespacedSysctls = []string{"kernel.sem", "kernel.shm*", "kernel.msg*", "fs.mqueue.*", "net.*"}

// Check reports the first option that is not well-formed: an unknown
// policy level, a host path that is not absolute, a sysctl pattern that is
// malformed or not namespaced (the kubelet refuses to start with one).
func (o Options) Check() error {
	if o.Policy != "" {
		if _, err := psaapi.ParseLevel(o.Policy); err != nil {
			return fmt.Errorf("policy %q: must be privileged, baseline or restricted", o.Policy)
		}
	}
	for _, p := range o.AllowedHostPaths {
		if !path.IsAbs(p) {
			return fmt.Errorf("allowed host path %q: must be an absolute path", p)
		}
	}
	for _, p := range o.AllowedUnsafeSysctls {
		if len(p) > sysctlMaxLength || !sysctlPatternRE.MatchString(p) {
			return fmt.Errorf("unsafe sysctl pattern %q: must have at most %d characters and match regex %s", p, sysctlMaxLength, sysctlPatternFmt)
		}
		if prefix, _ := strings.CutSuffix(SysctlName(p), "*"); sysctlNamespace(prefix) == "" {
			return fmt.Errorf("unsafe sysctl pattern %q: not known to be namespaced (only IPC and network sysctls can be allowed)", p)
		}
	}
	return nil
}

// Load reads every path: a file; a directory, meaning its *.yaml, *.yml and
// *.json files sorted by name (not recursive, dotfiles skipped); or "-",
// meaning stdin. It splits multi-document YAML (---) and JSON streams, decodes
// strictly, defaults, validates and admits with these options, and returns
// either the whole Set or Problems listing every problem of every path (never
// a partial Set).
func (o Options) Load(paths []string, stdin io.Reader) (*Set, error) {
	return o.read(false, paths, stdin)
}

// read loads paths; unresolved leaves the pods' references to ConfigMaps
// and Secrets to a later Resolve (configrefs.go).
func (o Options) read(unresolved bool, paths []string, stdin io.Reader) (*Set, error) {
	r := reader{opts: o, unresolved: unresolved, dropped: map[string]int{}}
	if len(paths) == 0 {
		r.problem(Source{}, "", "no manifest given")
	}
	for _, p := range paths {
		r.load(p, stdin)
	}
	return r.result()
}

// readData parses one stream, like read.
func (o Options) readData(unresolved bool, file string, data []byte) (*Set, error) {
	r := reader{opts: o, unresolved: unresolved, dropped: map[string]int{}}
	r.parse(file, data)
	return r.result()
}

// admit checks a validated pod against the host paths and unsafe sysctls
// the node allows.
func (o Options) admit(pod *corev1.Pod) field.ErrorList {
	fld := field.NewPath("spec")
	var errs field.ErrorList
	for i, v := range pod.Spec.Volumes {
		if v.HostPath != nil && !o.hostPathAllowed(v.HostPath.Path) {
			errs = append(errs, field.Invalid(fld.Child("volumes").Index(i).Child("hostPath", "path"), v.HostPath.Path,
				"is not under an allowed host path (--allowed-host-paths "+strings.Join(o.AllowedHostPaths, ",")+")"))
		}
	}
	// The kubelet spares a node-critical static pod from the OOM killer
	// (oom_score_adj -997, as Guaranteed); a cluster grants the class only
	// through its admission, so a node with a policy grants it to nobody.
	if o.Policy != "" && o.Policy != string(psaapi.LevelPrivileged) && pod.Spec.PriorityClassName == resources.NodeCriticalPriorityClass {
		errs = append(errs, field.Forbidden(fld.Child("priorityClassName"),
			resources.NodeCriticalPriorityClass+" makes the pod the last the OOM killer picks (oom_score_adj -997): not allowed under --policy "+o.Policy))
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		sfld := fld.Child("securityContext", "sysctls")
		for i, s := range sc.Sysctls {
			if msg := o.sysctlForbidden(SysctlName(s.Name)); msg != "" {
				errs = append(errs, field.Invalid(sfld.Index(i).Child("name"), s.Name, msg))
			}
		}
	}
	return errs
}

// hostPathAllowed reports whether a host path is under one of the allowed
// prefixes (any path when none is given).
func (o Options) hostPathAllowed(p string) bool {
	return len(o.AllowedHostPaths) == 0 || UnderPrefix(p, o.AllowedHostPaths)
}

// UnderPrefix reports whether path p is one of the prefixes or below one,
// comparing whole path elements, as PodSecurityPolicy's allowedHostPaths:
// "/foo" holds /foo and /foo/bar, not /foobar.
func UnderPrefix(p string, prefixes []string) bool {
	p = path.Clean(p)
	return slices.ContainsFunc(prefixes, func(prefix string) bool {
		prefix = path.Clean(prefix)
		return prefix == "/" || p == prefix || strings.HasPrefix(p, prefix+"/")
	})
}

// sysctlForbidden says why the kubelet would refuse a pod setting a sysctl
// (in the dotted form), or "" if it allows it: a safe sysctl, or a
// namespaced one matching AllowedUnsafeSysctls. A sysctl that is not
// namespaced would change the whole host and is never allowed.
func (o Options) sysctlForbidden(name string) string {
	switch {
	case slices.Contains(SafeSysctls, name):
		return ""
	case sysctlNamespace(name) == "":
		return "forbidden sysctl: not namespaced, it would change the whole host (the kubelet never allows it)"
	}
	for _, p := range o.AllowedUnsafeSysctls {
		p = SysctlName(p)
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, prefix) || p == name {
			return ""
		}
	}
	return "forbidden sysctl: not allowlisted (not one of the safe sysctls: allow an unsafe one with --allowed-unsafe-sysctls)"
}

// violations evaluates the pod against the Policy level of the Pod Security
// Standards as the PodSecurity admission plugin does, and returns one
// message per violated check in its words:
// `violates PodSecurity "restricted:latest": host namespaces (hostPID=true)`.
// The pod is evaluated as the API server stores it: with the API defaults
// (Default) and none of the runtime's (podrun's capabilities, seccomp).
func (o Options) violations(pod *corev1.Pod) []string {
	if o.Policy == "" {
		return nil
	}
	level, err := psaapi.ParseLevel(o.Policy)
	if err != nil {
		return []string{err.Error()} // Check refuses such options first
	}
	evaluator, err := psaEvaluator()
	if err != nil {
		return []string{fmt.Sprintf("pod security checks: %v", err)}
	}
	lv := psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}
	var msgs []string
	for _, r := range evaluator.EvaluatePod(lv, &pod.ObjectMeta, &pod.Spec) {
		if r.Allowed {
			continue
		}
		agg := psapolicy.AggregateCheckResults([]psapolicy.CheckResult{r})
		msgs = append(msgs, fmt.Sprintf("violates PodSecurity %q: %s", lv.String(), agg.ForbiddenDetail()))
	}
	return msgs
}

// psaEvaluator holds the Pod Security Standards' checks, built once.
var psaEvaluator = sync.OnceValues(func() (psapolicy.Evaluator, error) {
	return psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
})

// sysctlMaxLength and the regular expressions are the API server's rules for
// sysctl names and the kubelet's for --allowed-unsafe-sysctls patterns
// (dots or slashes between segments; a pattern may end in "*").
const sysctlMaxLength = 253

const (
	sysctlSegment    = `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`
	sysctlNameFmt    = `(` + sysctlSegment + `[\./])*` + sysctlSegment
	sysctlPatternFmt = `(` + sysctlSegment + `[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`
)

var (
	sysctlNameRE    = regexp.MustCompile(`^` + sysctlNameFmt + `$`)
	sysctlPatternRE = regexp.MustCompile(`^` + sysctlPatternFmt + `$`)
)

// sysctlNamespace names the kernel namespace a sysctl (dotted form, or the
// prefix of a pattern) belongs to, as the kubelet's sysctl package knows
// them: "ipc", "net", or "" when it is not known to be namespaced.
func sysctlNamespace(name string) string {
	switch {
	case slices.Contains([]string{"kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
		"kernel.shm", "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.msg"}, name),
		strings.HasPrefix(name, "fs.mqueue."):
		return "ipc"
	case strings.HasPrefix(name, "net."):
		return "net"
	}
	return ""
}
