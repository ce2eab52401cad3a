// Package apply is what `podrun up` and `podrun down` ask of the node for a
// set of manifests: its pods, with the pods its workloads no longer make
// pruned (its Jobs: package jobs), the pods down removes, and what up
// refuses before changing anything. It decides; run.Host does.
package apply

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

// WantSet is what applying set asks, as applying its objects to a cluster:
// its pods, replaced by their workloads' rollouts; with workloads, their
// pods that they no longer make (scaled down, template changed, a Job that
// changed) go, but the pods of the set's Jobs are the Jobs' own.
func WantSet(set *manifest.Set) run.Want {
	want := run.Want{Pods: set.Pods}
	if len(set.Workloads) > 0 {
		owned, jobs := manifest.OwnedBy(set.Workloads), map[string]bool{}
		for _, j := range set.Jobs {
			jobs[j.UID] = true
		}
		want.Owns = func(p *run.PodInfo) bool { return owned(p.Pod) && !jobs[manifest.JobOf(p.Pod)] }
		want.Prune = true
	}
	return want
}

// DownTargets are the pods `down` of targets removes when its manifests
// have workloads: targets, then every pod on the node of the workloads (of
// an older template or a larger scale too), each once.
func DownTargets(pods []*run.PodInfo, targets []run.Target, workloads []string) []run.Target {
	owned := manifest.OwnedBy(workloads)
	for _, p := range pods {
		if t := (run.Target{Namespace: p.Namespace, Name: p.Name}); owned(p.Pod) && !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	return targets
}

// Sourced are the pods on the node that targets name whose source owns
// claims (a running daemon's manifest directory: it starts them again
// while their file exists).
func Sourced(pods []*run.PodInfo, targets []run.Target, owns func(source string) bool) []*run.PodInfo {
	var out []*run.PodInfo
	for _, t := range targets {
		named, _ := run.Named(pods, t)
		for _, p := range named {
			if owns(p.Source) {
				out = append(out, p)
			}
		}
	}
	return out
}

// Unrunnable says why up cannot run set as o asks, before anything is
// changed: a CronJob runs on its schedule, which needs a process that
// stays; a pod of restartPolicy Always never completes.
func Unrunnable(set *manifest.Set, o run.UpOptions) error {
	for _, cj := range set.CronJobs {
		return fmt.Errorf("up: CronJob %s (%s) runs on its schedule, which needs a process that stays: put its file in the manifest directory of podrun daemon; nothing was changed", cj.Key(), cj.Source)
	}
	if o.Wait == run.WaitCompletion {
		for _, p := range set.Pods {
			if p.Spec.RestartPolicy == corev1.RestartPolicyAlways {
				return fmt.Errorf("up --wait=completion: pod %s (%s) has restartPolicy Always: it never completes; nothing was changed", p.Key(), p.Source)
			}
		}
	}
	return nil
}
