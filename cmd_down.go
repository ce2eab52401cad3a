// podrun down.

package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podrun/podrun/apply"
	"github.com/podrun/podrun/jobs"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

func downCommand() *cli.Command {
	return &cli.Command{
		Name:      "down",
		Usage:     "stop pods gracefully and remove them (logs are kept)",
		ArgsUsage: "[-f FILE|DIR|-]... [FILE|DIR|-|POD]...  (POD is NAME or NAMESPACE/NAME)",
		Flags: []cli.Flag{
			filenameFlag(),
			namespaceFlag("namespace of each POD given as a NAME (default: default); a FILE's pods keep their own"),
			&cli.IntFlag{Name: "grace-period", Value: -1, Usage: "seconds to wait after the stop signal, overriding the pods' terminationGracePeriodSeconds (-1: the pods' own)"},
		},
		Action: func(c *cli.Context) error {
			targets, set, err := downTargets(c)
			if err != nil {
				return err
			}
			var o run.DownOptions
			if g := c.Int("grace-period"); g >= 0 {
				d := time.Duration(g) * time.Second
				o.GracePeriod = &d
			}
			return withHost(c.Context, c, func(h *run.Host) error {
				// The node's pods, listed once: for the workloads' pods, and
				// for which are the daemon's.
				own := openOwner(c)
				var pods []*run.PodInfo
				if len(set.Workloads) > 0 || own.DaemonRuns() {
					var err error
					if pods, err = h.Pods(c.Context); err != nil && len(set.Workloads) > 0 {
						return err // the notes below do without
					}
				}
				if len(set.Workloads) > 0 {
					// Every pod of the file's workloads, of an older template or
					// a larger scale too.
					targets = apply.DownTargets(pods, targets, set.Workloads)
				}
				for _, p := range apply.Sourced(pods, targets, own.Owns) {
					fmt.Fprintf(os.Stderr, "note: pod %s comes from %s: the running podrun daemon will start it again while that file exists\n", p.Key(), p.Source)
				}
				var errs []error
				for _, j := range set.Jobs {
					// As deleting the Job: applied again, it runs again.
					if err := jobs.New(h, c.String("root")).Forget(j.Namespace, j.Name); err != nil {
						errs = append(errs, err)
					} else {
						fmt.Printf("job/%s deleted\n", j.Key())
					}
				}
				for _, r := range h.Down(c.Context, targets, o) {
					switch {
					case r.Err != nil:
						errs = append(errs, fmt.Errorf("pod %s: %w", r.Pod, r.Err))
					case r.Found:
						fmt.Printf("pod/%s deleted\n", r.Pod)
					default:
						fmt.Printf("pod/%s not found (nothing to do)\n", r.Pod)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
}

// downTargets reads pod names from manifests (-f, and "-", files,
// directories among the arguments) and from NAME or NAMESPACE/NAME
// arguments; the set read has the manifests' workloads and Jobs.
func downTargets(c *cli.Context) ([]run.Target, *manifest.Set, error) {
	paths, err := manifestPaths(c)
	if err != nil {
		return nil, nil, err
	}
	if len(paths) == 0 {
		return nil, nil, usageError{"down: name at least one FILE, DIR, - or POD (-f, or arguments)"}
	}
	var targets []run.Target
	paths = paths[:len(paths)-c.NArg()] // those of -f
	for _, a := range c.Args().Slice() {
		if _, err := os.Stat(a); a == "-" || err == nil {
			paths = append(paths, a)
			continue
		}
		target, err := podTarget(c, a)
		if err != nil {
			return nil, nil, err
		}
		targets = append(targets, target)
	}
	if len(paths) > 0 {
		// Read as the most permissive node would, so that a pod up ran
		// with --allowed-unsafe-sysctls can be taken down by its file; the
		// objects its pods reference may be in a --configmap file, or gone.
		set, err := manifest.Options{AllowedUnsafeSysctls: manifest.NamespacedSysctls}.LoadUnresolved(paths, os.Stdin)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range set.Pods {
			targets = append(targets, run.Target{Namespace: p.Namespace, Name: p.Name})
		}
		return targets, set, nil
	}
	return targets, &manifest.Set{}, nil
}
