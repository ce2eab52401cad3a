package plan

import (
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// JobPod is what the job controller knows of one of a Job's pods.
type JobPod struct {
	UID   string
	Index int             // its completion index (Indexed Job), else -1
	Phase corev1.PodPhase // Pending, Running, Succeeded or Failed
	// Restarts are its containers' restarts (an OnFailure Job counts those
	// of its active pods against its backoffLimit).
	Restarts          int
	Created, Finished time.Time
}

// The conditions of a Job, and the reasons and messages of a failed one,
// as the job controller words them.
const (
	JobComplete  = string(batchv1.JobComplete)
	JobFailed    = string(batchv1.JobFailed)
	JobSuspended = string(batchv1.JobSuspended)

	ReasonBackoffLimitExceeded = batchv1.JobReasonBackoffLimitExceeded
	ReasonJobDeadlineExceeded  = batchv1.JobReasonDeadlineExceeded
	msgBackoffLimitExceeded    = "Job has reached the specified backoff limit"
	msgJobDeadlineExceeded     = "Job was active longer than specified deadline"
)

// The back-off before a Job makes a pod again after failures: 10 s,
// doubled at each failure, at most 6 minutes (the job controller's).
const (
	JobBackOff    = 10 * time.Second
	JobBackOffMax = 6 * time.Minute
)

// JobStatus is where a Job stands.
type JobStatus struct {
	Active, Succeeded, Failed int
	// Condition is Complete, Failed or Suspended; "" while it runs.
	Condition       string
	Reason, Message string
	// Start is when its first pod was made; End when it finished (zero
	// while it runs).
	Start, End time.Time
}

// Finished reports whether the Job is Complete or Failed.
func (s JobStatus) Finished() bool { return s.Condition == JobComplete || s.Condition == JobFailed }

// JobActions is what the job controller does with a Job now.
type JobActions struct {
	Status JobStatus
	// Create are the completion indexes of the pods to make now (-1 for
	// each pod of a NonIndexed Job).
	Create []int
	// Delete are the pods to delete, by UID: the active ones of a Job that
	// finished or is suspended, or all of them once its
	// ttlSecondsAfterFinished has passed (Expired).
	Delete  []string
	Expired bool
	// Next is when to decide again at the latest (a back-off, the
	// deadline or the TTL ends); zero: when one of its pods changes.
	Next time.Time
}

// DecideJob is the job controller's syncJob for one node: from the Job's
// spec (defaulted), its pods' restartPolicy, every pod it made so far and
// the condition recorded when it finished (its pods that ran may be gone
// since: the active ones of a failed Job are deleted), what it does now.
// It is pure.
func DecideJob(spec batchv1.JobSpec, restartPolicy corev1.RestartPolicy, pods []JobPod, recorded JobStatus, now time.Time) JobActions {
	var a JobActions
	st := &a.Status
	indexed := spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
	succeededIdx, activeIdx := map[int]bool{}, map[int]bool{}
	var active []string
	var lastFailure time.Time
	restarts := 0
	for _, p := range pods {
		if st.Start.IsZero() || p.Created.Before(st.Start) {
			st.Start = p.Created
		}
		switch p.Phase {
		case corev1.PodSucceeded:
			st.Succeeded++
			succeededIdx[p.Index] = true
		case corev1.PodFailed:
			st.Failed++
			lastFailure = later(lastFailure, p.Finished)
		default:
			active = append(active, p.UID)
			activeIdx[p.Index] = true
			restarts += p.Restarts
		}
		if p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed {
			st.End = later(st.End, p.Finished)
		}
	}
	st.Active = len(active)
	parallelism, backoffLimit := int(*spec.Parallelism), int(*spec.BackoffLimit)
	complete := false
	switch {
	case spec.Completions == nil: // a work queue: done once one succeeded and none runs
		complete = st.Succeeded > 0 && st.Active == 0
	case indexed:
		complete = len(succeededIdx) >= int(*spec.Completions)
	default:
		complete = st.Succeeded >= int(*spec.Completions)
	}
	var deadline time.Time
	if spec.ActiveDeadlineSeconds != nil && !st.Start.IsZero() {
		deadline = st.Start.Add(time.Duration(*spec.ActiveDeadlineSeconds) * time.Second)
	}
	onFailureExceeded := restartPolicy == corev1.RestartPolicyOnFailure &&
		(restarts > 0 && backoffLimit == 0 || backoffLimit > 0 && restarts >= backoffLimit)
	switch {
	case recorded.Finished():
		st.Condition, st.Reason, st.Message, st.End = recorded.Condition, recorded.Reason, recorded.Message, recorded.End
	case complete:
		st.Condition = JobComplete
	case st.Failed > backoffLimit || onFailureExceeded:
		st.Condition, st.Reason, st.Message = JobFailed, ReasonBackoffLimitExceeded, msgBackoffLimitExceeded
		if onFailureExceeded {
			st.End = later(st.End, now)
		}
	case !deadline.IsZero() && !now.Before(deadline):
		st.Condition, st.Reason, st.Message = JobFailed, ReasonJobDeadlineExceeded, msgJobDeadlineExceeded
		st.End = deadline
	case *spec.Suspend:
		st.Condition, st.Reason, st.Message = JobSuspended, "JobSuspended", "Job suspended"
	}
	if st.Condition != "" {
		// A Job that ended or is suspended has no running pods.
		a.Delete = active
		if !st.Finished() || spec.TTLSecondsAfterFinished == nil {
			return a
		}
		expiry := st.End.Add(time.Duration(*spec.TTLSecondsAfterFinished) * time.Second)
		if now.Before(expiry) {
			a.Next = expiry
			return a
		}
		a.Delete, a.Expired = nil, true
		for _, p := range pods {
			a.Delete = append(a.Delete, p.UID)
		}
		return a
	}
	// Running: make the pods that are missing, after the back-off of the
	// failures so far.
	if st.Failed > 0 {
		delay := JobBackOff << min(st.Failed-1, 10)
		if at := lastFailure.Add(min(delay, JobBackOffMax)); now.Before(at) {
			a.Next = at
			return withDeadline(a, deadline)
		}
	}
	switch {
	case indexed:
		for i := range int(*spec.Completions) {
			if len(a.Create)+st.Active >= parallelism {
				break
			}
			if !succeededIdx[i] && !activeIdx[i] {
				a.Create = append(a.Create, i)
			}
		}
	default:
		want := parallelism
		if spec.Completions != nil {
			want = min(parallelism, int(*spec.Completions)-st.Succeeded)
		} else if st.Succeeded > 0 {
			want = 0 // a work queue makes no pod once one succeeded
		}
		for range want - st.Active {
			a.Create = append(a.Create, -1)
		}
	}
	if deadline.IsZero() && spec.ActiveDeadlineSeconds != nil && len(a.Create) > 0 {
		deadline = now.Add(time.Duration(*spec.ActiveDeadlineSeconds) * time.Second) // it starts now
	}
	return withDeadline(a, deadline)
}

// withDeadline asks for a decision at the Job's deadline, if it comes first.
func withDeadline(a JobActions, deadline time.Time) JobActions {
	if !deadline.IsZero() && (a.Next.IsZero() || deadline.Before(a.Next)) {
		a.Next = deadline
	}
	return a
}

func later(a, b time.Time) time.Time {
	return slices.MaxFunc([]time.Time{a, b}, time.Time.Compare)
}
