// Flags shared by several commands, and how they become run.Config,
// manifest.Options and the policies of logs and images.

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podrun/podrun/admission"
	"github.com/podrun/podrun/downward"
	"github.com/podrun/podrun/engine/ctrd"
	"github.com/podrun/podrun/imagegc"
	"github.com/podrun/podrun/images"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/pullnet"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/sandbox"
	"github.com/podrun/podrun/trust"
)

func globalFlags() []cli.Flag {
	return append(append([]cli.Flag{
		&cli.StringFlag{Name: "address", Value: defaultAddress, EnvVars: []string{"PODRUN_ADDRESS"},
			Usage: "containerd socket; when the default answers nothing, podrun starts its own private containerd"},
		// PODRUN_NAMESPACE is the deprecated name of PODRUN_CONTAINERD_NAMESPACE (one release).
		&cli.StringFlag{Name: "containerd-namespace", Value: "podrun", EnvVars: []string{"PODRUN_CONTAINERD_NAMESPACE", "PODRUN_NAMESPACE"}, Usage: "containerd namespace of podrun's containers (-n is the pods' namespace, as in kubectl)"},
		&cli.StringFlag{Name: "root", Value: "/var/lib/podrun", EnvVars: []string{"PODRUN_ROOT"}, Usage: "state directory"},
		&cli.StringFlag{Name: "run-dir", Value: "/run/podrun", EnvVars: []string{"PODRUN_RUN_DIR"}, Usage: "runtime directory: the private containerd's socket, state and pid file; the streams of containers with stdin or a terminal"},
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
		&cli.DurationFlag{Name: "image-pull-progress-deadline", Value: pullnet.DefaultDeadline, EnvVars: []string{"PODRUN_IMAGE_PULL_PROGRESS_DEADLINE"},
			Usage: "a pull that reads no byte for this long is cancelled and tried again, resuming where it stopped, as the kubelet's flag of that name (0: never)"},
		&cli.StringFlag{Name: "pull-rate", EnvVars: []string{"PODRUN_PULL_RATE"},
			Usage: "bytes per second all pulls of this podrun read together, a quantity (512Ki, 2Mi, 1M; default: no cap)"},
		&cli.StringFlag{Name: "node-labels", EnvVars: []string{"PODRUN_NODE_LABELS"},
			Usage: "labels of this node, KEY=VALUE,... (besides kubernetes.io/hostname, os and arch), matched by pods' nodeSelector and node affinity, as the kubelet's --node-labels"},
		&cli.IntFlag{Name: "max-pods", Value: admission.DefaultMaxPods, EnvVars: []string{"PODRUN_MAX_PODS"},
			Usage: "pods this node admits, as the kubelet's --max-pods"},
	}, signatureFlags()...),
		&cli.BoolFlag{Name: "debug", EnvVars: []string{"PODRUN_DEBUG"}, Usage: "verbose logs on stderr"})
}

// nodeLabels parses --node-labels (KEY=VALUE,...), each a valid label.
func nodeLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...)
		if !ok || len(errs) > 0 {
			return nil, usageError{fmt.Sprintf("--node-labels: %q is not KEY=VALUE with a valid label: %s", kv, strings.Join(errs, "; "))}
		}
		out[k] = v
	}
	return out, nil
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
	labels, err := nodeLabels(c.String("node-labels"))
	if err != nil {
		return run.Config{}, err
	}
	link, err := pullLink(c.Duration("image-pull-progress-deadline"), c.String("pull-rate"))
	if err != nil {
		return run.Config{}, err
	}
	pulls := slices.Contains([]string{"up", "daemon", "import", "pull"}, c.Command.Name)
	var policy *trust.Policy
	if pulls { // fail closed: no pull or import under a policy that does not load
		if policy, err = signaturePolicy(c); err != nil {
			return run.Config{}, err
		}
	}
	if c.Int("max-pods") < 1 {
		return run.Config{}, usageError{fmt.Sprintf("--max-pods %d: want at least 1", c.Int("max-pods"))}
	}
	return run.Config{
		Address:   c.String("address"),
		AutoStart: !c.IsSet("address"),
		// Only commands that create pods or images start a private containerd.
		StartPrivate: pulls,
		Namespace:    c.String("containerd-namespace"),
		Root:         c.String("root"),
		RunDir:       c.String("run-dir"),
		LogDir:       c.String("log-dir"),
		CNIConfDir:   c.String("cni-conf-dir"),
		CNIBinDirs:   c.StringSlice("cni-bin-dir"),
		PauseImage:   c.String("pause-image"),
		Exe:          exe,
		// The kubelet's --cluster-domain (pod FQDNs; podrun has no cluster DNS).
		ClusterDomain: c.String("cluster-domain"),
		// Registries (pulls.go): credentials file, insecure hosts, progress.
		Images: images.Options{
			RegistryConfig:         c.String("registry-config"),
			RegistryConfigOptional: !c.IsSet("registry-config"),
			Insecure:               insecure,
			HostsDirs:              filepath.SplitList(c.String("hosts-dir")),
			Progress:               pullProgress(c.Command.Name),
			Link:                   link,
			Verifier:               verifier(c, policy),
			ScratchDir:             c.String("root"),
		},
		// Checked again on the opened path when volumes are set up (up, daemon).
		AllowedHostPaths: c.StringSlice("allowed-host-paths"),
		LogRotation:      rotation,
		Debug:            c.Bool("debug"),
		NodeLabels:       labels,
		MaxPods:          c.Int("max-pods"),
	}, nil
}

// progress prints pipeline events on stderr, one line each.
func progress() run.Reporter {
	return func(e run.Event) {
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
		stderr.Println(strings.TrimSpace(b.String()))
	}
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
}

// load reads the manifests of the command's arguments, saying on stderr
// which objects were skipped and what the API server would warn of.
func load(c *cli.Context) (*manifest.Set, error) {
	set, err := loadSet(c)
	if set != nil {
		for _, n := range set.Notes {
			fmt.Fprintln(os.Stderr, "note: "+n)
		}
		for _, w := range set.Warnings {
			fmt.Fprintln(os.Stderr, "Warning: "+w) // as kubectl prints the API server's
		}
	}
	return set, err
}

func loadSet(c *cli.Context) (*manifest.Set, error) {
	paths, err := manifestPaths(c)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, usageError{fmt.Sprintf("%s: name at least one FILE, DIR or - (-f, or arguments)", c.Command.Name)}
	}
	opts, err := manifestAdmission(c)
	if err != nil {
		return nil, err
	}
	if c.Bool("static") {
		// As the daemon reads its directory (validate --static).
		if opts.StaticNode, err = downward.NodeName(); err != nil {
			return nil, fmt.Errorf("the node's name: %w", err)
		}
	}
	if files := c.StringSlice("configmap"); len(files) > 0 {
		objects, err := manifest.LoadObjects(files)
		if err != nil {
			return nil, err
		}
		return opts.LoadWith(paths, os.Stdin, objects)
	}
	return opts.Load(paths, os.Stdin)
}

// filenameFlag is kubectl's -f: the manifests a command reads, besides
// its arguments.
func filenameFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "filename", Aliases: []string{"f"},
		Usage: "a manifest FILE, a DIR of them, or - for stdin, as kubectl's -f (repeatable; also as arguments)"}
}

// manifestPaths are the manifests of -f, then the arguments. A value of -f
// that is a flag was meant as one (up's -f was --foreground).
func manifestPaths(c *cli.Context) ([]string, error) {
	files := c.StringSlice("filename")
	for _, f := range files {
		if strings.HasPrefix(f, "-") && f != "-" {
			msg := fmt.Sprintf("%s: -f %s: -f takes a FILE, DIR or -", c.Command.Name, f)
			if c.Command.Name == "up" {
				msg += " (to stay and supervise the pods: --foreground)"
			}
			return nil, usageError{msg}
		}
	}
	return append(files, c.Args().Slice()...), nil
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

// manifestAdmission reads the admission flags (policy, allowed host paths and sysctls, size) of a command that has them.
func manifestAdmission(c *cli.Context) (manifest.Options, error) {
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

// outputFlag is -o, one of values, checked before the command runs.
func outputFlag(values ...string) *cli.StringFlag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: " + strings.Join(values, "|"),
		Action: func(c *cli.Context, v string) error {
			if !slices.Contains(values, v) {
				return inCommand(c, usageError{fmt.Sprintf("%s: -o %q: want %s", c.Command.Name, v, strings.Join(values, ", "))})
			}
			return nil
		}}
}

// namespaceFlag is kubectl's -n, what it means for the command in usage:
// the namespace of the pods it names (default "default"), or for ps the
// one it lists (default all).
func namespaceFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: usage}
}

// podNamespace is -n of the commands that name one POD.
const podNamespace = "namespace of POD when it is a NAME (default: default), as kubectl's -n"

func containerFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "container", Aliases: []string{"c"}, Usage: "container name (default: the first app container)"}
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

// setLogging sets up the log from the global flags, before any command
// runs: debug lines with --debug (containerd's own too).
func setLogging(c *cli.Context) error {
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
}
