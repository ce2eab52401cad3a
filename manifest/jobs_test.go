package manifest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestJobPods(t *testing.T) {
	set, err := Options{}.ParseUnresolved("j.yaml", []byte(`apiVersion: batch/v1
kind: Job
metadata: {name: pi, namespace: batch}
spec:
  completions: 3
  completionMode: Indexed
  template:
    metadata: {labels: {app: pi}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox:1.36}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Jobs) != 1 || len(set.Pods) != 0 || strings.Join(set.Workloads, ",") != "batch/Job/pi" {
		t.Fatalf("jobs %d, pods %d, workloads %v", len(set.Jobs), len(set.Pods), set.Workloads)
	}
	j := set.Jobs[0]
	if *j.Spec.Parallelism != 1 || *j.Spec.BackoffLimit != 6 || !j.Indexed() || j.RestartPolicy() != "Never" {
		t.Errorf("defaults: %+v", j.Spec)
	}
	p := j.Pod(4, 2)
	if !strings.HasPrefix(p.Name, "pi-2-") || len(p.Name) != len("pi-2-")+5 || p.Namespace != "batch" || p.Spec.Hostname != "pi-2" {
		t.Errorf("pod %s/%s hostname %q", p.Namespace, p.Name, p.Spec.Hostname)
	}
	if p.Labels["app"] != "pi" || p.Labels[JobNameLabel] != "pi" || p.Labels[JobUIDLabel] != j.UID || p.Annotations[JobIndexLabel] != "2" ||
		JobOf(p.Pod) != j.UID || Workload(p.Pod) != "Job/pi" || CronJobOf(p.Pod) != "" {
		t.Errorf("labels %v, annotations %v", p.Labels, p.Annotations)
	}
	env := p.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env %+v", env)
	}
	if again := j.Pod(4, 2); again.Name != p.Name || again.UID != p.UID {
		t.Errorf("attempt 4 named %s, then %s", p.Name, again.Name)
	}
	if other := j.Pod(5, 2); other.Name == p.Name {
		t.Errorf("attempts 4 and 5 share the name %s", p.Name)
	}
}

func TestCronJobs(t *testing.T) {
	doc := func(spec string) string {
		return `apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
` + spec + `
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox:1.36}]
`
	}
	set, err := Options{}.ParseUnresolved("c.yaml", []byte(doc(`  schedule: "30 2 * * *"
  timeZone: UTC`)))
	if err != nil {
		t.Fatal(err)
	}
	cj := set.CronJobs[0]
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	if next := cj.Schedule.Next(t0); !next.Equal(time.Date(2026, 11, 27, 2, 30, 0, 0, time.UTC)) {
		t.Errorf("next after %v: %v", t0, next)
	}
	if cj.Spec.ConcurrencyPolicy != "Allow" || *cj.Spec.SuccessfulJobsHistoryLimit != 3 || *cj.Spec.FailedJobsHistoryLimit != 1 {
		t.Errorf("defaults %+v", cj.Spec)
	}
	j := cj.Job(t0)
	p := j.Pod(0, -1)
	if j.Name != fmt.Sprintf("backup-%d", t0.Unix()/60) || p.Annotations[ScheduledAnnotation] != "2026-11-26T12:00:00Z" || CronJobOf(p.Pod) != "backup" {
		t.Errorf("job %s, pod annotations %v", j.Name, p.Annotations)
	}
	for spec, want := range map[string]string{
		`  schedule: "61 * * * *"`:       "c.yaml (document 1): spec.schedule: Invalid value:",
		`  schedule: "TZ=UTC * * * * *"`: "spec.schedule: Invalid value: \"TZ=UTC * * * * *\": cannot use TZ or CRON_TZ in schedule",
		`  schedule: "* * * * *"
  concurrencyPolicy: Sometimes`: `spec.concurrencyPolicy: Unsupported value: "Sometimes"`,
	} {
		if _, err := (Options{}).ParseUnresolved("c.yaml", []byte(doc(spec))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %s", spec, err, want)
		}
	}
	if _, err := (Options{}).ParseUnresolved("c.yaml", []byte("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: x}\nspec: {schedule: '* * * * *'}\n")); err == nil ||
		err.Error() != "c.yaml (document 1): spec.jobTemplate: Required value" {
		t.Errorf("no jobTemplate: %v", err)
	}
}

func TestJobValidation(t *testing.T) {
	_, err := Options{}.ParseUnresolved("j.yaml", []byte(`apiVersion: batch/v1
kind: Job
metadata: {name: bad}
spec:
  backoffLimit: -1
  podFailurePolicy: {rules: []}
  template:
    spec:
      containers: [{name: c, image: busybox:1.36}]
`))
	want := []string{
		"j.yaml (document 1): spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
		`j.yaml (document 1): spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`,
		"j.yaml (document 1): spec.podFailurePolicy: Forbidden: " + notSupported,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("problems:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}
