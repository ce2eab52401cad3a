// podrun rollout: kubectl's rollout history, undo and status, for one pod.

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/owner"
	"github.com/podrun/podrun/rollout"
	"github.com/podrun/podrun/run"
)

func rolloutCommand() *cli.Command {
	return &cli.Command{
		Name:  "rollout",
		Usage: "a pod's Ready versions: history, undo, status",
		Subcommands: []*cli.Command{
			{
				Name: "history", Usage: "list the versions kept (the last 3 that were Ready)", ArgsUsage: "POD | -f FILE",
				Flags: []cli.Flag{namespaceFlag(podNamespace), filenameFlag()},
				Action: func(c *cli.Context) error {
					return withRolloutPod(c, func(h *run.Host, p *run.PodInfo) error {
						revs, err := versions(c).List(p.Key())
						if err != nil {
							return err
						}
						fmt.Printf("pod/%s\n", p.Name)
						tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
						fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
						for _, r := range revs {
							cause := r.ChangeCause()
							if cause == "" {
								cause = "<none>"
							}
							fmt.Fprintf(tw, "%d\t%s\n", r.Revision, cause)
						}
						return tw.Flush()
					})
				},
			},
			{
				Name: "undo", Usage: "go back to the version before (or --to-revision)",
				Description: "A pod of up is replaced at once; a daemon's pod keeps the version until its file changes.", ArgsUsage: "POD | -f FILE",
				Flags: []cli.Flag{namespaceFlag(podNamespace), filenameFlag(),
					&cli.IntFlag{Name: "to-revision", Usage: "the revision to go back to (0: the one before the running version)"},
					&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "give up on the version not Ready after this long (a pod of up)"}},
				Action: func(c *cli.Context) error {
					return withRolloutPod(c, func(h *run.Host, p *run.PodInfo) error {
						own := openOwner(c)
						owned := own.Owns(p.Source)
						if pid := own.Ended(p.Source); pid != 0 {
							fmt.Fprintf(os.Stderr, "note: no podrun daemon runs (the status file of pid %d is left from one that ended): pod %s is rolled back here\n", pid, p.Key())
						}
						o := rollout.UndoOptions{Revision: c.Int("to-revision"), Daemon: owned,
							Up: run.UpOptions{Wait: run.WaitReady, Timeout: c.Duration("timeout")}}
						to, _, err := versions(c).Undo(c.Context, h, p, o)
						if err != nil {
							return err
						}
						if owned {
							// The daemon reads its sources again and applies the version.
							if err := own.Reload(); errors.Is(err, owner.ErrNoDaemon) {
								return fmt.Errorf("pod %s: revision %d recorded, not applied: %w; a daemon applies it when it starts", p.Key(), to.Revision, err)
							} else if err != nil {
								return fmt.Errorf("asking the daemon to apply it: %w", err)
							}
							fmt.Printf("pod/%s rolled back to revision %d (the daemon applies it; kept until %s changes)\n", p.Name, to.Revision, p.Source)
							return nil
						}
						fmt.Printf("pod/%s rolled back to revision %d\n", p.Name, to.Revision)
						return nil
					})
				},
			},
			{
				Name: "status", Usage: "wait for the pod's version to become Ready", ArgsUsage: "POD | -f FILE",
				Flags: []cli.Flag{namespaceFlag(podNamespace), filenameFlag(),
					&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Value: true, Usage: "wait for the outcome"},
					&cli.DurationFlag{Name: "progress-deadline", Value: 10 * time.Minute, Usage: "the deadline of a pod without the podrun.io/progress-deadline-seconds annotation"},
					&cli.DurationFlag{Name: "timeout", Usage: "stop waiting after this long (0: no limit)"}},
				Action: rolloutStatus,
			},
		},
	}
}

// rolloutStatus prints where the pod's version stands, as kubectl's
// rollout status: a waiting line, then "successfully rolled out", or an
// error (exit 1) when it failed.
func rolloutStatus(c *cli.Context) error {
	ctx, stop := signalContext(c)
	defer stop()
	if t := c.Duration("timeout"); t > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	target, err := rolloutTarget(c)
	if err != nil {
		return err
	}
	return withHost(ctx, c, func(h *run.Host) error {
		if p, err := h.Pod(ctx, target); err == nil {
			if done, err := awaitHeld(ctx, c, h, target, p); done || err != nil {
				return err
			}
		}
		said := false
		v, name, err := versions(c).AwaitRollout(ctx, h, target, c.Duration("progress-deadline"), c.Bool("watch"), func(name string) {
			if !said {
				fmt.Printf("Waiting for pod %q rollout to finish: not Ready yet...\n", name)
				said = true
			}
		})
		if err != nil {
			return err
		}
		line, err := rollout.Outcome(v, name)
		if line != "" {
			fmt.Println(line)
		}
		return err
	})
}

// awaitHeld says what a pod's update held back by the daemon waits for
// (an update window, the pod's update lock), and with --watch waits until
// it is no longer held and the pod there (p) is replaced; done: nothing
// more to say (not watching).
func awaitHeld(ctx context.Context, c *cli.Context, h *run.Host, target run.Target, p *run.PodInfo) (done bool, err error) {
	said := ""
	for {
		pe := openOwner(c).PendingOf(p.Key())
		if pe == nil && said == "" {
			return false, nil
		}
		if pe == nil { // applied now: the new version's rollout follows
			if now, err := h.Pod(ctx, target); err == nil && now.UID != p.UID {
				return false, nil
			}
		} else if pe.Reason != said {
			fmt.Printf("Waiting for pod %q rollout to finish: %s%s\n", p.Name, pe.Message, staged(*pe))
			said = pe.Reason
		}
		if !c.Bool("watch") {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return true, fmt.Errorf("timed out waiting for pod %q's update: %w", p.Name, ctx.Err())
		case <-clock.RealClock{}.After(time.Second):
		}
	}
}

// versions are the versions of the node's pods kept under --root.
func versions(c *cli.Context) *rollout.History { return rollout.Open(c.String("root")) }

// withRolloutPod opens the host and finds the pod the argument names: a
// POD, or the pod of a FILE.
func withRolloutPod(c *cli.Context, fn func(h *run.Host, p *run.PodInfo) error) error {
	target, err := rolloutTarget(c)
	if err != nil {
		return err
	}
	return withHost(c.Context, c, func(h *run.Host) error {
		p, err := h.Pod(c.Context, target)
		if err != nil {
			return err
		}
		return fn(h, p)
	})
}

// rolloutTarget is the pod the argument names: a manifest file's one pod
// (-f FILE, or FILE), else NAME or NAMESPACE/NAME.
func rolloutTarget(c *cli.Context) (run.Target, error) {
	paths, err := manifestPaths(c)
	if err != nil {
		return run.Target{}, err
	}
	if len(paths) != 1 {
		return run.Target{}, usageError{fmt.Sprintf("rollout %s: name one POD or FILE", c.Command.Name)}
	}
	arg := paths[0]
	if fi, err := os.Stat(arg); c.NArg() == 1 && (err != nil || !fi.Mode().IsRegular()) {
		return podTarget(c, arg)
	}
	set, err := manifest.Options{}.Load([]string{arg}, os.Stdin)
	if err != nil {
		return run.Target{}, err
	}
	if len(set.Pods) != 1 {
		return run.Target{}, usageError{fmt.Sprintf("rollout %s: %s holds %d pods: name one POD", c.Command.Name, arg, len(set.Pods))}
	}
	return run.Target{Namespace: set.Pods[0].Namespace, Name: set.Pods[0].Name}, nil
}
