package manifest

import (
	"fmt"
	"math"
	"net"
	"path"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podrun/podrun/resources"
	"github.com/podrun/podrun/rollout/progress"
	"github.com/podrun/podrun/updates"
)

// Validate checks a defaulted pod the way the API server would, restricted to
// the fields podrun supports, and returns every error found. It checks values,
// not which fields are set: fields podrun does not support are found by Parse
// in the document the user wrote.
func Validate(pod *corev1.Pod) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := validateName(&pod.ObjectMeta, meta)
	errs = append(errs, validateLabels(pod.Labels, meta.Child("labels"))...)
	errs = append(errs, validateAnnotations(pod.Annotations, meta.Child("annotations"))...)
	errs = append(errs, validateLockVolume(pod, meta.Child("annotations"))...)
	return append(errs, validateSpec(&pod.Spec, field.NewPath("spec"))...)
}

// validateLockVolume checks that podrun's update-lock annotation, when set,
// names an emptyDir volume of the pod: a lock the daemon would never find
// (a typo, another kind of volume) is refused, not silently no lock.
func validateLockVolume(pod *corev1.Pod, fld *field.Path) field.ErrorList {
	name, ok := pod.Annotations[updates.LockVolumeAnnotation]
	if !ok {
		return nil
	}
	fld = fld.Key(updates.LockVolumeAnnotation)
	for _, v := range pod.Spec.Volumes {
		if v.Name != name {
			continue
		}
		if v.EmptyDir == nil {
			return field.ErrorList{field.Invalid(fld, name, "names a volume that is not an emptyDir: the update lock lives in an emptyDir volume of the pod")}
		}
		return nil
	}
	return field.ErrorList{field.Invalid(fld, name, "names no volume of the pod: it must name one of its emptyDir volumes")}
}

// validateName checks an object's name (a DNS-1123 subdomain) and namespace
// (a DNS-1123 label).
func validateName(meta *metav1.ObjectMeta, fld *field.Path) field.ErrorList {
	errs := validateDNS(meta.Name, fld.Child("name"), validation.IsDNS1123Subdomain)
	return append(errs, validateDNS(meta.Namespace, fld.Child("namespace"), validation.IsDNS1123Label)...)
}

// validateDNS checks a required name with one of the validation.IsDNS* functions.
func validateDNS(name string, fld *field.Path, check func(string) []string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	return invalid(fld, name, check(name))
}

// invalid turns the messages of a validation.Is* function into errors.
func invalid(fld *field.Path, value any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(fld, value, msg))
	}
	return errs
}

// validateLabels checks labels key by key, in key order so that errors come in
// a stable order.
func validateLabels(labels map[string]string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedStringKeys(labels) {
		errs = append(errs, metav1validation.ValidateLabels(map[string]string{k: labels[k]}, fld)...)
	}
	return errs
}

// validateAnnotations checks annotation keys in key order, then their total
// size, and the value of podrun's own progress-deadline annotation.
func validateAnnotations(annotations map[string]string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedStringKeys(annotations) {
		errs = append(errs, apivalidation.ValidateAnnotations(map[string]string{k: ""}, fld)...)
	}
	if v, ok := annotations[progress.DeadlineAnnotation]; ok {
		if _, err := progress.ParseDeadline(v, fld.Key(progress.DeadlineAnnotation)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := apivalidation.ValidateAnnotationsSize(annotations); err != nil {
		errs = append(errs, field.TooLong(fld, "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return errs
}

func validateSpec(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	volumes, errs := validateVolumes(spec.Volumes, fld.Child("volumes"))
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(fld.Child("containers"), ""))
	}
	errs = append(errs, validateContainerNames(spec, fld)...)
	ctx := containerContext{volumes: volumes, hostNetwork: spec.HostNetwork}
	if spec.OS != nil {
		ctx.osName = spec.OS.Name
	}
	for i := range spec.InitContainers {
		c, f := &spec.InitContainers[i], fld.Child("initContainers").Index(i)
		errs = append(errs, validateContainer(c, f, ctx)...)
		errs = append(errs, validateInitLifecycle(c, spec.TerminationGracePeriodSeconds, f)...)
	}
	for i := range spec.Containers {
		c, f := &spec.Containers[i], fld.Child("containers").Index(i)
		errs = append(errs, validateContainer(c, f, ctx)...)
		errs = append(errs, validateLifecycle(c, spec.TerminationGracePeriodSeconds, f)...)
		errs = append(errs, validateRestartRules(c, f)...)
	}
	errs = append(errs, validateHostPorts(spec.InitContainers, fld.Child("initContainers"))...)
	errs = append(errs, validateHostPorts(spec.Containers, fld.Child("containers"))...)
	errs = append(errs, validateEnum(spec.RestartPolicy, fld.Child("restartPolicy"),
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*g, fld.Child("terminationGracePeriodSeconds"))...)
		errs = append(errs, validateDuration(*g, fld.Child("terminationGracePeriodSeconds"))...)
	}
	errs = append(errs, validateNetwork(spec, fld)...)  // network.go
	errs = append(errs, validateSecurity(spec, fld)...) // security.go
	errs = append(errs, validateResources(spec, fld)...)
	errs = append(errs, validateNodeFields(spec, fld)...) // node.go

	// env valueFrom, envFrom and subPathExpr (env.go)
	errs = append(errs, validateEnvSources(spec, fld)...)
	if spec.Hostname != "" {
		errs = append(errs, invalid(fld.Child("hostname"), spec.Hostname, validation.IsDNS1123Label(spec.Hostname))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, invalid(fld.Child("subdomain"), spec.Subdomain, validation.IsDNS1123Label(spec.Subdomain))...)
	}
	return append(errs, validateHostnameOverride(spec, fld.Child("hostnameOverride"))...)
}

// maxDurationSeconds is the most seconds a time.Duration holds (292
// years): a grace period or a deadline of more wrapped to a negative one
// (kill at once, fail at once).
const maxDurationSeconds = math.MaxInt64 / int64(time.Second)

// validateDuration refuses an int64 number of seconds that podrun turns
// into a time.Duration when it is more than one holds.
func validateDuration(seconds int64, fld *field.Path) field.ErrorList {
	if seconds > maxDurationSeconds {
		return field.ErrorList{field.Invalid(fld, seconds, fmt.Sprintf("must be less than or equal to %d, the most seconds a duration holds", maxDurationSeconds))}
	}
	return nil
}

// validateHostnameOverride is the API server's check (HostnameOverride): a
// DNS subdomain of at most 64 characters, not with hostNetwork or
// setHostnameAsFQDN.
func validateHostnameOverride(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	o := spec.HostnameOverride
	if o == nil {
		return nil
	}
	var errs field.ErrorList
	if len(*o) > 64 {
		errs = append(errs, field.TooLong(fld, *o, 64))
	}
	errs = append(errs, invalid(fld, *o, validation.IsDNS1123Subdomain(*o))...)
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(fld, "may not be set when `hostNetwork` is true"))
	}
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(fld, "may not be set when `setHostnameAsFQDN` is true"))
	}
	return errs
}

// validateEnum checks a required value against its allowed values.
func validateEnum[T ~string](value T, fld *field.Path, allowed ...T) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fld, value, allowed)}
}

// validateVolumes checks the volumes and returns the set of their names.
func validateVolumes(volumes []corev1.Volume, fld *field.Path) (map[string]bool, field.ErrorList) {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range volumes {
		v, vfld := &volumes[i], fld.Index(i)
		errs = append(errs, validateDNS(v.Name, vfld.Child("name"), validation.IsDNS1123Label)...)
		if names[v.Name] {
			errs = append(errs, field.Duplicate(vfld.Child("name"), v.Name))
		}
		names[v.Name] = true
		errs = append(errs, validateVolumeSource(&v.VolumeSource, vfld)...)
	}
	return names, errs
}

// validateVolumeSource checks that exactly one volume source is set, and the
// source if it is one podrun supports.
func validateVolumeSource(src *corev1.VolumeSource, fld *field.Path) field.ErrorList {
	switch n := countSources(src); {
	case n == 0:
		return field.ErrorList{field.Required(fld, "must specify a volume type")}
	case n > 1:
		return field.ErrorList{field.Forbidden(fld, "may not specify more than 1 volume type")}
	case src.HostPath != nil:
		return validateHostPath(src.HostPath, fld.Child("hostPath"))
	case src.EmptyDir != nil:
		return validateEmptyDir(src.EmptyDir, fld.Child("emptyDir"))
	case src.PersistentVolumeClaim != nil:
		// The claim names a directory of the node (volumes/claims.go): it
		// must be a claim's name, as the API server would find one.
		c := fld.Child("persistentVolumeClaim", "claimName")
		if src.PersistentVolumeClaim.ClaimName == "" {
			return field.ErrorList{field.Required(c, "")}
		}
		return validateDNS(src.PersistentVolumeClaim.ClaimName, c, validation.IsDNS1123Subdomain)
	}
	return validateConfigVolume(src, fld) // configvolumes.go
}

// countSources counts the volume sources set (every field of VolumeSource is
// a pointer to one kind of source).
func countSources(src *corev1.VolumeSource) int {
	n := 0
	v := reflect.ValueOf(src).Elem()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

func validateHostPath(hp *corev1.HostPathVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case hp.Path == "":
		errs = append(errs, field.Required(fld.Child("path"), ""))
	case !path.IsAbs(hp.Path):
		errs = append(errs, field.Invalid(fld.Child("path"), hp.Path, "must be an absolute path"))
	case hasBacksteps(hp.Path):
		errs = append(errs, field.Invalid(fld.Child("path"), hp.Path, "must not contain '..'"))
	}
	if hp.Type != nil && *hp.Type != corev1.HostPathUnset {
		errs = append(errs, validateEnum(*hp.Type, fld.Child("type"),
			corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory,
			corev1.HostPathFileOrCreate, corev1.HostPathFile, corev1.HostPathSocket,
			corev1.HostPathCharDev, corev1.HostPathBlockDev)...)
	}
	return errs
}

func validateEmptyDir(ed *corev1.EmptyDirVolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ed.Medium != corev1.StorageMediumDefault && ed.Medium != corev1.StorageMediumMemory {
		errs = append(errs, field.NotSupported(fld.Child("medium"), ed.Medium,
			[]corev1.StorageMedium{corev1.StorageMediumDefault, corev1.StorageMediumMemory}))
	}
	switch l := ed.SizeLimit; {
	case l == nil:
	case l.Sign() <= 0:
		errs = append(errs, field.Invalid(fld.Child("sizeLimit"), l.String(), "must be greater than 0"))
	case l.Cmp(resources.MaxMemory) > 0: // a tmpfs size= and the eviction check count bytes in an int64
		errs = append(errs, field.Invalid(fld.Child("sizeLimit"), l.String(), fmt.Sprintf("must be less than or equal to %s, the most bytes a tmpfs size holds", resources.MaxMemory.String())))
	}
	// The directory's permission bits and the sticky bit (01777 makes a
	// /tmp); setuid and setgid on a volume mean nothing good.
	if ed.Mode != nil && (*ed.Mode < 0 || *ed.Mode > 0o1777) {
		errs = append(errs, field.Invalid(fld.Child("mode"), fmt.Sprintf("%#o", *ed.Mode), "must be a directory mode between 0 and 01777 (octal)"))
	}
	return errs
}

// hasBacksteps reports whether a slash-separated path has a ".." element.
func hasBacksteps(p string) bool {
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return true
		}
	}
	return false
}

// validateContainerNames checks that container names are valid and unique
// across init and app containers.
func validateContainerNames(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	check := func(c *corev1.Container, cfld *field.Path) {
		errs = append(errs, validateDNS(c.Name, cfld.Child("name"), validation.IsDNS1123Label)...)
		if c.Name != "" && seen[c.Name] {
			errs = append(errs, field.Duplicate(cfld.Child("name"), c.Name))
		}
		seen[c.Name] = true
	}
	for i := range spec.InitContainers {
		check(&spec.InitContainers[i], fld.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		check(&spec.Containers[i], fld.Child("containers").Index(i))
	}
	return errs
}

// containerContext is what validating a container needs to know of its pod.
type containerContext struct {
	volumes     map[string]bool
	hostNetwork bool
	osName      corev1.OSName
}

// validateContainer checks one init or app container; its name is checked by
// validateContainerNames.
func validateContainer(c *corev1.Container, fld *field.Path, ctx containerContext) field.ErrorList {
	errs := validateImage(c.Image, fld.Child("image"))
	errs = append(errs, validatePorts(c.Ports, fld.Child("ports"), ctx.hostNetwork)...)
	errs = append(errs, validateEnv(c.Env, fld.Child("env"))...)
	errs = append(errs, validateMounts(c.VolumeMounts, fld.Child("volumeMounts"), ctx.volumes)...)
	errs = append(errs, validateEnum(c.ImagePullPolicy, fld.Child("imagePullPolicy"),
		corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
		errs = append(errs, validateStopSignal(*c.Lifecycle.StopSignal, fld.Child("lifecycle", "stopSignal"), ctx.osName)...)
	}
	return append(errs, validateEnum(c.TerminationMessagePolicy, fld.Child("terminationMessagePolicy"),
		corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError)...)
}

// validateStopSignal is the API server's check of lifecycle.stopSignal: it
// needs spec.os.name, and a signal of that OS (a Linux signal's name).
func validateStopSignal(sig corev1.Signal, fld *field.Path, osName corev1.OSName) field.ErrorList {
	if osName == "" {
		return field.ErrorList{field.Forbidden(fld, "may not be set for containers with empty `spec.os.name`")}
	}
	if !strings.HasPrefix(string(sig), "SIG") || unix.SignalNum(string(sig)) == 0 {
		return field.ErrorList{field.NotSupported(fld, sig, []string{"SIGTERM", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGHUP", "..."})}
	}
	return nil
}

// validateImage checks that an image is a docker reference ("nginx",
// "registry:5000/team/app:1.2", "busybox@sha256:...").
func validateImage(image string, fld *field.Path) field.ErrorList {
	switch {
	case image == "":
		return field.ErrorList{field.Required(fld, "")}
	case strings.TrimSpace(image) != image:
		return field.ErrorList{field.Invalid(fld, image, "must not have leading or trailing whitespace")}
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return field.ErrorList{field.Invalid(fld, image, err.Error())}
	}
	return nil
}

func validatePorts(ports []corev1.ContainerPort, fld *field.Path, hostNetwork bool) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range ports {
		p, pfld := &ports[i], fld.Index(i)
		if p.Name != "" {
			errs = append(errs, invalid(pfld.Child("name"), p.Name, validation.IsValidPortName(p.Name))...)
			if names[p.Name] {
				errs = append(errs, field.Duplicate(pfld.Child("name"), p.Name))
			}
			names[p.Name] = true
		}
		if p.ContainerPort == 0 {
			errs = append(errs, field.Required(pfld.Child("containerPort"), ""))
		} else {
			errs = append(errs, invalid(pfld.Child("containerPort"), p.ContainerPort, validation.IsValidPortNum(int(p.ContainerPort)))...)
		}
		if p.HostPort != 0 {
			errs = append(errs, invalid(pfld.Child("hostPort"), p.HostPort, validation.IsValidPortNum(int(p.HostPort)))...)
		}
		if hostNetwork && p.HostPort != p.ContainerPort {
			errs = append(errs, field.Invalid(pfld.Child("hostPort"), p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
		}
		if p.HostIP != "" && net.ParseIP(p.HostIP) == nil {
			errs = append(errs, field.Invalid(pfld.Child("hostIP"), p.HostIP, "must be a valid IP address"))
		}
		errs = append(errs, validateEnum(p.Protocol, pfld.Child("protocol"),
			corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)...)
	}
	return errs
}

// validateHostPorts checks that no two containers of a list (init containers,
// which run one at a time, or app containers) claim the same host port.
func validateHostPorts(containers []corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range containers {
		for j, p := range containers[i].Ports {
			if p.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", p.Protocol, p.HostIP, p.HostPort)
			if seen[key] {
				errs = append(errs, field.Duplicate(fld.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			seen[key] = true
		}
	}
	return errs
}

// validateEnv checks variable names the way Kubernetes does since 1.34
// (RelaxedEnvironmentVariableValidation, GA): any printable ASCII but '='.
func validateEnv(env []corev1.EnvVar, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		nfld := fld.Index(i).Child("name")
		if e.Name == "" {
			errs = append(errs, field.Required(nfld, ""))
			continue
		}
		errs = append(errs, invalid(nfld, e.Name, validation.IsRelaxedEnvVarName(e.Name))...)
	}
	return errs
}

func validateMounts(mounts []corev1.VolumeMount, fld *field.Path, volumes map[string]bool) field.ErrorList {
	var errs field.ErrorList
	paths := map[string]bool{}
	for i := range mounts {
		m, mfld := &mounts[i], fld.Index(i)
		switch {
		case m.Name == "":
			errs = append(errs, field.Required(mfld.Child("name"), ""))
		case !volumes[m.Name]:
			errs = append(errs, field.NotFound(mfld.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(mfld.Child("mountPath"), ""))
		case !path.IsAbs(m.MountPath):
			errs = append(errs, field.Invalid(mfld.Child("mountPath"), m.MountPath, "must be an absolute path"))
		case paths[m.MountPath]:
			errs = append(errs, field.Invalid(mfld.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths[m.MountPath] = true
		errs = append(errs, validateSubPath(m.SubPath, mfld.Child("subPath"))...)
	}
	return errs
}

// validateSubPath checks that a subPath stays below its volume.
func validateSubPath(sub string, fld *field.Path) field.ErrorList {
	switch {
	case sub == "":
		return nil
	case path.IsAbs(sub):
		return field.ErrorList{field.Invalid(fld, sub, "must be a relative path")}
	case hasBacksteps(sub):
		return field.ErrorList{field.Invalid(fld, sub, "must not contain '..'")}
	}
	return nil
}

func sortedStringKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validateRestartRules checks a container's restartPolicy and
// restartPolicyRules as the API server does (ContainerRestartRules): the
// rules need an explicit restartPolicy; at most 20, each Restart on exit
// codes In or NotIn at most 255 values.
func validateRestartRules(c *corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.RestartPolicy != nil {
		errs = append(errs, validateEnum(*c.RestartPolicy, fld.Child("restartPolicy"),
			corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyNever)...)
	}
	rules := fld.Child("restartPolicyRules")
	if len(c.RestartPolicyRules) > 0 && c.RestartPolicy == nil {
		errs = append(errs, field.Required(fld.Child("restartPolicy"), "must be set when restartPolicyRules are"))
	}
	if len(c.RestartPolicyRules) > 20 {
		errs = append(errs, field.TooMany(rules, len(c.RestartPolicyRules), 20))
	}
	for i, r := range c.RestartPolicyRules {
		f := rules.Index(i)
		errs = append(errs, validateEnum(r.Action, f.Child("action"), corev1.ContainerRestartRuleActionRestart)...)
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(f.Child("exitCodes"), ""))
			continue
		}
		errs = append(errs, validateEnum(r.ExitCodes.Operator, f.Child("exitCodes", "operator"),
			corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn)...)
		if len(r.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(f.Child("exitCodes", "values"), len(r.ExitCodes.Values), 255))
		}
	}
	return errs
}
