// podrun daemon.

package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/podrun/podrun/daemon"
	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/kubenode"
	"github.com/podrun/podrun/rollout"
	"github.com/podrun/podrun/updates"
)

func daemonCommand() *cli.Command {
	return &cli.Command{
		Name:        "daemon",
		Usage:       "keep a manifest directory's pods running (static pods)",
		Description: "Keeps the pods of --manifest-dir (and --manifest-url) running, like the kubelet's static pods.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "manifest-dir", Value: "/etc/podrun/manifests", EnvVars: []string{"PODRUN_MANIFEST_DIR"}, Usage: "directory of Pod manifests (.yaml, .yml, .json; not recursive)"},
			&cli.StringFlag{Name: "manifest-url", EnvVars: []string{"PODRUN_MANIFEST_URL"}, Usage: "also keep the pods served at this https URL (polled every --resync; shown with credentials and query values redacted)"},
			&cli.BoolFlag{Name: "insecure-manifest-url", Usage: "allow a plain http --manifest-url"},
			&cli.StringFlag{Name: "manifest-url-header-file", EnvVars: []string{"PODRUN_MANIFEST_URL_HEADER_FILE"}, Usage: "send the \"Name: value\" lines of this file (e.g. Authorization: Bearer TOKEN) with every fetch of --manifest-url; read at each fetch, root-owned and not group- or world-writable"},
			&cli.DurationFlag{Name: "resync", Value: 10 * time.Second, Usage: "full re-scan period, the backstop to inotify"},
			&cli.DurationFlag{Name: "settle", Value: 500 * time.Millisecond, Usage: "how long a written file must stay unchanged before it is read"},
			&cli.DurationFlag{Name: "progress-deadline", Value: 10 * time.Minute, EnvVars: []string{"PODRUN_PROGRESS_DEADLINE"},
				Usage: "a changed pod not Ready after this long (or failing for certain first) is rolled back to its last Ready version, unless its podrun.io/progress-deadline-seconds annotation or its Deployment's progressDeadlineSeconds says otherwise; 0: no rollback"},
			&cli.DurationFlag{Name: "pod-timeout", Value: 5 * time.Minute, Usage: "give up starting a pod after this long (it is retried at the next re-scan)"},
			&cli.StringFlag{Name: "listen", Usage: "serve /healthz, /readyz and /metrics on a loopback host:port or unix:PATH (default off)"},
			&cli.BoolFlag{Name: "stop-pods-on-exit", Usage: "terminate the pods on SIGTERM (by default they keep running)"},
			&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"PODRUN_KUBECONFIG"}, Usage: "also be a node of this kubeconfig's cluster (a node's credentials, system:node:NAME): register the Node, renew its Lease and status, run the pods bound to it and write back their status, and show its static pods as mirror pods"},
			&cli.StringFlag{Name: "node-ip", EnvVars: []string{"PODRUN_NODE_IP"}, Usage: "with --kubeconfig: the Node's InternalIP address(es), IP or IPv4,IPv6 (the kubelet's --node-ip): each an address of this host, or loopback; default: what the node's name resolves to, else the default route's interface's address (0.0.0.0 or :: picks that family's)"},
			&cli.StringFlag{Name: "images-dir", EnvVars: []string{"PODRUN_IMAGES_DIR"}, Usage: "image archives (.tar, .tar.gz, .tgz, .tar.zst; OCI or docker) imported at start and when they appear, as k3s's air-gap images (default: <root>/images)"},
			&cli.GenericFlag{Name: "update-window", Value: &repeated{},
				Usage: "replace a running pod by its changed version only inside this window of the node's local time, \"[DAYS] HH:MM[:SS]-HH:MM[:SS]\" (DAYS as systemd writes them: Mon..Fri, Sat,Sun; e.g. \"Mon..Fri 02:00-04:00\"); its images are pulled at once (repeatable; default: any time)"},
			&cli.DurationFlag{Name: "update-lock-timeout", Value: time.Hour,
				Usage: "a pod that holds its update lock (flock on updates.lock in the emptyDir volume its podrun.io/update-lock-volume annotation names) is replaced anyway after holding it this long; 0: never"},
		}, slices.Concat(admissionFlags(), logFlags(), retentionFlags(), imageGCFlags(), nodeAPIFlags())...),
		Action: func(c *cli.Context) error {
			o, err := daemonOptions(c)
			if err != nil {
				return err
			}
			var heartbeat, cluster kubenode.Client
			var ips []net.IP
			var rc *rest.Config
			if file := c.String("kubeconfig"); file != "" {
				if heartbeat, cluster, rc, err = clusterClients(file); err != nil {
					return err
				}
				if ips, err = nodeIPs(c); err != nil {
					return err
				}
			}
			ctx, stop := signalContext(c)
			defer stop()
			var hostIPs *podHostIPs // a node's pods' host IPs are its Node's
			var lookup func() []net.IP
			if cluster != nil {
				cfg, err := config(c)
				if err != nil {
					return err
				}
				hostIPs = newPodHostIPs(ctx, cfg, ips)
				lookup = hostIPs.get
			}
			life, err := daemon.Hold(ctx, o.StatusFile)
			if err != nil {
				return err
			}
			defer life.Release()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			h, err := openHostRetrying(ctx, c, lookup)
			if err != nil {
				return err
			}
			defer h.Close()
			if cluster != nil {
				cfg, err := config(c)
				if err != nil {
					return err
				}
				port, err := nodeAPIPort(c)
				if err != nil {
					return err
				}
				explain := apiExplain(c.String("kubeconfig"), rc)
				if p := kubenode.CredsOf(c.String("kubeconfig"), rc).CertProblem(clock.RealClock{}.Now()); p != "" {
					slog.Error(p) // the API server will refuse it: said before it does
				}
				agent, err := nodeAgent(cfg, h, heartbeat, cluster, port, ips, explain)
				if err != nil {
					return err
				}
				hostIPs.agent.Store(agent)
				if err := serveNodeAPI(ctx, c, cfg, h, heartbeat, ips); err != nil {
					return err
				}
				src, err := podSource(ctx, cfg, o.Admission, h, cluster, rc, explain)
				if err != nil {
					return err
				}
				o.Cluster = src
				if o.Mirrors, err = mirrorKeeper(ctx, cluster, o.Admission.StaticNode, src); err != nil {
					return err
				}
				go agent.Run(ctx)
			}
			metrics := daemon.NewMetrics()
			if link := h.Images().Link(); link != nil {
				metrics.CountPulls(link)
			}
			metrics.GaugePulls(daemonPulls)
			o.Pulls = daemonPulls
			d := daemon.New(h, o, slog.Default(), metrics)
			var l net.Listener
			if addr := c.String("listen"); addr != "" {
				if l, err = daemon.Listen(addr); err != nil {
					return usageError{fmt.Sprintf("daemon: --listen: %v", err)}
				}
			}
			slog.Info("podrun daemon started", "manifest-dir", o.ManifestDir, "resync", o.Resync)
			return d.Serve(ctx, hup, l)
		},
	}
}

// daemonOptions reads the daemon's flags, checking what they name before
// anything starts.
func daemonOptions(c *cli.Context) (daemon.Options, error) {
	var windows []updates.Window
	for _, s := range c.Generic("update-window").(*repeated).values {
		w, err := updates.ParseWindow(s)
		if err != nil {
			return daemon.Options{}, usageError{fmt.Sprintf("daemon: --update-window: %v", err)}
		}
		windows = append(windows, w)
	}
	if c.Duration("update-lock-timeout") < 0 {
		return daemon.Options{}, usageError{"daemon: --update-lock-timeout: negative"}
	}
	dir, err := filepath.Abs(c.String("manifest-dir"))
	if err != nil {
		return daemon.Options{}, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return daemon.Options{}, usageError{fmt.Sprintf("daemon: --manifest-dir %s is not a directory", dir)}
	}
	admit, err := manifestAdmission(c)
	if err != nil {
		return daemon.Options{}, err
	}
	// The daemon's pods are static pods of this node, named and
	// annotated as the kubelet's (manifest/static.go).
	if admit.StaticNode, err = downward.NodeName(); err != nil {
		return daemon.Options{}, fmt.Errorf("daemon: the node's name: %w", err)
	}
	retention, err := logRetention(c)
	if err != nil {
		return daemon.Options{}, err
	}
	imagePolicy, err := imageGCPolicy(c)
	if err != nil {
		return daemon.Options{}, err
	}
	// What the daemon keeps its state and its containerd in must be
	// root's alone: refuse to start on anything else.
	root := c.String("root")
	if err := daemon.CheckStateDirs(daemon.StateDirs(root, c.String("run-dir"))...); err != nil {
		return daemon.Options{}, usageError{fmt.Sprintf("daemon: %v", err)}
	}
	images, err := daemon.MakeImagesDir(c.String("images-dir"), root)
	if err != nil {
		return daemon.Options{}, err
	}
	if u := c.String("manifest-url"); u != "" {
		if err := daemon.CheckURL(u, c.Bool("insecure-manifest-url")); err != nil {
			return daemon.Options{}, usageError{fmt.Sprintf("daemon: --manifest-url: %v", err)}
		}
	}
	return daemon.Options{
		ManifestDir: dir, URL: c.String("manifest-url"), URLHeaderFile: c.String("manifest-url-header-file"),
		Resync: c.Duration("resync"), Settle: c.Duration("settle"),
		StopPodsOnExit: c.Bool("stop-pods-on-exit"), StatusFile: daemon.StatusFile(root), Root: root, PodTimeout: c.Duration("pod-timeout"),
		ProgressDeadline: c.Duration("progress-deadline"),
		History:          rollout.Open(root),
		Admission:        admit, LogRetention: retention, ImagesDir: images, ImageGC: imagePolicy,
		UpdateWindows: windows, UpdateLockTimeout: c.Duration("update-lock-timeout"),
	}, nil
}

// repeated is a flag's values, one per time it is given, taken whole (a
// StringSliceFlag would split "Sat,Sun 02:00-04:00" at its comma).
type repeated struct{ values []string }

func (r *repeated) Set(v string) error { r.values = append(r.values, v); return nil }

func (r *repeated) String() string { return strings.Join(r.values, "; ") }
