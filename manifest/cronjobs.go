package manifest

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CronJob is a batch/v1 CronJob: the daemon makes its Jobs on its schedule
// (plan.DecideCronJob, jobs.Controller.RunCronJob); `up` refuses it.
type CronJob struct {
	Namespace, Name string
	UID             string              // derived from its content
	Spec            batchv1.CronJobSpec // defaulted, without its jobTemplate
	Schedule        cron.Schedule       // spec.schedule in spec.timeZone
	Source          Source
	job             *Job // the jobTemplate, read as a Job of the CronJob's name
}

// Key is the CronJob's namespace/name.
func (c *CronJob) Key() string { return c.Namespace + "/" + c.Name }

// ScheduledAnnotation is put on a CronJob's Jobs' pods: the time the Job
// was scheduled for (RFC 3339), as the cronjob controller annotates its Jobs.
const ScheduledAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// Job is the CronJob's Job for scheduled time at: named
// <cronjob>-<minutes since the epoch> as the controller names it, owned by
// the CronJob; its pods carry the scheduled time.
func (c *CronJob) Job(at time.Time) *Job {
	j := *c.job
	j.Name = fmt.Sprintf("%s-%d", c.Name, at.Unix()/60)
	j.UID = nameUUID(c.UID + "/" + j.Name)
	tmpl := *j.template
	pod := tmpl.Pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[ScheduledAnnotation] = at.UTC().Format(time.RFC3339)
	tmpl.Pod = pod
	j.template = &tmpl
	return &j
}

// CronJobOf is the name of the CronJob whose Job made pod ("" for a pod of
// no CronJob): its Job is <cronjob>-<minutes> and it carries the scheduled
// time.
func CronJobOf(pod *corev1.Pod) string {
	if _, ok := pod.Annotations[ScheduledAnnotation]; !ok || JobOf(pod) == "" {
		return ""
	}
	job := pod.Labels[JobNameLabel]
	i := strings.LastIndex(job, "-")
	if i <= 0 || strings.Trim(job[i+1:], "0123456789") != "" {
		return ""
	}
	return job[:i]
}

// readCronJob reads a batch/v1 CronJob.
func (r *reader) readCronJob(src Source, prefix string, raw map[string]any) {
	own, data, jt, ok := r.splitSpec(src, prefix, raw, "jobTemplate")
	if !ok {
		return
	}
	var cj batchv1.CronJob
	if _, ok := r.decode(src, prefix, data, own, &cj); !ok {
		return
	}
	r.readMeta(src, prefix, &cj.ObjectMeta)
	// The jobTemplate, read as a Job of the CronJob's name and namespace.
	meta, _ := jt["metadata"].(map[string]any)
	jobMeta := maps.Clone(meta)
	if jobMeta == nil {
		jobMeta = map[string]any{}
	}
	jobMeta["name"], jobMeta["namespace"] = cj.Name, cj.Namespace
	job := r.decodeJob(src, prefix+"spec.jobTemplate.", map[string]any{
		"apiVersion": "batch/v1", "kind": "Job", "metadata": jobMeta, "spec": jt["spec"]})
	if job == nil {
		return
	}
	defaultCronJob(&cj.Spec)
	sched, errs := validateCronJob(&cj)
	r.fieldProblems(src, prefix, errs)
	c := &CronJob{Namespace: cj.Namespace, Name: cj.Name, Spec: cj.Spec, Schedule: sched, Source: src, job: job,
		UID: nameUUID(cj.Namespace + "/CronJob/" + cj.Name + "/" + job.UID + "/" + string(data))}
	r.set.CronJobs = append(r.set.CronJobs, c)
	r.set.Workloads = append(r.set.Workloads, c.Namespace+"/CronJob/"+c.Name)
	r.names = append(r.names, named{"cronjob", c.Key(), src})
	r.located(job.template.Pod, src, prefix+"spec.jobTemplate.spec.template.")
}

// defaultCronJob sets the API server's defaults: concurrencyPolicy Allow,
// not suspended, 3 successful and 1 failed Jobs kept.
func defaultCronJob(spec *batchv1.CronJobSpec) {
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr(int32(3))
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr(int32(1))
	}
}

// validateCronJob is the API server's check of a CronJob; it returns the
// schedule parsed as the cronjob controller parses it.
func validateCronJob(cj *batchv1.CronJob) (cron.Schedule, field.ErrorList) {
	var errs field.ErrorList
	fld := field.NewPath("spec")
	if len(cj.Name) > 52 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, "must be no more than 52 characters"))
	}
	spec := cj.Spec
	schedule := spec.Schedule
	var sched cron.Schedule
	switch {
	case schedule == "":
		errs = append(errs, field.Required(fld.Child("schedule"), ""))
	case strings.Contains(schedule, "TZ"):
		errs = append(errs, field.Invalid(fld.Child("schedule"), schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	default:
		if tz := spec.TimeZone; tz != nil {
			if _, err := time.LoadLocation(*tz); err != nil {
				errs = append(errs, field.Invalid(fld.Child("timeZone"), *tz, "unknown time zone "+*tz))
			} else {
				schedule = "CRON_TZ=" + *tz + " " + schedule
			}
		}
		var err error
		if sched, err = cron.ParseStandard(schedule); err != nil {
			errs = append(errs, field.Invalid(fld.Child("schedule"), spec.Schedule, err.Error()))
		}
	}
	switch spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	default:
		errs = append(errs, field.NotSupported(fld.Child("concurrencyPolicy"), spec.ConcurrencyPolicy,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	if v := *spec.SuccessfulJobsHistoryLimit; v < 0 {
		errs = append(errs, field.Invalid(fld.Child("successfulJobsHistoryLimit"), v, "must be greater than or equal to 0"))
	}
	if v := *spec.FailedJobsHistoryLimit; v < 0 {
		errs = append(errs, field.Invalid(fld.Child("failedJobsHistoryLimit"), v, "must be greater than or equal to 0"))
	}
	if d := spec.StartingDeadlineSeconds; d != nil && *d < 0 {
		errs = append(errs, field.Invalid(fld.Child("startingDeadlineSeconds"), *d, "must be greater than or equal to 0"))
	} else if d != nil {
		errs = append(errs, validateDuration(*d, fld.Child("startingDeadlineSeconds"))...)
	}
	return sched, errs
}
