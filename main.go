// Command podrun runs Kubernetes Pod manifests on one machine, straight on
// containerd, with no API server. This file is the only code that knows the
// command line: it turns flags into run.Config and calls into the packages.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/podrun/podrun/daemon"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/ctrd"
	"github.com/podrun/podrun/imagegc"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/pause"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/status"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitPodFailed   = 1 // a pod failed, or the timeout passed before it was up
	exitInvalid     = 2 // invalid input or usage
	exitUnavailable = 3 // the runtime (containerd, CNI) is unavailable
)

const defaultAddress = "/run/containerd/containerd.sock"

func main() {
	app := newApp()
	err := app.Run(flagsFirst(app, os.Args))
	var problems manifest.Problems
	switch {
	case errors.As(err, &problems):
		fmt.Fprintln(os.Stderr, problems.Error())
		fmt.Fprintf(os.Stderr, "podrun: %d problem(s); nothing was changed\n", problems.Total())
	case err != nil && err.Error() != "":
		fmt.Fprintf(os.Stderr, "podrun: %v\n", err)
	}
	os.Exit(exitCode(err))
}

// flagsFirst moves a command's flags in front of its arguments, so that
// `podrun logs POD -c NAME` and `podrun exec POD -c NAME -- CMD` work as with
// kubectl: urfave/cli stops reading flags at the first argument. What
// follows "--" is left alone.
func flagsFirst(app *cli.App, args []string) []string {
	if n := len(args); n > 1 && args[n-1] == completionFlag {
		return args // a shell asking for completions: urfave/cli reads it as it is
	}
	out := append([]string{}, args[0])
	i := 1
	flags := app.Flags
	var cmds []*cli.Command = app.Commands
	// Global flags, then the command and subcommand names.
	for i < len(args) {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" && a != "--" {
			out = append(out, a)
			if takesValue(flags, a) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			i++
			continue
		}
		cmd := findCommand(cmds, a)
		if cmd == nil {
			break
		}
		out = append(out, a)
		i++
		flags, cmds = cmd.Flags, cmd.Subcommands
		if len(cmds) == 0 {
			break
		}
	}
	if len(cmds) > 0 || i == 1 {
		return args // no leaf command: leave it to the parser
	}
	var positional, rest []string
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = args[i+1:]
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			out = append(out, a)
			if takesValue(flags, a) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	out = append(out, "--")
	return append(append(out, positional...), rest...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether a flag token ("-c", "--tail") needs the next
// argument as its value.
func takesValue(flags []cli.Flag, token string) bool {
	if strings.Contains(token, "=") {
		return false
	}
	name := strings.TrimLeft(token, "-")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}

// usageError marks bad command-line usage (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func exitCode(err error) int {
	var problems manifest.Problems
	var usage usageError
	var coded cli.ExitCoder
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &problems), errors.As(err, &usage):
		return exitInvalid
	case errors.Is(err, engine.ErrUnavailable):
		return exitUnavailable
	case errors.As(err, &coded):
		return coded.ExitCode()
	case strings.Contains(err.Error(), "flag provided but not defined"), strings.Contains(err.Error(), "Required flag"):
		return exitInvalid
	}
	return exitPodFailed
}

func newApp() *cli.App {
	return &cli.App{
		Name:                 "podrun",
		Usage:                "run Kubernetes Pod manifests on one machine, straight on containerd",
		Version:              version,
		HideVersion:          true,
		EnableBashCompletion: true,
		Flags:                globalFlags(),
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err.Error()}
		},
		Before: func(c *cli.Context) error {
			level := slog.LevelInfo
			if c.Bool("debug") {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
			ctrd.SetLogging(c.Bool("debug")) // containerd's own log lines only with --debug
			if os.Getenv("PODRUN_NAMESPACE") != "" && os.Getenv("PODRUN_CONTAINERD_NAMESPACE") == "" {
				fmt.Fprintln(os.Stderr, "podrun: PODRUN_NAMESPACE is deprecated and goes in the next release: use PODRUN_CONTAINERD_NAMESPACE")
			}
			return nil
		},
		Commands: []*cli.Command{
			upCommand(), downCommand(), psCommand(), statusCommand(), logsCommand(), execCommand(), daemonCommand(),
			validateCommand(), imageCommand(), versionCommand(), completionCommand(), gcCommand(),
			// Run by the runtime, not by users: the sandbox's PID 1 and the shim's log driver.
			{Name: "pause", Hidden: true, Action: func(*cli.Context) error { os.Exit(pause.Run()); return nil }},
			{Name: "cri-log", Hidden: true, Action: func(c *cli.Context) error {
				logs.RunDriver(c.Args().First())
				return nil
			}},
		},
	}
}

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "address", Value: defaultAddress, EnvVars: []string{"PODRUN_ADDRESS"},
			Usage: "containerd socket; when the default answers nothing, podrun starts its own private containerd"},
		// PODRUN_NAMESPACE is the deprecated name of PODRUN_CONTAINERD_NAMESPACE (one release).
		&cli.StringFlag{Name: "containerd-namespace", Value: "podrun", EnvVars: []string{"PODRUN_CONTAINERD_NAMESPACE", "PODRUN_NAMESPACE"}, Usage: "containerd namespace of podrun's containers (-n is the pods' namespace, as in kubectl)"},
		&cli.StringFlag{Name: "root", Value: "/var/lib/podrun", EnvVars: []string{"PODRUN_ROOT"}, Usage: "state directory"},
		&cli.StringFlag{Name: "log-dir", Value: "/var/log/pods", EnvVars: []string{"PODRUN_LOG_DIR"}, Usage: "container log directory"},
		&cli.StringFlag{Name: "cni-conf-dir", Value: "/etc/cni/net.d", EnvVars: []string{"PODRUN_CNI_CONF_DIR"},
			Usage: "CNI configuration directory; when empty, podrun's own bridge network is used"},
		&cli.StringSliceFlag{Name: "cni-bin-dir", Value: cli.NewStringSlice(sandbox.DefaultBinDirs...), EnvVars: []string{"PODRUN_CNI_BIN_DIR"},
			Usage: "CNI plugin directories, searched in order"},
		&cli.StringFlag{Name: "pause-image", EnvVars: []string{"PODRUN_PAUSE_IMAGE"}, Usage: "sandbox image (default: podrun's built-in pause)"},
		&cli.StringFlag{Name: "cluster-domain", Value: "cluster.local", EnvVars: []string{"PODRUN_CLUSTER_DOMAIN"},
			Usage: "domain of pod FQDNs (hostname.subdomain.namespace.svc.DOMAIN), like the kubelet's --cluster-domain"},
		&cli.StringFlag{Name: "registry-config", Value: defaultRegistryConfig(), EnvVars: []string{"PODRUN_REGISTRY_CONFIG"},
			Usage: "Docker config file whose \"auths\" give registry credentials (used after the pods' imagePullSecrets)"},
		&cli.StringFlag{Name: "hosts-dir", EnvVars: []string{"PODRUN_HOSTS_DIR"}, Value: "/etc/containerd/certs.d:/etc/docker/certs.d",
			Usage: "directories (colon-separated) of registry host configuration in containerd's hosts.toml layout: mirrors, TLS (as nerdctl's --hosts-dir)"},
		&cli.StringSliceFlag{Name: "insecure-registry", EnvVars: []string{"PODRUN_INSECURE_REGISTRY"},
			Usage: "registry HOST[:PORT] that may use plain HTTP or an unverified certificate (repeatable; loopback registries always may)"},
		&cli.BoolFlag{Name: "debug", EnvVars: []string{"PODRUN_DEBUG"}, Usage: "verbose logs on stderr"},
	}
}

func config(c *cli.Context) (run.Config, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return run.Config{}, fmt.Errorf("finding podrun's own binary: %w", err)
	}
	insecure, err := insecureRegistries(c.StringSlice("insecure-registry"))
	if err != nil {
		return run.Config{}, err
	}
	rotation, err := logRotation(c)
	if err != nil {
		return run.Config{}, err
	}
	return run.Config{
		Address:   c.String("address"),
		AutoStart: !c.IsSet("address"),
		// Only commands that create pods or images start a private containerd.
		StartPrivate: slices.Contains([]string{"up", "daemon", "import", "pull"}, c.Command.Name),
		Namespace:    c.String("containerd-namespace"),
		Root:         c.String("root"),
		RunDir:       "/run/podrun",
		LogDir:       c.String("log-dir"),
		CNIConfDir:   c.String("cni-conf-dir"),
		CNIBinDirs:   c.StringSlice("cni-bin-dir"),
		PauseImage:   c.String("pause-image"),
		Exe:          exe,
		// The kubelet's --cluster-domain (pod FQDNs; podrun has no cluster DNS).
		ClusterDomain: c.String("cluster-domain"),
		// Registries (pulls.go): credentials file, insecure hosts, progress.
		RegistryConfig:         c.String("registry-config"),
		RegistryConfigOptional: !c.IsSet("registry-config"),
		InsecureRegistries:     insecure,
		HostsDirs:              filepath.SplitList(c.String("hosts-dir")),
		PullProgress:           pullProgress(),
		// Checked again on the opened path when volumes are set up (up, daemon).
		AllowedHostPaths: c.StringSlice("allowed-host-paths"),
		LogRotation:      rotation,
		Debug:            c.Bool("debug"),
	}, nil
}

// progress prints pipeline events on stderr, one line each.
func progress() run.Reporter {
	var mu sync.Mutex
	return func(e run.Event) {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		if e.Pod != "" {
			fmt.Fprintf(&b, "%s ", e.Pod)
		}
		if e.Index > 0 {
			fmt.Fprintf(&b, "[%d/%d] ", e.Index, e.Total)
		}
		if e.Step != "" {
			fmt.Fprintf(&b, "%s ", e.Step)
		}
		if e.Msg != "" {
			b.WriteString(e.Msg + " ")
		}
		if e.Elapsed > 0 {
			fmt.Fprintf(&b, "(%s) ", e.Elapsed.Round(time.Millisecond))
		}
		if e.Err != nil {
			fmt.Fprintf(&b, "FAILED: %v", e.Err)
		}
		clearPullLine() // a pull's progress line, if one is shown (pulls.go)
		fmt.Fprintln(os.Stderr, strings.TrimSpace(b.String()))
	}
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
}

func openHost(ctx context.Context, c *cli.Context) (*run.Host, error) {
	cfg, err := config(c)
	if err != nil {
		return nil, err
	}
	return run.Open(ctx, cfg, progress())
}

func load(c *cli.Context) (*manifest.Set, error) {
	if c.NArg() == 0 {
		return nil, usageError{fmt.Sprintf("%s: name at least one FILE, DIR or -", c.Command.Name)}
	}
	opts, err := admission(c)
	if err != nil {
		return nil, err
	}
	if files := c.StringSlice("configmap"); len(files) > 0 {
		objects, err := manifest.LoadObjects(files)
		if err != nil {
			return nil, err
		}
		return opts.LoadWith(c.Args().Slice(), os.Stdin, objects)
	}
	return opts.Load(c.Args().Slice(), os.Stdin)
}

// admissionFlags are the node's admission rules for the pods of up,
// validate and daemon (manifest.Options).
func admissionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "policy", EnvVars: []string{"PODRUN_POLICY"},
			Usage: "refuse pods that violate this Pod Security Standards level: baseline or restricted (privileged: anything)"},
		&cli.StringSliceFlag{Name: "allowed-host-paths", EnvVars: []string{"PODRUN_ALLOWED_HOST_PATHS"},
			Usage: "hostPath volumes must be under one of these path prefixes, comma-separated (default: any path)"},
		&cli.StringSliceFlag{Name: "allowed-unsafe-sysctls", EnvVars: []string{"PODRUN_ALLOWED_UNSAFE_SYSCTLS"},
			Usage: "unsafe namespaced sysctls pods may set besides the safe ones, like the kubelet's flag: names, or prefixes ending in *, comma-separated"},
		&cli.Int64Flag{Name: "max-manifest-size", EnvVars: []string{"PODRUN_MAX_MANIFEST_SIZE"}, Value: manifest.DefaultMaxFileSize,
			Usage: "refuse a manifest file, stdin or URL body larger than this many bytes"},
	}
}

// logFlags are the container log rotation flags of the commands that start
// containers (up, daemon): the kubelet's containerLogMaxSize/MaxFiles.
func logFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "container-log-max-size", EnvVars: []string{"PODRUN_CONTAINER_LOG_MAX_SIZE"}, Value: "10Mi",
			Usage: "rotate a container's log when it reaches this size (a quantity: 10Mi, 512Ki); 0: never"},
		&cli.IntFlag{Name: "container-log-max-files", EnvVars: []string{"PODRUN_CONTAINER_LOG_MAX_FILES"}, Value: logs.DefaultRotation.MaxFiles,
			Usage: "log files kept per container, the one being written included (at least 2)"},
	}
}

// imageGCFlags are the kubelet's image garbage collection flags (daemon,
// image prune).
func imageGCFlags() []cli.Flag {
	d := imagegc.DefaultPolicy
	return []cli.Flag{
		&cli.IntFlag{Name: "image-gc-high-threshold", EnvVars: []string{"PODRUN_IMAGE_GC_HIGH_THRESHOLD"}, Value: d.HighPercent,
			Usage: "percent of the image filesystem's use above which unused images are removed"},
		&cli.IntFlag{Name: "image-gc-low-threshold", EnvVars: []string{"PODRUN_IMAGE_GC_LOW_THRESHOLD"}, Value: d.LowPercent,
			Usage: "percent of use image garbage collection brings it down to"},
		&cli.DurationFlag{Name: "image-minimum-gc-age", EnvVars: []string{"PODRUN_IMAGE_MINIMUM_GC_AGE"}, Value: d.MinAge,
			Usage: "an image younger than this is never removed"},
	}
}

// imageGCPolicy reads the image GC flags.
func imageGCPolicy(c *cli.Context) (imagegc.Policy, error) {
	p := imagegc.Policy{HighPercent: c.Int("image-gc-high-threshold"), LowPercent: c.Int("image-gc-low-threshold"), MinAge: c.Duration("image-minimum-gc-age")}
	if p.LowPercent < 0 || p.LowPercent > p.HighPercent || p.HighPercent > 100 {
		return p, usageError{fmt.Sprintf("%s: want 0 <= --image-gc-low-threshold <= --image-gc-high-threshold <= 100", c.Command.Name)}
	}
	return p, nil
}

// retentionFlags bound the logs of pods that are gone (gc, daemon).
func retentionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "log-retention", EnvVars: []string{"PODRUN_LOG_RETENTION"}, Value: logs.DefaultRetention.MaxAge,
			Usage: "remove the logs of a pod that is gone once they are this old (0: never)"},
		&cli.StringFlag{Name: "log-max-total", EnvVars: []string{"PODRUN_LOG_MAX_TOTAL"}, Value: "1Gi",
			Usage: "over this much in the log dir, remove the logs of pods that are gone, oldest first (0: no limit)"},
	}
}

// logRetention reads the retention flags.
func logRetention(c *cli.Context) (logs.Retention, error) {
	q, err := resource.ParseQuantity(c.String("log-max-total"))
	if err != nil || q.Sign() < 0 {
		return logs.Retention{}, usageError{fmt.Sprintf("%s: --log-max-total %q: want a size such as 1Gi", c.Command.Name, c.String("log-max-total"))}
	}
	return logs.Retention{MaxAge: c.Duration("log-retention"), MaxTotal: q.Value()}, nil
}

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove the logs of pods that are gone: older than --log-retention, or the oldest while the log dir is over --log-max-total",
		Flags: retentionFlags(),
		Action: func(c *cli.Context) error {
			r, err := logRetention(c)
			if err != nil {
				return err
			}
			h, err := openHost(c.Context, c)
			if err != nil {
				return err
			}
			defer h.Close()
			removed, err := h.CollectLogs(c.Context, r)
			for _, dir := range removed {
				fmt.Printf("removed %s\n", dir)
			}
			return err
		},
	}
}

// logRotation reads the log flags (the kubelet's defaults for a command
// without them).
func logRotation(c *cli.Context) (logs.Rotation, error) {
	r := logs.DefaultRotation
	if s := c.String("container-log-max-size"); s != "" {
		q, err := resource.ParseQuantity(s)
		if err != nil || q.Sign() < 0 {
			return r, usageError{fmt.Sprintf("%s: --container-log-max-size %q: want a size such as 10Mi", c.Command.Name, s)}
		}
		r.MaxSize = q.Value()
	}
	if c.IsSet("container-log-max-files") {
		r.MaxFiles = c.Int("container-log-max-files")
	}
	if r.MaxFiles < 2 {
		return r, usageError{fmt.Sprintf("%s: --container-log-max-files must be at least 2", c.Command.Name)}
	}
	return r, nil
}

// admission reads the admission flags of a command that has them.
func admission(c *cli.Context) (manifest.Options, error) {
	o := manifest.Options{Policy: c.String("policy"), AllowedHostPaths: c.StringSlice("allowed-host-paths"),
		AllowedUnsafeSysctls: c.StringSlice("allowed-unsafe-sysctls"), MaxFileSize: c.Int64("max-manifest-size")}
	if o.MaxFileSize <= 0 {
		return o, usageError{fmt.Sprintf("%s: --max-manifest-size must be a positive number of bytes", c.Command.Name)}
	}
	if err := o.Check(); err != nil {
		return o, usageError{fmt.Sprintf("%s: %v", c.Command.Name, err)}
	}
	return o, nil
}

// configMapFlag reads ConfigMap and Secret objects from files besides the
// input, like podman kube play's --configmap.
func configMapFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "configmap", Usage: "a file of ConfigMap and Secret documents the pods may reference, as if it were part of the input (repeatable)"}
}

func upCommand() *cli.Command {
	return &cli.Command{
		Name:      "up",
		Usage:     "run the pods of manifest files (a changed manifest replaces its pod, an unchanged one is left alone)",
		ArgsUsage: "FILE|DIR|- ...",
		Flags: append([]cli.Flag{
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Minute, Usage: "give up on a pod that is not up (or done) after this long"},
			&cli.StringFlag{Name: "wait", Value: string(run.WaitReady),
				Usage: "return when pods are: ready (readiness probes pass; run-to-completion pods: finished), running (containers started), none (same as running)"},
			&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "same as --wait=running"},
			&cli.BoolFlag{Name: "foreground", Aliases: []string{"f"}, Usage: "stay and supervise (probes, hooks, restarts) until SIGINT or SIGTERM, then stop the pods gracefully"},
			&cli.BoolFlag{Name: "keep-on-failure", Usage: "leave a failed pod's parts in place for inspection"},
			configMapFlag(),
		}, append(admissionFlags(), logFlags()...)...),
		Action: func(c *cli.Context) error {
			o := run.UpOptions{Timeout: c.Duration("timeout"), Wait: run.Wait(c.String("wait")), KeepOnFailure: c.Bool("keep-on-failure"), Foreground: c.Bool("foreground")}
			switch {
			case c.Bool("detach") || o.Wait == "none":
				o.Wait = run.WaitRunning
			case o.Wait != run.WaitReady && o.Wait != run.WaitRunning:
				return usageError{fmt.Sprintf("up: --wait must be ready, running or none, not %q", o.Wait)}
			}
			set, err := load(c)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(c)
			defer stop()
			h, err := openHost(ctx, c)
			if err != nil {
				return err
			}
			defer h.Close()
			var errs []error
			for _, r := range h.Up(ctx, set, o) {
				if r.Err != nil {
					errs = append(errs, r.Err)
					continue
				}
				fmt.Printf("pod/%s %s (%s)\n", r.Pod, r.Action, r.Phase)
			}
			if o.Foreground {
				// Also when a signal came during start-up: the pods already up
				// are terminated, not left running unsupervised.
				if ctx.Err() == nil {
					fmt.Fprintln(os.Stderr, "supervising; SIGINT or SIGTERM stops the pods")
				}
				errs = append(errs, h.Supervise(ctx))
			}
			return errors.Join(errs...)
		},
	}
}

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a container's log, like kubectl logs",
		ArgsUsage: "POD",
		Flags: []cli.Flag{
			namespaceFlag(),
			containerFlag(),
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing, across restarts"},
			&cli.BoolFlag{Name: "previous", Aliases: []string{"p"}, Usage: "the previous (terminated) instance's log"},
			&cli.IntFlag{Name: "tail", Value: -1, Usage: "last N lines (-1: all)"},
			&cli.BoolFlag{Name: "timestamps", Usage: "prefix each line with its time"},
		},
		Action: func(c *cli.Context) error {
			h, p, name, err := podContainer(c)
			if err != nil {
				return err
			}
			defer h.Close()
			dir := h.LogDir(p, name)
			restart, err := logs.Latest(dir)
			if err != nil {
				return fmt.Errorf("container %q of pod %s/%s has no log yet: %w", name, p.Namespace, p.Name, err)
			}
			if c.Bool("previous") {
				if restart == 0 {
					return fmt.Errorf("previous terminated container %q of pod %s/%s not found", name, p.Namespace, p.Name)
				}
				restart--
			}
			ctx, stop := signalContext(c)
			defer stop()
			o := logs.Options{Tail: c.Int("tail"), Timestamps: c.Bool("timestamps"), Follow: c.Bool("follow") && !c.Bool("previous")}
			return logs.Copy(ctx, os.Stdout, dir, restart, o)
		},
	}
}

// statusFile is where a running daemon publishes its problems.
func statusFile(c *cli.Context) string { return filepath.Join(c.String("root"), "daemon.json") }

func daemonCommand() *cli.Command {
	return &cli.Command{
		Name:  "daemon",
		Usage: "keep the pods of a static-manifest directory running, like the kubelet's static pods",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "manifest-dir", Value: "/etc/podrun/manifests", EnvVars: []string{"PODRUN_MANIFEST_DIR"}, Usage: "directory of Pod manifests (.yaml, .yml, .json; not recursive)"},
			&cli.StringFlag{Name: "manifest-url", EnvVars: []string{"PODRUN_MANIFEST_URL"}, Usage: "also keep the pods served at this https URL (polled every --resync; shown with credentials and query values redacted)"},
			&cli.BoolFlag{Name: "insecure-manifest-url", Usage: "allow a plain http --manifest-url"},
			&cli.StringFlag{Name: "manifest-url-header-file", EnvVars: []string{"PODRUN_MANIFEST_URL_HEADER_FILE"}, Usage: "send the \"Name: value\" lines of this file (e.g. Authorization: Bearer TOKEN) with every fetch of --manifest-url; read at each fetch, root-owned and not group- or world-writable"},
			&cli.DurationFlag{Name: "resync", Value: 10 * time.Second, Usage: "full re-scan period, the backstop to inotify"},
			&cli.DurationFlag{Name: "settle", Value: 500 * time.Millisecond, Usage: "how long a written file must stay unchanged before it is read"},
			&cli.DurationFlag{Name: "pod-timeout", Value: 5 * time.Minute, Usage: "give up starting a pod after this long (it is retried at the next re-scan)"},
			&cli.StringFlag{Name: "listen", Usage: "serve /healthz, /readyz and /metrics on a loopback host:port or unix:PATH (default off)"},
			&cli.BoolFlag{Name: "stop-pods-on-exit", Usage: "terminate the pods on SIGTERM (by default they keep running)"},
			&cli.StringFlag{Name: "images-dir", EnvVars: []string{"PODRUN_IMAGES_DIR"}, Usage: "image archives (.tar, .tar.gz, .tgz, .tar.zst; OCI or docker) imported at start and when they appear, as k3s's air-gap images (default: <root>/images)"},
		}, slices.Concat(admissionFlags(), logFlags(), retentionFlags(), imageGCFlags())...),
		Action: func(c *cli.Context) error {
			dir, err := filepath.Abs(c.String("manifest-dir"))
			if err != nil {
				return err
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return usageError{fmt.Sprintf("daemon: --manifest-dir %s is not a directory", dir)}
			}
			admit, err := admission(c)
			if err != nil {
				return err
			}
			retention, err := logRetention(c)
			if err != nil {
				return err
			}
			imagePolicy, err := imageGCPolicy(c)
			if err != nil {
				return err
			}
			images := c.String("images-dir")
			if images == "" {
				images = filepath.Join(c.String("root"), "images")
			}
			if err := os.MkdirAll(images, 0o700); err != nil {
				return err
			}
			if u := c.String("manifest-url"); u != "" {
				if err := daemon.CheckURL(u, c.Bool("insecure-manifest-url")); err != nil {
					return usageError{fmt.Sprintf("daemon: --manifest-url: %v", err)}
				}
			}
			ctx, stop := signalContext(c)
			defer stop()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			h, err := openHostRetrying(ctx, c)
			if err != nil {
				return err
			}
			defer h.Close()
			metrics := daemon.NewMetrics()
			h.ObserveProbes(metrics.ObserveProbe)
			d := daemon.New(h, daemon.Options{
				ManifestDir: dir, URL: c.String("manifest-url"), URLHeaderFile: c.String("manifest-url-header-file"),
				Resync: c.Duration("resync"), Settle: c.Duration("settle"),
				StopPodsOnExit: c.Bool("stop-pods-on-exit"), StatusFile: statusFile(c), PodTimeout: c.Duration("pod-timeout"),
				Admission: admit, LogRetention: retention, ImagesDir: images, ImageGC: imagePolicy,
			}, slog.Default(), metrics)
			if addr := c.String("listen"); addr != "" {
				l, err := daemon.Listen(addr)
				if err != nil {
					return usageError{fmt.Sprintf("daemon: --listen: %v", err)}
				}
				srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 5 * time.Second}
				go func() { _ = srv.Serve(l) }()
				defer srv.Close()
			}
			slog.Info("podrun daemon started", "manifest-dir", dir, "resync", c.Duration("resync"))
			return d.Run(ctx, hup)
		},
	}
}

// openHostRetrying connects like openHost, but waits for the runtime with
// back-off (a daemon may start before containerd).
func openHostRetrying(ctx context.Context, c *cli.Context) (*run.Host, error) {
	delay := time.Second
	for {
		h, err := openHost(ctx, c)
		if !errors.Is(err, engine.ErrUnavailable) {
			return h, err
		}
		slog.Error("container runtime unavailable; retrying", "in", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, err
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// daemonNotes tells, on stderr, which manifests a running daemon could not
// apply (their pods keep running as last applied).
func daemonNotes(c *cli.Context) (daemon.Status, bool) {
	st, ok := daemon.ReadStatus(statusFile(c))
	if ok && len(st.Problems) > 0 {
		fmt.Fprintln(os.Stderr, "podrun daemon: not applied (pods keep running as last applied):")
		for _, p := range st.Problems {
			for _, line := range strings.Split(p.Msg, "\n") {
				fmt.Fprintf(os.Stderr, "  %s: %s\n", p.Source, line)
			}
		}
	}
	return st, ok
}

func downCommand() *cli.Command {
	return &cli.Command{
		Name:      "down",
		Usage:     "stop pods gracefully and remove them (logs are kept)",
		ArgsUsage: "FILE|DIR|-|POD ...  (POD is NAME or NAMESPACE/NAME)",
		Flags: []cli.Flag{
			namespaceFlag(),
			&cli.IntFlag{Name: "grace-period", Value: -1, Usage: "seconds to wait after the stop signal, overriding the pods' terminationGracePeriodSeconds (-1: the pods' own)"},
		},
		Action: func(c *cli.Context) error {
			targets, err := downTargets(c)
			if err != nil {
				return err
			}
			var o run.DownOptions
			if g := c.Int("grace-period"); g >= 0 {
				d := time.Duration(g) * time.Second
				o.GracePeriod = &d
			}
			h, err := openHost(c.Context, c)
			if err != nil {
				return err
			}
			defer h.Close()
			if st, ok := daemon.ReadStatus(statusFile(c)); ok {
				pods, _ := h.Pods(c.Context)
				for _, p := range pods {
					for _, t := range targets {
						if p.Namespace == t.Namespace && p.Name == t.Name && (filepath.Dir(p.Source) == st.ManifestDir || (st.URL != "" && p.Source == st.URL)) {
							fmt.Fprintf(os.Stderr, "note: pod %s comes from %s: the running podrun daemon will start it again while that file exists\n", t, p.Source)
						}
					}
				}
			}
			var errs []error
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
		},
	}
}

// downTargets reads pod names from manifests ("-", files, directories) and
// from NAME or NAMESPACE/NAME arguments.
func downTargets(c *cli.Context) ([]run.Target, error) {
	if c.NArg() == 0 {
		return nil, usageError{"down: name at least one FILE, DIR, - or POD"}
	}
	var targets []run.Target
	var paths []string
	for _, a := range c.Args().Slice() {
		if _, err := os.Stat(a); a == "-" || err == nil {
			paths = append(paths, a)
			continue
		}
		target, err := podTarget(c, a)
		if err != nil {
			return nil, err
		}
		targets = append(targets, target)
	}
	if len(paths) > 0 {
		// Read as the most permissive node would, so that a pod up ran
		// with --allowed-unsafe-sysctls can be taken down by its file; the
		// objects its pods reference may be in a --configmap file, or gone.
		set, err := manifest.Options{AllowedUnsafeSysctls: manifest.NamespacedSysctls}.LoadUnresolved(paths, os.Stdin)
		if err != nil {
			return nil, err
		}
		for _, p := range set.Pods {
			targets = append(targets, run.Target{Namespace: p.Namespace, Name: p.Name})
		}
	}
	return targets, nil
}

func outputFlag(values ...string) *cli.StringFlag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: " + strings.Join(values, "|")}
}

func psCommand() *cli.Command {
	return &cli.Command{
		Name:  "ps",
		Usage: "list pods, like kubectl get pods",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "include pods that have completed (Succeeded or Failed)"},
			namespaceFlag(),
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "every namespace (the default without -n)"},
			outputFlag("wide", "json", "yaml", "name"),
		},
		Action: func(c *cli.Context) error {
			h, err := openHost(c.Context, c)
			if err != nil {
				return err
			}
			defer h.Close()
			pods, err := h.Pods(c.Context)
			if err != nil {
				return err
			}
			ns := c.String("namespace")
			if c.Bool("all-namespaces") {
				ns = ""
			}
			var shown []*run.PodInfo
			for _, p := range pods {
				if (c.Bool("all") || !finished(p)) && (ns == "" || p.Namespace == ns) {
					shown = append(shown, p)
				}
			}
			daemonNotes(c)
			return printPods(os.Stdout, shown, c.String("output"))
		},
	}
}

func finished(p *run.PodInfo) bool {
	return p.Pod != nil && (p.Pod.Status.Phase == corev1.PodSucceeded || p.Pod.Status.Phase == corev1.PodFailed)
}

func printPods(w io.Writer, pods []*run.PodInfo, format string) error {
	switch format {
	case "json", "yaml":
		list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"}}
		for _, p := range pods {
			if p.Pod != nil {
				pod := p.Pod.DeepCopy()
				pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
				list.Items = append(list.Items, *pod)
			}
		}
		return printObject(w, list, format)
	case "name":
		for _, p := range pods {
			fmt.Fprintf(w, "pod/%s\n", p.Name)
		}
		return nil
	case "", "wide":
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		header := "NAMESPACE\tNAME\tREADY\tSTATUS\tRESTARTS\tAGE\tIP\tSOURCE"
		if format == "wide" {
			header += "\tUID"
		}
		fmt.Fprintln(tw, header)
		for _, p := range pods {
			fmt.Fprintln(tw, podRow(p, format == "wide"))
		}
		return tw.Flush()
	}
	return usageError{fmt.Sprintf("unknown output format %q", format)}
}

func printObject(w io.Writer, obj any, format string) error {
	data, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

func podRow(p *run.PodInfo, wide bool) string {
	ready, reason, restarts, age, ip := "-", "Unknown", int32(0), "-", ""
	if p.Pod != nil {
		st := p.Pod.Status
		n := 0
		for _, cs := range st.ContainerStatuses {
			if cs.Ready {
				n++
			}
			restarts += cs.RestartCount
		}
		for _, cs := range st.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		ready = fmt.Sprintf("%d/%d", n, len(p.Pod.Spec.Containers))
		reason = status.Reason(p.Pod, st)
		if st.StartTime != nil {
			age = duration.HumanDuration(time.Since(st.StartTime.Time))
		}
		ip = st.PodIP
	}
	if ip == "" {
		ip = "<none>"
	}
	name := p.Name
	if name == "" {
		name = p.UID
	}
	row := fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", p.Namespace, name, ready, reason, restarts, age, ip, p.Source)
	if wide {
		row += "\t" + p.UID
	}
	return row
}

// namespaceFlag is kubectl's -n: the namespace of the pods a command names
// (default "default"), or for ps the one it lists (default all).
func namespaceFlag() cli.Flag {
	return &cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "the pods' namespace, as kubectl's -n (default: default; for ps: all)"}
}

// podTarget parses POD as NAME, in the -n namespace (default "default"),
// or NAMESPACE/NAME; naming a namespace both ways, differently, is an error.
func podTarget(c *cli.Context, arg string) (run.Target, error) {
	flag := c.String("namespace")
	ns, name, ok := strings.Cut(arg, "/")
	switch {
	case !ok && flag != "":
		ns, name = flag, arg
	case !ok:
		ns, name = "default", arg
	case flag != "" && flag != ns:
		return run.Target{}, usageError{fmt.Sprintf("%s: %s names namespace %q, -n says %q", c.Command.Name, arg, ns, flag)}
	}
	return run.Target{Namespace: ns, Name: name}, nil
}

// onePod opens the host and finds the pod named by the command's first argument.
func onePod(c *cli.Context) (*run.Host, *run.PodInfo, error) {
	if c.NArg() < 1 {
		return nil, nil, usageError{fmt.Sprintf("%s: name a POD (NAME or NAMESPACE/NAME)", c.Command.Name)}
	}
	h, err := openHost(c.Context, c)
	if err != nil {
		return nil, nil, err
	}
	target, err := podTarget(c, c.Args().First())
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	p, err := h.Pod(c.Context, target)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return h, p, nil
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "print a pod as Kubernetes would (a v1 Pod with its status)",
		ArgsUsage: "POD",
		Flags:     []cli.Flag{namespaceFlag(), outputFlag("yaml", "json")},
		Action: func(c *cli.Context) error {
			h, p, err := onePod(c)
			if err != nil {
				return err
			}
			defer h.Close()
			if st, ok := daemon.ReadStatus(statusFile(c)); ok {
				for _, pr := range st.Problems {
					if pr.Source == p.Source {
						fmt.Fprintf(os.Stderr, "podrun daemon: %s is not applied (the pod runs as last applied):\n  %s\n", pr.Source, strings.ReplaceAll(pr.Msg, "\n", "\n  "))
					}
				}
			}
			return printStatus(os.Stdout, p, c.String("output"))
		},
	}
}

// printStatus prints a pod for `podrun status`: the v1 Pod, preceded by
// default (no -o) by a comment naming its SOURCE as ps shows it, which
// Kubernetes has no field for; a comment keeps the output valid YAML.
func printStatus(w io.Writer, p *run.PodInfo, format string) error {
	switch format {
	case "":
		src := p.Source
		if src == "" {
			src = "<none>"
		}
		if _, err := fmt.Fprintf(w, "# source: %s\n", src); err != nil {
			return err
		}
		format = "yaml"
	case "yaml", "json":
	default:
		return usageError{fmt.Sprintf("unknown output format %q", format)}
	}
	pod := p.Pod.DeepCopy()
	pod.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	return printObject(w, pod, format)
}

// podContainer opens the host, finds the pod named by the first argument
// and resolves -c, saying on stderr which container was defaulted. The
// caller closes the host.
func podContainer(c *cli.Context) (*run.Host, *run.PodInfo, string, error) {
	h, p, err := onePod(c)
	if err != nil {
		return nil, nil, "", err
	}
	name, defaulted, err := p.ContainerName(c.String("container"))
	if err != nil {
		h.Close()
		return nil, nil, "", usageError{err.Error()}
	}
	if defaulted {
		fmt.Fprintf(os.Stderr, "Defaulted container %q (use -c to choose another)\n", name)
	}
	return h, p, name, nil
}

func containerFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "container name (default: the first app container)"}
}

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run a command in a running container, like kubectl exec",
		ArgsUsage: "POD -- CMD [ARG...]",
		Flags: []cli.Flag{
			namespaceFlag(),
			containerFlag(),
			&cli.BoolFlag{Name: "stdin", Aliases: []string{"i"}, Usage: "pass stdin to the command"},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "allocate a terminal"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 2 {
				return usageError{"exec: usage: podrun exec POD -- CMD [ARG...]"}
			}
			h, p, name, err := podContainer(c)
			if err != nil {
				return err
			}
			defer h.Close()
			cur := p.Current(name)
			if cur == nil || cur.Task.State != engine.TaskRunning {
				return fmt.Errorf("container %q of pod %s/%s is not running", name, p.Namespace, p.Name)
			}
			spec := engine.ExecSpec{Args: c.Args().Slice()[1:], Stdout: os.Stdout, Stderr: os.Stderr, TTY: c.Bool("tty")}
			if c.Bool("stdin") {
				spec.Stdin = os.Stdin
			}
			if spec.TTY {
				restore, err := rawTerminal(os.Stdin)
				if err != nil {
					return err
				}
				defer restore()
			}
			code, err := h.Engine().Exec(c.Context, cur.ID, spec)
			if err != nil {
				return err
			}
			if code != 0 {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}

// rawTerminal puts a terminal in raw mode for exec -t; restore undoes it.
func rawTerminal(f *os.File) (restore func(), err error) {
	if !term.IsTerminal(int(f.Fd())) {
		return func() {}, nil
	}
	old, err := term.MakeRaw(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("setting the terminal to raw mode: %w", err)
	}
	return func() { _ = term.Restore(int(f.Fd()), old) }, nil
}

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:      "validate",
		Usage:     "load, default and validate manifests; print every problem",
		ArgsUsage: "FILE|DIR|- ...",
		Flags:     append([]cli.Flag{configMapFlag()}, admissionFlags()...),
		Action: func(c *cli.Context) error {
			set, err := load(c)
			if err != nil {
				return err
			}
			for _, p := range set.Pods {
				fmt.Printf("pod/%s/%s valid (%s)\n", p.Namespace, p.Name, p.Source)
			}
			return nil
		},
	}
}

func imageCommand() *cli.Command {
	withEngine := func(fn func(ctx context.Context, e engine.Engine, c *cli.Context) error) cli.ActionFunc {
		return func(c *cli.Context) error {
			h, err := openHost(c.Context, c)
			if err != nil {
				return err
			}
			defer h.Close()
			return fn(c.Context, h.Engine(), c)
		}
	}
	return &cli.Command{
		Name:  "image",
		Usage: "manage images",
		Subcommands: []*cli.Command{
			{
				Name: "import", Usage: "import an OCI or docker image archive", ArgsUsage: "FILE.tar|-",
				Action: withEngine(func(ctx context.Context, e engine.Engine, c *cli.Context) error {
					if c.NArg() != 1 {
						return usageError{"image import: name one FILE.tar (or - for stdin)"}
					}
					r, err := openInput(c.Args().First())
					if err != nil {
						return err
					}
					defer r.Close()
					imgs, err := e.Import(ctx, r)
					if err != nil {
						return err
					}
					for _, i := range imgs {
						fmt.Printf("%s\t%s\n", i.Ref, i.Digest)
					}
					return nil
				}),
			},
			{
				Name:  "prune",
				Usage: "remove images no container uses, as the kubelet's image GC: above --image-gc-high-threshold down to the low one; -a: every unused image",
				Flags: append([]cli.Flag{&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "every image no container uses (older than --image-minimum-gc-age), whatever the disk's use"}}, imageGCFlags()...),
				Action: func(c *cli.Context) error {
					p, err := imageGCPolicy(c)
					if err != nil {
						return err
					}
					h, err := openHost(c.Context, c)
					if err != nil {
						return err
					}
					defer h.Close()
					removed, err := h.CollectImages(c.Context, run.ImageGC{Policy: p, All: c.Bool("all")})
					for _, ref := range removed {
						fmt.Printf("deleted %s\n", ref)
					}
					return err
				},
			},
			{
				Name: "ls", Usage: "list images", Flags: []cli.Flag{outputFlag("json", "yaml")},
				Action: withEngine(func(ctx context.Context, e engine.Engine, c *cli.Context) error {
					imgs, err := e.Images(ctx)
					if err != nil {
						return err
					}
					if f := c.String("output"); f != "" {
						return printObject(os.Stdout, imgs, f)
					}
					tw := tabwriter.NewWriter(os.Stdout, 0, 8, 3, ' ', 0)
					fmt.Fprintln(tw, "REF\tDIGEST\tSIZE")
					for _, i := range imgs {
						fmt.Fprintf(tw, "%s\t%s\t%s\n", i.Ref, i.Digest, humanSize(i.Size))
					}
					return tw.Flush()
				}),
			},
			{
				Name: "pull", Usage: "pull an image from its registry (credentials from --registry-config)", ArgsUsage: "REF",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageError{"image pull: name one REF"}
					}
					h, err := openHost(c.Context, c)
					if err != nil {
						return err
					}
					defer h.Close()
					img, err := h.PullImage(c.Context, c.Args().First())
					if perr := (*run.ImagePullError)(nil); errors.As(err, &perr) && perr.Reason == run.ReasonInvalidImageName {
						return usageError{err.Error()}
					}
					if err != nil {
						return err
					}
					fmt.Printf("%s\t%s\n", img.Ref, img.Digest)
					return nil
				},
			},
		},
	}
}

func openInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	return os.Open(path)
}

func humanSize(n int64) string {
	if n < 0 {
		return "-"
	}
	units := []string{"B", "KiB", "MiB", "GiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print podrun's version",
		Action: func(*cli.Context) error {
			client := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, d := range bi.Deps {
					if d.Path == "github.com/containerd/containerd" {
						client = d.Version
					}
				}
			}
			fmt.Printf("podrun %s (%s, %s/%s, containerd client %s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, client)
			return nil
		},
	}
}

// completionFlag is how urfave/cli's shell completion asks for candidates.
const completionFlag = "--generate-bash-completion"

// Shell completion scripts over urfave/cli's protocol: the shell runs the
// words typed so far with completionFlag and offers what podrun prints.
const (
	bashCompletion = `# podrun completion for bash: source <(podrun completion bash)
_podrun() {
	local cur="${COMP_WORDS[COMP_CWORD]}" opts
	local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
	if [[ "$cur" == -* ]]; then
		opts=$("${words[@]}" "$cur" ` + completionFlag + ` 2>/dev/null)
	else
		opts=$("${words[@]}" ` + completionFlag + ` 2>/dev/null)
	fi
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _podrun podrun
`
	zshCompletion = `#compdef podrun
# podrun completion for zsh: source <(podrun completion zsh)
_podrun() {
	local -a opts
	local cur=${words[-1]}
	if [[ "$cur" == -* ]]; then
		opts=("${(@f)$(${words[@]:0:#words[@]-1} "$cur" ` + completionFlag + ` 2>/dev/null)}")
	else
		opts=("${(@f)$(${words[@]:0:#words[@]-1} ` + completionFlag + ` 2>/dev/null)}")
	fi
	if [[ -n "${opts[1]}" ]]; then
		_describe 'values' opts
	else
		_files
	fi
}
compdef _podrun podrun
`
)

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: source <(podrun completion bash)",
		ArgsUsage: "bash|zsh",
		Action: func(c *cli.Context) error {
			switch c.Args().First() {
			case "bash":
				_, err := fmt.Fprint(os.Stdout, bashCompletion)
				return err
			case "zsh":
				_, err := fmt.Fprint(os.Stdout, zshCompletion)
				return err
			}
			return usageError{"completion: name a shell: bash or zsh"}
		},
	}
}
