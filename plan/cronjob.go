package plan

import (
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
)

// Scheduler is a CronJob's schedule (robfig/cron's Schedule).
type Scheduler interface {
	Next(time.Time) time.Time
}

// CronJobActions is what the cronjob controller does with a CronJob now.
type CronJobActions struct {
	// Run is the scheduled time to make a Job for now (zero: none).
	Run time.Time
	// ReplaceActive: the Jobs still running are deleted first (Replace).
	ReplaceActive bool
	// Skipped says why a Job that was due is not made.
	Skipped string
	// Next is when to decide again: the next scheduled time.
	Next time.Time
}

// maxMissed bounds how many missed times are looked through (the
// controller gives up counting at 100 and takes the most recent).
const maxMissed = 100

// DecideCronJob is the cronjob controller's syncCronJob: from the
// CronJob's spec (defaulted), its schedule, the last time a Job was made
// for (or when the CronJob was first seen), how many of its Jobs are still
// active and now, whether a Job is made now, for which scheduled time. It
// is pure.
func DecideCronJob(spec batchv1.CronJobSpec, sched Scheduler, last time.Time, active int, now time.Time) CronJobActions {
	a := CronJobActions{Next: sched.Next(now)}
	if *spec.Suspend {
		return a
	}
	earliest := last
	if d := spec.StartingDeadlineSeconds; d != nil {
		// A time missed by more than the deadline is not run at all.
		earliest = later(earliest, now.Add(-time.Duration(*d)*time.Second))
	}
	// The most recent scheduled time in (earliest, now].
	var due time.Time
	for t, n := sched.Next(earliest), 0; !t.IsZero() && !t.After(now); t, n = sched.Next(t), n+1 {
		due = t
		if n >= maxMissed { // too many missed: jump to the last one before now
			for t := sched.Next(now.Add(-24 * time.Hour)); !t.IsZero() && !t.After(now); t = sched.Next(t) {
				due = t
			}
			break
		}
	}
	switch {
	case due.IsZero():
		return a
	case active > 0 && spec.ConcurrencyPolicy == batchv1.ForbidConcurrent:
		a.Skipped = "concurrencyPolicy Forbid: a Job of it is still running"
		return a
	case active > 0 && spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent:
		a.ReplaceActive = true
	}
	a.Run = due
	return a
}

// CronJobRun is one finished Job of a CronJob.
type CronJobRun struct {
	Name      string
	Scheduled time.Time
	Failed    bool
}

// CronJobHistory returns the finished Jobs to delete: all but the newest
// successfulJobsHistoryLimit that completed and failedJobsHistoryLimit
// that failed.
func CronJobHistory(spec batchv1.CronJobSpec, runs []CronJobRun) []string {
	runs = slices.Clone(runs)
	slices.SortFunc(runs, func(a, b CronJobRun) int { return b.Scheduled.Compare(a.Scheduled) }) // newest first
	keep := map[bool]int{false: int(*spec.SuccessfulJobsHistoryLimit), true: int(*spec.FailedJobsHistoryLimit)}
	var out []string
	for _, r := range runs {
		if keep[r.Failed] > 0 {
			keep[r.Failed]--
			continue
		}
		out = append(out, r.Name)
	}
	return out
}
