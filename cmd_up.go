// podrun up.

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/apply"
	"github.com/podrun/podrun/jobs"
	"github.com/podrun/podrun/plan"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/waves"
)

func upCommand() *cli.Command {
	return &cli.Command{
		Name:  "up",
		Usage: "run the pods of manifests; a changed one replaces its pod",
		Description: "Runs every pod of the manifests (-f, or FILE arguments): a changed manifest replaces its pod,\n" +
			"an unchanged one is left alone. Returns once the pods are Ready (--wait); with --foreground\n" +
			"it stays and supervises them until SIGINT or SIGTERM.",
		ArgsUsage: "[-f] FILE|DIR|- ...",
		Flags: append([]cli.Flag{
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "give up on a pod that is not up (or done) after this long"},
			&cli.StringFlag{Name: "wait", Value: string(run.WaitReady),
				Usage: "return when pods are: ready (the Ready condition, or finished first, as kubectl wait --for=condition=Ready), completion (Succeeded or Failed: exit 0 or 1; restartPolicy Never or OnFailure only), running (containers started), none (same as running)"},
			&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "same as --wait=running"},
			filenameFlag(),
			&cli.BoolFlag{Name: "foreground", Usage: "stay and supervise (probes, hooks, restarts) until SIGINT or SIGTERM, then stop the pods gracefully"},
			&cli.BoolFlag{Name: "keep-on-failure", Usage: "leave a failed pod's parts in place for inspection"},
			&cli.BoolFlag{Name: "no-rollback", Usage: "a changed pod that does not become Ready is not replaced by its last Ready version (it is removed, the version before it gone too)"},
			configMapFlag(),
		}, append(admissionFlags(), logFlags()...)...),
		Action: func(c *cli.Context) error {
			o := run.UpOptions{Timeout: c.Duration("timeout"), Wait: run.Wait(c.String("wait")), KeepOnFailure: c.Bool("keep-on-failure"), Foreground: c.Bool("foreground"),
				Rollback: !c.Bool("no-rollback") && !c.Bool("keep-on-failure")}
			switch {
			case c.Bool("detach") || o.Wait == "none":
				o.Wait = run.WaitRunning
			case o.Wait != run.WaitReady && o.Wait != run.WaitRunning && o.Wait != run.WaitCompletion:
				return usageError{fmt.Sprintf("up: --wait must be ready, completion, running or none, not %q", o.Wait)}
			}
			set, err := load(c)
			if err != nil {
				return err
			}
			if err := apply.Unrunnable(set, o); err != nil {
				return usageError{err.Error()}
			}
			ctx, stop := signalContext(c)
			defer stop()
			return withHost(ctx, c, func(h *run.Host) error {
				want := apply.WantSet(set)
				want.Yield = openOwner(c).Owns // a running daemon's pods are its own (docs/daemon.md)
				var errs []error
				for _, r := range waves.Sync(ctx, h, want, set.Rollouts, o) {
					if r.Err != nil {
						errs = append(errs, r.Err)
						continue
					}
					printResult(r)
				}
				for _, r := range jobs.New(h, c.String("root")).RunJobs(ctx, set.Jobs, jobs.Options{UpOptions: o}) {
					for _, p := range r.Pods {
						printResult(p)
					}
					if r.Err != nil {
						errs = append(errs, r.Err)
						continue
					}
					fmt.Printf("job/%s %s\n", r.Job, describeJob(r.Status))
				}
				if o.Foreground {
					// Also when a signal came during start-up: the pods already up
					// are terminated, not left running unsupervised.
					if ctx.Err() == nil {
						stderr.Println("supervising; SIGINT or SIGTERM stops the pods")
					}
					errs = append(errs, h.Supervise(ctx))
				}
				return errors.Join(errs...)
			})
		},
	}
}

// printResult prints what up did with a pod.
func printResult(r run.Result) {
	if r.Phase == "" { // removed
		fmt.Printf("pod/%s %s\n", r.Pod, r.Action)
		return
	}
	fmt.Printf("pod/%s %s (%s)\n", r.Pod, r.Action, r.Phase)
}

// describeJob says where a Job stands, as kubectl's COMPLETIONS and
// conditions would.
func describeJob(st plan.JobStatus) string {
	switch st.Condition {
	case plan.JobComplete:
		return fmt.Sprintf("complete (succeeded %d, failed %d)", st.Succeeded, st.Failed)
	case plan.JobSuspended:
		return "suspended"
	}
	return fmt.Sprintf("started (active %d, succeeded %d, failed %d)", st.Active, st.Succeeded, st.Failed)
}
