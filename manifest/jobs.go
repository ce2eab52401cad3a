package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Job is a batch/v1 Job: its pods are not all known when it is read, the
// job controller's decision makes them one attempt at a time (plan.DecideJob,
// run's job driver), each from the template as Pod makes it.
type Job struct {
	Namespace, Name string
	// UID is derived from the Job's content: a changed Job is another Job,
	// as a cluster refuses to change a Job's template.
	UID    string
	Spec   batchv1.JobSpec // defaulted, without its template
	Source Source
	// template is the pod template, read, defaulted and validated as a Pod.
	template *Pod
}

// Key is the Job's namespace/name.
func (j *Job) Key() string { return j.Namespace + "/" + j.Name }

// Indexed reports whether the Job's completion mode is Indexed.
func (j *Job) Indexed() bool {
	return j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
}

// RestartPolicy is the restartPolicy of the Job's pods.
func (j *Job) RestartPolicy() corev1.RestartPolicy { return j.template.Spec.RestartPolicy }

// The labels and annotation the job controller puts on its pods.
const (
	JobUIDLabel       = batchv1.ControllerUidLabel // "batch.kubernetes.io/controller-uid"
	JobNameLabel      = batchv1.JobNameLabel
	legacyJobUID      = "controller-uid"
	legacyJobName     = "job-name"
	JobIndexLabel     = batchv1.JobCompletionIndexAnnotation // label and annotation alike
	jobCompletionEnv  = "JOB_COMPLETION_INDEX"
	jobDefaultBackoff = 6
)

// Pod is the Job's pod of attempt n (0, 1, ...: every pod the Job ever
// made), for completion index index of an Indexed Job: named as the
// controller names them, `<job>-<5>` or `<job>-<index>-<5>`, the five
// characters derived from the Job and the attempt, labelled with the Job's
// name and UID, owned by the Job.
func (j *Job) Pod(n, index int) *Pod {
	pod := j.template.Pod.DeepCopy()
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[JobUIDLabel], pod.Labels[legacyJobUID] = j.UID, j.UID
	pod.Labels[JobNameLabel], pod.Labels[legacyJobName] = j.Name, j.Name
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name,
		UID: types.UID(j.UID), Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
	prefix := j.Name + "-"
	if j.Indexed() {
		// As the controller's addCompletionIndexAnnotation,
		// addCompletionIndexEnvVariables and the Indexed hostname.
		i := strconv.Itoa(index)
		prefix += i + "-"
		pod.Labels[JobIndexLabel] = i
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[JobIndexLabel] = i
		pod.Spec.Hostname = j.Name + "-" + i
		env := corev1.EnvVar{Name: jobCompletionEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			APIVersion: "v1", FieldPath: fmt.Sprintf("metadata.annotations['%s']", JobIndexLabel)}}}
		for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for k := range cs {
				cs[k].Env = append(cs[k].Env, env)
			}
		}
	}
	pod.Name = prefix + suffix(j.UID, int32(n))
	p := &Pod{Pod: pod, Source: j.Source, PullSecrets: j.template.PullSecrets,
		ConfigMaps: j.template.ConfigMaps, Secrets: j.template.Secrets}
	p.Hash, p.UID = Identity(pod)
	pod.UID = types.UID(p.UID)
	return p
}

// readJob reads a batch/v1 Job.
func (r *reader) readJob(src Source, prefix string, raw map[string]any) {
	j := r.decodeJob(src, prefix, raw)
	if j == nil {
		return
	}
	r.set.Jobs = append(r.set.Jobs, j)
	r.set.Workloads = append(r.set.Workloads, j.Namespace+"/Job/"+j.Name)
	r.names = append(r.names, named{"job", j.Key(), src})
	r.located(j.template.Pod, src, prefix+"spec.template.")
}

// decodeJob decodes, defaults and validates a Job at prefix of src (a
// CronJob's jobTemplate too), nil when it does not decode.
func (r *reader) decodeJob(src Source, prefix string, raw map[string]any) *Job {
	own, ownData, template, ok := r.splitTemplate(src, prefix, raw)
	if !ok {
		return nil
	}
	var job batchv1.Job
	if _, ok := r.decode(src, prefix, ownData, own, &job); !ok {
		return nil
	}
	r.readMeta(src, prefix, &job.ObjectMeta)
	w := &workload{kind: "Job", meta: job.ObjectMeta}
	pod := r.templatePod(src, prefix, w, template)
	if pod == nil {
		return nil
	}
	defaultJob(&job.Spec)
	r.fieldProblems(src, prefix, validateJob(&job.Spec, pod.Pod))
	sum := sha256.Sum256(append(ownData, pod.Hash...))
	return &Job{Namespace: job.Namespace, Name: job.Name, Spec: job.Spec, Source: src, template: pod,
		UID: nameUUID(job.Namespace + "/Job/" + job.Name + "/" + hex.EncodeToString(sum[:]))}
}

// defaultJob sets the API server's defaults of a Job: completions and
// parallelism 1 when neither is set (else parallelism 1), backoffLimit 6,
// completionMode NonIndexed.
func defaultJob(spec *batchv1.JobSpec) {
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr(int32(1))
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr(int32(1))
	}
	if spec.BackoffLimit == nil {
		spec.BackoffLimit = ptr(int32(jobDefaultBackoff))
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr(false)
	}
}

// validateJob is the API server's check of a Job's spec, and the fields
// one node cannot honour.
func validateJob(spec *batchv1.JobSpec, pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	fld := field.NewPath("spec")
	nonNegative := func(name string, v *int32) {
		if v != nil && *v < 0 {
			errs = append(errs, field.Invalid(fld.Child(name), *v, "must be greater than or equal to 0"))
		}
	}
	nonNegative("parallelism", spec.Parallelism)
	nonNegative("completions", spec.Completions)
	nonNegative("backoffLimit", spec.BackoffLimit)
	nonNegative("ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished)
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(fld.Child("activeDeadlineSeconds"), *d, "must be greater than 0"))
	} else if d != nil {
		errs = append(errs, validateDuration(*d, fld.Child("activeDeadlineSeconds"))...)
	}
	switch *spec.CompletionMode {
	case batchv1.NonIndexedCompletion:
	case batchv1.IndexedCompletion:
		if spec.Completions == nil {
			errs = append(errs, field.Required(fld.Child("completions"), "when completion mode is Indexed"))
		}
	default:
		errs = append(errs, field.NotSupported(fld.Child("completionMode"), *spec.CompletionMode,
			[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if rp := pod.Spec.RestartPolicy; rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever {
		errs = append(errs, field.NotSupported(fld.Child("template", "spec", "restartPolicy"), rp,
			[]corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	// What podrun's job controller does not do.
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"selector", spec.Selector != nil}, {"manualSelector", spec.ManualSelector != nil},
		{"podFailurePolicy", spec.PodFailurePolicy != nil}, {"successPolicy", spec.SuccessPolicy != nil},
		{"backoffLimitPerIndex", spec.BackoffLimitPerIndex != nil}, {"maxFailedIndexes", spec.MaxFailedIndexes != nil},
		{"managedBy", spec.ManagedBy != nil}, {"scheduling", spec.Scheduling != nil},
	} {
		if f.set {
			errs = append(errs, field.Forbidden(fld.Child(f.name), notSupported))
		}
	}
	return errs
}

// JobOf is the UID of the Job that made pod ("" for a pod of no Job).
func JobOf(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.APIVersion != "batch/v1" || ref.Kind != "Job" {
		return ""
	}
	return pod.Labels[JobUIDLabel]
}
