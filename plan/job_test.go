package plan

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestDecideJob(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	i32 := func(v int32) *int32 { return &v }
	i64 := func(v int64) *int64 { return &v }
	spec := func(completions, parallelism *int32, edit ...func(*batchv1.JobSpec)) batchv1.JobSpec {
		mode, no := batchv1.NonIndexedCompletion, false
		s := batchv1.JobSpec{Completions: completions, Parallelism: parallelism, BackoffLimit: i32(6), CompletionMode: &mode, Suspend: &no}
		for _, e := range edit {
			e(&s)
		}
		return s
	}
	indexed := func(s *batchv1.JobSpec) { m := batchv1.IndexedCompletion; s.CompletionMode = &m }
	backoff := func(n int32) func(*batchv1.JobSpec) { return func(s *batchv1.JobSpec) { s.BackoffLimit = &n } }
	pod := func(uid string, phase corev1.PodPhase, at time.Duration) JobPod {
		p := JobPod{UID: uid, Index: -1, Phase: phase, Created: t0.Add(at - 3*time.Second)}
		if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			p.Finished = t0.Add(at)
		}
		return p
	}
	at := func(p JobPod, i int) JobPod { p.Index = i; return p }
	for _, tc := range []struct {
		name          string
		spec          batchv1.JobSpec
		restartPolicy corev1.RestartPolicy
		pods          []JobPod
		now           time.Duration
		want          string
	}{
		{"new: parallelism pods", spec(i32(3), i32(2)), "", nil, 0, "create [-1 -1] delete [] next 0s"},
		{"one done, one running: one more", spec(i32(3), i32(2)), "",
			[]JobPod{pod("a", corev1.PodSucceeded, 0), pod("b", corev1.PodRunning, 0)}, time.Second, "create [-1] delete [] next 0s"},
		{"last completion running: none more", spec(i32(3), i32(2)), "",
			[]JobPod{pod("a", corev1.PodSucceeded, 0), pod("b", corev1.PodSucceeded, 0), pod("c", corev1.PodRunning, 0)}, time.Second, "create [] delete [] next 0s"},
		{"complete", spec(i32(2), i32(2)), "",
			[]JobPod{pod("a", corev1.PodSucceeded, 0), pod("b", corev1.PodSucceeded, 5*time.Second)}, time.Minute, "Complete create [] delete [] next 0s end 5s"},
		{"defaults: one pod", spec(i32(1), i32(1)), "", nil, 0, "create [-1] delete [] next 0s"},
		// The back-off after failures: 10 s, then 20 s after the second.
		{"failure: back-off 10s", spec(i32(1), i32(1)), "", []JobPod{pod("a", corev1.PodFailed, 0)}, 4 * time.Second, "create [] delete [] next 10s"},
		{"failure: back-off over", spec(i32(1), i32(1)), "", []JobPod{pod("a", corev1.PodFailed, 0)}, 10 * time.Second, "create [-1] delete [] next 0s"},
		{"two failures: back-off 20s", spec(i32(1), i32(1)), "",
			[]JobPod{pod("a", corev1.PodFailed, -time.Minute), pod("b", corev1.PodFailed, 0)}, 19 * time.Second, "create [] delete [] next 20s"},
		{"backoffLimit 1 exceeded", spec(i32(2), i32(2), backoff(1)), "",
			[]JobPod{pod("a", corev1.PodFailed, 0), pod("b", corev1.PodFailed, time.Second), pod("c", corev1.PodRunning, 0)}, 2 * time.Second,
			"Failed BackoffLimitExceeded create [] delete [c] next 0s end 1s"},
		{"backoffLimit 0: the first failure", spec(i32(1), i32(1), backoff(0)), "", []JobPod{pod("a", corev1.PodFailed, 0)}, time.Second,
			"Failed BackoffLimitExceeded create [] delete [] next 0s end 0s"},
		{"OnFailure: restarts count", spec(i32(1), i32(1), backoff(2)), corev1.RestartPolicyOnFailure,
			[]JobPod{{UID: "a", Index: -1, Phase: corev1.PodRunning, Restarts: 2, Created: t0}}, time.Second,
			"Failed BackoffLimitExceeded create [] delete [a] next 0s end 1s"},
		{"deadline ahead", spec(i32(1), i32(1), func(s *batchv1.JobSpec) { s.ActiveDeadlineSeconds = i64(30) }), "",
			[]JobPod{pod("a", corev1.PodRunning, 3*time.Second)}, time.Second, "create [] delete [] next 30s"},
		{"deadline passed", spec(i32(1), i32(1), func(s *batchv1.JobSpec) { s.ActiveDeadlineSeconds = i64(30) }), "",
			[]JobPod{pod("a", corev1.PodRunning, 3*time.Second)}, 31 * time.Second, "Failed DeadlineExceeded create [] delete [a] next 0s end 30s"},
		{"new with a deadline", spec(i32(1), i32(1), func(s *batchv1.JobSpec) { s.ActiveDeadlineSeconds = i64(30) }), "", nil, 0, "create [-1] delete [] next 30s"},
		{"ttl ahead", spec(i32(1), i32(1), func(s *batchv1.JobSpec) { s.TTLSecondsAfterFinished = i32(100) }), "",
			[]JobPod{pod("a", corev1.PodSucceeded, 0)}, time.Second, "Complete create [] delete [] next 1m40s end 0s"},
		{"ttl passed: every pod goes", spec(i32(1), i32(1), func(s *batchv1.JobSpec) { s.TTLSecondsAfterFinished = i32(0) }), "",
			[]JobPod{pod("a", corev1.PodFailed, -time.Minute), pod("b", corev1.PodSucceeded, 0)}, 0, "Complete create [] delete [a b] expired next 0s end 0s"},
		{"work queue: parallelism", spec(nil, i32(3)), "", nil, 0, "create [-1 -1 -1] delete [] next 0s"},
		{"work queue: one succeeded, no more", spec(nil, i32(3)), "",
			[]JobPod{pod("a", corev1.PodSucceeded, 0), pod("b", corev1.PodRunning, 0)}, time.Second, "create [] delete [] next 0s"},
		{"work queue: done", spec(nil, i32(3)), "",
			[]JobPod{pod("a", corev1.PodSucceeded, 0), pod("b", corev1.PodSucceeded, time.Second)}, 2 * time.Second, "Complete create [] delete [] next 0s end 1s"},
		{"indexed: the missing indexes", spec(i32(4), i32(2), indexed), "",
			[]JobPod{at(pod("a", corev1.PodSucceeded, 0), 0), at(pod("b", corev1.PodFailed, -time.Minute), 1), at(pod("c", corev1.PodRunning, 0), 2)}, time.Minute,
			"create [1] delete [] next 0s"},
		{"indexed: complete", spec(i32(2), i32(2), indexed), "",
			[]JobPod{at(pod("a", corev1.PodSucceeded, 0), 0), at(pod("b", corev1.PodSucceeded, 0), 1)}, time.Minute, "Complete create [] delete [] next 0s end 0s"},
		{"suspended", spec(i32(1), i32(1), func(s *batchv1.JobSpec) { y := true; s.Suspend = &y }), "",
			[]JobPod{pod("a", corev1.PodRunning, 0)}, 0, "Suspended create [] delete [a] next 0s"},
	} {
		a := DecideJob(tc.spec, tc.restartPolicy, tc.pods, JobStatus{}, t0.Add(tc.now))
		got := ""
		if c := a.Status.Condition; c != "" {
			got = c + " "
			if a.Status.Reason != "" && c == JobFailed {
				got += a.Status.Reason + " "
			}
		}
		next := time.Duration(0)
		if !a.Next.IsZero() {
			next = a.Next.Sub(t0)
		}
		got += fmt.Sprintf("create %v delete %v ", a.Create, a.Delete)
		if a.Expired {
			got += "expired "
		}
		got += fmt.Sprintf("next %s", next)
		if a.Status.Finished() {
			got += fmt.Sprintf(" end %s", a.Status.End.Sub(t0))
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestDecideJobRecorded: a Job recorded finished stays so, though the pods
// that ran are gone (the active ones of a failed Job are deleted).
func TestDecideJobRecorded(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	one, six, no, mode := int32(1), int32(6), false, batchv1.NonIndexedCompletion
	deadline := int64(5)
	spec := batchv1.JobSpec{Completions: &one, Parallelism: &one, BackoffLimit: &six, CompletionMode: &mode, Suspend: &no, ActiveDeadlineSeconds: &deadline}
	rec := JobStatus{Condition: JobFailed, Reason: ReasonJobDeadlineExceeded, Message: msgJobDeadlineExceeded, End: t0}
	a := DecideJob(spec, corev1.RestartPolicyNever, nil, rec, t0.Add(time.Minute))
	if a.Status.Condition != JobFailed || a.Status.Reason != ReasonJobDeadlineExceeded || len(a.Create) != 0 || !a.Status.End.Equal(t0) {
		t.Errorf("recorded failure: %+v", a)
	}
	ttl := int32(30)
	spec.TTLSecondsAfterFinished = &ttl
	if a := DecideJob(spec, corev1.RestartPolicyNever, []JobPod{{UID: "a", Phase: corev1.PodFailed}}, rec, t0.Add(time.Minute)); !a.Expired || fmt.Sprint(a.Delete) != "[a]" {
		t.Errorf("recorded failure past its TTL: %+v", a)
	}
}
