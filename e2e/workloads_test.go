package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deploymentBundle is a Deployment of replicas pods of the test image, VALUE in
// its template, with a Service and a Job beside it (a bundle as people
// have them).
func deploymentBundle(replicas, value string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: wl-web}
spec:
  replicas: ` + replicas + `
  selector: {matchLabels: {app: wl-web}}
  template:
    metadata: {labels: {app: wl-web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: ` + H.Image + `
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
        env: [{name: VALUE, value: "` + value + `"}]
---
apiVersion: v1
kind: Service
metadata: {name: wl-web}
spec:
  selector: {app: wl-web}
  ports: [{port: 80}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: wl-migrate}
spec:
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: ` + H.Image + `
        command: ["sh", "-c", "echo migrated"]
`
}

// jobPods lists the pods of Job name by name, with their phase.
func jobPods(t *testing.T, name string) map[string]corev1.PodPhase {
	t.Helper()
	out := map[string]corev1.PodPhase{}
	for _, p := range listPods(t) {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.Kind == "Job" && ref.Name == name {
			out[p.Name] = p.Status.Phase
		}
	}
	return out
}

// deploymentPods lists the pods of Deployment wl-web by name, with VALUE.
func deploymentPods(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range listPods(t) {
		if ref := metav1.GetControllerOf(&p); ref != nil && strings.HasPrefix(ref.Name, "wl-web-") && p.Status.Phase == corev1.PodRunning {
			out[p.Name] = valueEnv(p)
		}
	}
	return out
}

func sortedNames(m map[string]string) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestWorkloadDeployment: a Deployment runs replicas pods named as its
// controllers name them, owned by it (ps -o wide OWNER); a Service beside
// it is skipped with a note and a Job runs to completion; applying the file
// again changes nothing, scaling adds or removes only the difference, a
// changed template is rolled out one pod at a time (never fewer than 2
// Ready, never more than 3 pods), and down FILE removes it all.
func TestWorkloadDeployment(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "wl-web.yaml", deploymentBundle("2", "v1"))
	downOnCleanup(t, file)
	stdout, stderr, code := H.Podrun(t, "", "up", file)
	if code != 0 || strings.Count(stdout, " created (Running)") != 2 || !strings.Contains(stdout, "job/default/wl-migrate complete (succeeded 2, failed 0)") {
		t.Fatalf("up: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, `note: `+file+` (document 2): Service "wl-web" skipped`) {
		t.Errorf("up stderr lacks the note on the skipped Service:\n%s", stderr)
	}
	two := deploymentPods(t)
	if len(two) != 2 {
		t.Fatalf("pods of wl-web: %v, want 2", two)
	}
	for _, name := range sortedNames(two) {
		if row := psRow(t, name, "-o", "wide"); len(row) < 10 || row[9] != "Deployment/wl-web" {
			t.Errorf("ps -o wide row %q: want OWNER Deployment/wl-web", row)
		}
	}
	job := jobPods(t, "wl-migrate")
	if len(job) != 2 {
		t.Errorf("pods of Job wl-migrate: %v, want 2 Succeeded", job)
	}
	for name, phase := range job {
		if row := psRow(t, name, "-a", "-o", "wide"); phase != corev1.PodSucceeded || len(row) < 10 || row[9] != "Job/wl-migrate" {
			t.Errorf("Job pod %s: phase %s, ps -a -o wide row %q: want Succeeded, OWNER Job/wl-migrate", name, phase, row)
		}
	}

	up := func(doc string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		if stdout, stderr, code := H.Podrun(t, "", "up", file); code != 0 {
			t.Fatalf("up: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
		}
	}
	up(deploymentBundle("2", "v1"))
	if again := deploymentPods(t); strings.Join(sortedNames(again), ",") != strings.Join(sortedNames(two), ",") {
		t.Errorf("the same file applied again: pods %v, were %v", sortedNames(again), sortedNames(two))
	}
	if again := jobPods(t, "wl-migrate"); len(again) != 2 {
		t.Errorf("the same file applied again: the Job's pods %v, want the 2 that completed", again)
	}
	up(deploymentBundle("3", "v1"))
	three := deploymentPods(t)
	kept := 0
	for n := range two {
		if _, ok := three[n]; ok {
			kept++
		}
	}
	if len(three) != 3 || kept != 2 {
		t.Errorf("scaled to 3: pods %v (%d of the 2 kept)", sortedNames(three), kept)
	}
	up(deploymentBundle("2", "v1"))
	back := deploymentPods(t)
	if len(back) != 2 {
		t.Errorf("scaled to 2: pods %v", sortedNames(back))
	}
	for n := range back {
		if _, ok := three[n]; !ok {
			t.Errorf("scaled to 2: pod %s is new", n)
		}
	}

	// The rollout, watched from outside: ps every 100 ms while up runs.
	stop := make(chan struct{})
	samples := make(chan [2]int, 1000) // Ready pods, pods not finished
	go func() {
		defer close(samples)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			out, _, code, _ := H.run(t, "", 30*time.Second, "ps", "-a", "-o", "json")
			var list corev1.PodList
			if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
				continue
			}
			var s [2]int
			for _, p := range list.Items {
				if ref := metav1.GetControllerOf(&p); ref == nil || !strings.HasPrefix(ref.Name, "wl-web-") {
					continue
				}
				if p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning {
					s[1]++
				}
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
						s[0]++
					}
				}
			}
			samples <- s
		}
	}()
	if err := os.WriteFile(file, []byte(deploymentBundle("2", "v2")), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = H.Podrun(t, "", "up", file)
	close(stop)
	if code != 0 {
		t.Fatalf("up: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	// In up's own order: a new pod Ready, an old one down, the next new one.
	var order []string
	for _, line := range strings.Split(stderr, "\n") {
		switch {
		case strings.Contains(line, "wait: ready"):
			order = append(order, "ready")
		case strings.Contains(line, " down ("):
			order = append(order, "down")
		}
	}
	if strings.Join(order, ",") != "ready,down,ready,down" {
		t.Errorf("rollout steps %v, want a new pod ready, an old one down, and again", order)
	}
	n, minReady, maxPods := 0, 99, 0
	for s := range samples {
		n, minReady, maxPods = n+1, min(minReady, s[0]), max(maxPods, s[1])
	}
	t.Logf("rollout: %d samples, Ready at least %d, at most %d pods", n, minReady, maxPods)
	if n < 3 || minReady < 2 || maxPods > 3 {
		t.Errorf("rollout of a changed template: %d samples, Ready at least %d (want 2), at most %d pods (want 3)", n, minReady, maxPods)
	}
	changed := deploymentPods(t)
	for n, v := range changed {
		if _, old := back[n]; old || v != "v2" {
			t.Errorf("after a template change: pod %s VALUE %s (old: %v), want a new pod with v2", n, v, old)
		}
	}
	if len(changed) != 2 {
		t.Errorf("after a template change: pods %v, want 2", sortedNames(changed))
	}
	if stdout, stderr, code := H.Podrun(t, "", "down", file); code != 0 || len(deploymentPods(t)) != 0 || len(jobPods(t, "wl-migrate")) != 0 {
		t.Errorf("down: exit %d, stdout %q, pods left %v, %v; stderr:\n%s", code, stdout, deploymentPods(t), jobPods(t, "wl-migrate"), stderr)
	}
}

// TestWorkloadJobs: Jobs run as the job controller runs them: completions
// and parallelism (Indexed: JOB_COMPLETION_INDEX), backoffLimit with the
// back-off between attempts, activeDeadlineSeconds, and
// ttlSecondsAfterFinished 0; up returns each Job's result (exit 1 when one
// failed); applied again, a finished Job stays as it ended; down FILE
// removes every pod.
func TestWorkloadJobs(t *testing.T) {
	H.require(t)
	job := func(name, spec, command string) string {
		return `apiVersion: batch/v1
kind: Job
metadata: {name: ` + name + `}
spec:
` + spec + `
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: ` + H.Image + `
        command: ["sh", "-c", "` + command + `"]
---
`
	}
	doc := job("wl-indexed", "  completions: 3\n  parallelism: 2\n  completionMode: Indexed", "echo index $JOB_COMPLETION_INDEX") +
		job("wl-fail", "  backoffLimit: 1", "echo failing; exit 3") +
		job("wl-deadline", "  activeDeadlineSeconds: 2", "trap 'exit 0' TERM; while true; do sleep 0.1; done") +
		job("wl-ttl", "  ttlSecondsAfterFinished: 0", "true")
	file := H.WriteManifest(t, "wl-jobs.yaml", doc)
	downOnCleanup(t, file)
	if out, _, code := H.Podrun(t, "", "validate", file); code != 0 || !strings.Contains(out, "job/default/wl-indexed valid ("+file+" (document 1))\n") {
		t.Errorf("validate: exit %d, %q", code, out)
	}
	start := time.Now()
	stdout, stderr, code := H.Podrun(t, "", "up", file)
	took := time.Since(start)
	if code != 1 || !strings.Contains(stdout, "job/default/wl-indexed complete (succeeded 3, failed 0)") ||
		!strings.Contains(stdout, "job/default/wl-ttl complete (succeeded 1, failed 0)") {
		t.Fatalf("up: exit %d (want 1), stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"job default/wl-fail failed: BackoffLimitExceeded: Job has reached the specified backoff limit; the last failed pod:",
		"exited with code 3", "failing",
		"job default/wl-deadline failed: DeadlineExceeded: Job was active longer than specified deadline",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("up stderr lacks %q", want)
		}
	}
	// Two attempts of wl-fail, 10 s apart (the job controller's back-off).
	if took < 10*time.Second {
		t.Errorf("up took %v: the second attempt of wl-fail came before its 10 s back-off", took)
	}
	indexes := map[string]bool{}
	for name, phase := range jobPods(t, "wl-indexed") {
		p := podNamed(t, name)
		if phase != corev1.PodSucceeded || !strings.HasPrefix(name, "wl-indexed-"+p.Annotations["batch.kubernetes.io/job-completion-index"]+"-") {
			t.Errorf("pod %s: phase %s, annotations %v", name, phase, p.Annotations)
		}
		for _, line := range containerLog(t, p, "work", 0) {
			indexes[line[strings.LastIndex(line, " ")+1:]] = true
		}
	}
	if len(indexes) != 3 || !indexes["0"] || !indexes["1"] || !indexes["2"] {
		t.Errorf("the indexed Job's pods wrote indexes %v, want 0, 1 and 2", indexes)
	}
	if fail := jobPods(t, "wl-fail"); len(fail) != 2 {
		t.Errorf("pods of wl-fail: %v, want 2 Failed (backoffLimit 1)", fail)
	}
	if pods := jobPods(t, "wl-deadline"); len(pods) != 0 {
		t.Errorf("pods of wl-deadline: %v, want none (deleted at the deadline)", pods)
	}
	if pods := jobPods(t, "wl-ttl"); len(pods) != 0 {
		t.Errorf("pods of wl-ttl: %v, want none (ttlSecondsAfterFinished 0)", pods)
	}
	// Applied again: the finished Jobs stay as they ended, nothing runs
	// again but the Job its TTL removed (as applying it to a cluster again).
	stdout, stderr, code = H.Podrun(t, "", "up", file)
	if code != 1 || !strings.Contains(stdout, "job/default/wl-indexed complete (succeeded 3, failed 0)") ||
		!strings.Contains(stderr, "job default/wl-deadline failed: DeadlineExceeded") || len(jobPods(t, "wl-fail")) != 2 ||
		len(jobPods(t, "wl-indexed")) != 3 {
		t.Errorf("up again: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
	if stdout, stderr, code := H.Podrun(t, "", "down", file); code != 0 || len(jobPods(t, "wl-indexed")) != 0 || len(jobPods(t, "wl-fail")) != 0 {
		t.Errorf("down: exit %d, stdout %q; stderr:\n%s", code, stdout, stderr)
	}
}

// TestWorkloadStatefulSet: a StatefulSet's pods are <name>-<ordinal>, with
// that hostname, started one at a time in order (OrderedReady), each with
// its claim of the volumeClaimTemplate: wl-db-0 keeps its data across down
// and up.
func TestWorkloadStatefulSet(t *testing.T) {
	H.require(t)
	t.Cleanup(func() {
		for _, v := range []string{"data-wl-db-0", "data-wl-db-1"} {
			if _, stderr, code := H.Podrun(t, "", "volume", "rm", v); code != 0 {
				t.Errorf("cleanup: volume rm %s: exit %d\n%s", v, code, stderr)
			}
		}
	})
	doc := `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: wl-db}
spec:
  serviceName: wl-db
  replicas: 2
  selector: {matchLabels: {app: wl-db}}
  volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]
  template:
    metadata: {labels: {app: wl-db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: db
        image: ` + H.Image + `
        command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
        volumeMounts: [{name: data, mountPath: /data}]
`
	file, _, stderr, code := runUp(t, "wl-db", doc)
	if code != 0 {
		t.Fatalf("up: exit %d\n%s", code, stderr)
	}
	// OrderedReady: wl-db-1 starts once wl-db-0 is Ready.
	if ready, next := strings.Index(stderr, "default/wl-db-0 [9/9] wait: ready"), strings.Index(stderr, "default/wl-db-1 [1/9]"); ready < 0 || next < ready {
		t.Errorf("wl-db-1 began (at %d) before wl-db-0 was ready (at %d)", next, ready)
	}
	for _, name := range []string{"wl-db-0", "wl-db-1"} {
		if out, _, code := H.Podrun(t, "", "exec", name, "--", "hostname"); code != 0 || strings.TrimSpace(out) != name {
			t.Errorf("exec %s -- hostname: %q (exit %d)", name, out, code)
		}
		if _, _, code := H.Podrun(t, "", "exec", name, "--", "sh", "-c", "echo "+name+" > /data/who"); code != 0 {
			t.Errorf("exec %s: writing /data/who: exit %d", name, code)
		}
	}
	if _, _, code := H.Podrun(t, "", "down", file); code != 0 {
		t.Fatalf("down: exit %d", code)
	}
	if _, _, stderr, code := runUp(t, "wl-db", doc); code != 0 {
		t.Fatalf("up again: exit %d\n%s", code, stderr)
	}
	for _, name := range []string{"wl-db-0", "wl-db-1"} {
		if out, _, code := H.Podrun(t, "", "exec", name, "--", "cat", "/data/who"); code != 0 || strings.TrimSpace(out) != name {
			t.Errorf("after down and up, %s reads %q (exit %d), want what it wrote", name, out, code)
		}
	}
}

// TestDaemonJobs: in the daemon's directory a Job runs to completion and a
// CronJob makes its Job at the next minute (named <cronjob>-<minutes>, its
// pods annotated with the scheduled time); with the file gone, their pods go.
func TestDaemonJobs(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "dm-jobs.yaml")
	doc := `apiVersion: batch/v1
kind: Job
metadata: {name: dm-job}
spec:
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: ` + H.Image + `, command: ["sh", "-c", "echo job"]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: dm-cron}
spec:
  schedule: "* * * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: tick, image: ` + H.Image + `, command: ["sh", "-c", "echo tick"]}]
`
	d := startDaemon(t, dir, nil, "--resync", "1m")
	waitDaemonSynced(t, d, 60*time.Second)
	t.Cleanup(func() {
		if _, stderr, code := H.Podrun(t, doc, "down", "-"); code != 0 {
			t.Errorf("cleanup: down: exit %d; stderr:\n%s", code, stderr)
		}
	})
	writeByRename(t, dir, "dm-jobs.yaml", doc)
	waitDaemonLog(t, d, `msg="job Complete" job=default/dm-job succeeded=2 failed=0`, 30*time.Second)
	if pods := jobPods(t, "dm-job"); len(pods) != 2 {
		t.Errorf("pods of Job dm-job: %v, want 2 Succeeded", pods)
	}
	var cron corev1.Pod
	eventually(t, 80*time.Second, "a Succeeded pod of CronJob dm-cron", func() (bool, string) {
		for _, p := range listPods(t) {
			if strings.HasPrefix(p.Name, "dm-cron-") && p.Status.Phase == corev1.PodSucceeded {
				cron = p
				return true, ""
			}
		}
		return false, "none yet"
	})
	at, err := time.Parse(time.RFC3339, cron.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
	job := metav1.GetControllerOf(&cron)
	if err != nil || at.Second() != 0 || job == nil || job.Kind != "Job" || job.Name != fmt.Sprintf("dm-cron-%d", at.Unix()/60) ||
		!strings.HasPrefix(cron.Name, job.Name+"-") {
		t.Errorf("the CronJob's pod %s: scheduled %q (%v), owner %+v", cron.Name, cron.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"], err, job)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the pods of the removed file gone", func() (bool, string) {
		var left []string
		for _, p := range listPods(t) {
			if strings.HasPrefix(p.Name, "dm-job-") || strings.HasPrefix(p.Name, "dm-cron-") {
				left = append(left, p.Name)
			}
		}
		return len(left) == 0, fmt.Sprint("left: ", left)
	})
}

// TestDaemonJobStartError: a Job's pod whose command does not exist fails
// as on a cluster: under restartPolicy Never the pod is Failed, its
// container terminated StartError with exit code 128, and the Job makes
// another until its backoffLimit; the failed pods stay listed.
func TestDaemonJobStartError(t *testing.T) {
	H.require(t)
	dir := t.TempDir()
	doc := `apiVersion: batch/v1
kind: Job
metadata: {name: dm-nocmd-job}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: ` + H.Image + `, command: ["dm-no-such-command"]}]
`
	d := startDaemon(t, dir, nil, "--resync", "1m")
	waitDaemonSynced(t, d, 60*time.Second)
	t.Cleanup(func() {
		if _, stderr, code := H.Podrun(t, doc, "down", "-"); code != 0 {
			t.Errorf("cleanup: down: exit %d; stderr:\n%s", code, stderr)
		}
	})
	writeByRename(t, dir, "dm-nocmd-job.yaml", doc)
	waitDaemonLog(t, d, `msg="job failed" job=default/dm-nocmd-job err="job default/dm-nocmd-job failed: BackoffLimitExceeded`, 90*time.Second)
	var failed []string
	for _, p := range listPods(t) {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.Name != "dm-nocmd-job" {
			continue
		}
		var term *corev1.ContainerStateTerminated
		if len(p.Status.ContainerStatuses) == 1 {
			term = p.Status.ContainerStatuses[0].State.Terminated
		}
		if p.Status.Phase != corev1.PodFailed || term == nil || term.Reason != "StartError" || term.ExitCode != 128 || !strings.Contains(term.Message, "dm-no-such-command") {
			t.Errorf("pod %s: %s %+v, want Failed, its container terminated StartError 128", p.Name, p.Status.Phase, term)
		}
		failed = append(failed, p.Name)
	}
	if len(failed) != 2 {
		t.Errorf("pods of the Job: %v, want 2 (backoffLimit 1)", failed)
	}
}
