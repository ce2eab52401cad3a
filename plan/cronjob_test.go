package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

func TestDecideCronJob(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	every5, err := cron.ParseStandard("*/5 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	spec := func(policy batchv1.ConcurrencyPolicy, deadline *int64, suspend bool) batchv1.CronJobSpec {
		three, one := int32(3), int32(1)
		return batchv1.CronJobSpec{ConcurrencyPolicy: policy, StartingDeadlineSeconds: deadline, Suspend: &suspend,
			SuccessfulJobsHistoryLimit: &three, FailedJobsHistoryLimit: &one}
	}
	sixty := int64(60)
	for _, tc := range []struct {
		name   string
		spec   batchv1.CronJobSpec
		last   time.Duration // since t0
		active int
		now    time.Duration
		want   string
	}{
		{"not due yet", spec(batchv1.AllowConcurrent, nil, false), 0, 0, 4 * time.Minute, "run - next 5m0s"},
		{"due", spec(batchv1.AllowConcurrent, nil, false), 0, 0, 5*time.Minute + time.Second, "run 5m0s next 10m0s"},
		{"already run for it", spec(batchv1.AllowConcurrent, nil, false), 5 * time.Minute, 0, 6 * time.Minute, "run - next 10m0s"},
		{"missed several: the most recent", spec(batchv1.AllowConcurrent, nil, false), 0, 0, 17 * time.Minute, "run 15m0s next 20m0s"},
		{"too late for the starting deadline", spec(batchv1.AllowConcurrent, &sixty, false), 0, 0, 7 * time.Minute, "run - next 10m0s"},
		{"within the starting deadline", spec(batchv1.AllowConcurrent, &sixty, false), 0, 0, 5*time.Minute + 30*time.Second, "run 5m0s next 10m0s"},
		{"allow: beside the active one", spec(batchv1.AllowConcurrent, nil, false), 0, 1, 5 * time.Minute, "run 5m0s next 10m0s"},
		{"forbid: not while one runs", spec(batchv1.ForbidConcurrent, nil, false), 0, 1, 5 * time.Minute,
			"run - skipped (concurrencyPolicy Forbid: a Job of it is still running) next 10m0s"},
		{"replace", spec(batchv1.ReplaceConcurrent, nil, false), 0, 1, 5 * time.Minute, "run 5m0s replace next 10m0s"},
		{"suspended", spec(batchv1.AllowConcurrent, nil, true), 0, 0, 5 * time.Minute, "run - next 10m0s"},
		{"a year missed, minutely", spec(batchv1.AllowConcurrent, nil, false), -365 * 24 * time.Hour, 0, 30 * time.Second, "run 0s next 5m0s"},
	} {
		a := DecideCronJob(tc.spec, every5, t0.Add(tc.last), tc.active, t0.Add(tc.now))
		got := "run -"
		if !a.Run.IsZero() {
			got = "run " + a.Run.Sub(t0).String()
		}
		if a.ReplaceActive {
			got += " replace"
		}
		if a.Skipped != "" {
			got += " skipped (" + a.Skipped + ")"
		}
		got += " next " + a.Next.Sub(t0).String()
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestCronJobHistory(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	two, one := int32(2), int32(1)
	spec := batchv1.CronJobSpec{SuccessfulJobsHistoryLimit: &two, FailedJobsHistoryLimit: &one}
	var runs []CronJobRun
	for i, failed := range []bool{false, true, false, false, true, false} {
		runs = append(runs, CronJobRun{Name: fmt.Sprint("j", i), Scheduled: t0.Add(time.Duration(i) * time.Minute), Failed: failed})
	}
	if got := fmt.Sprint(CronJobHistory(spec, runs)); got != "[j2 j1 j0]" {
		t.Errorf("deleted %s, want [j2 j1 j0] (kept j5 j3 succeeded, j4 failed)", got)
	}
}
