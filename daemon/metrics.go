package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/probes"
	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/updates"
)

// Metrics are the daemon's Prometheus metrics.
type Metrics struct {
	reg           *prometheus.Registry
	pods          *podMetrics
	probeResults  *prometheus.CounterVec
	probeDuration *prometheus.HistogramVec
	syncDuration  prometheus.Histogram
	syncFailures  prometheus.Counter
	rollbacks     *prometheus.CounterVec
}

// NewMetrics registers podrun's metrics on a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg:  prometheus.NewRegistry(),
		pods: newPodMetrics(),
		probeResults: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "podrun_probe_results_total",
			Help: "Probe attempts by probe kind and result."}, []string{"probe", "result"}),
		probeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "podrun_probe_duration_seconds",
			Help: "Duration of probe attempts.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}, []string{"probe"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "podrun_sync_duration_seconds",
			Help: "Duration of the daemon's syncs of its sources to the node.", Buckets: prometheus.ExponentialBuckets(0.005, 3, 9)}),
		syncFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "podrun_sync_failures_total",
			Help: "Syncs that could not reach the container runtime."}),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "podrun_rollbacks_total",
			Help: "New versions of pods that failed and were replaced by their last Ready version, by reason."}, []string{"reason"}),
	}
	m.reg.MustRegister(m.pods, m.probeResults, m.probeDuration, m.syncDuration, m.syncFailures, m.rollbacks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// PullCounters are the counters of the process's registry traffic
// (pullnet.Link).
type PullCounters interface {
	BytesRead() int64
	Stalls() int64
}

// CountPulls exports c: the bytes all pulls read from registries, and the
// requests given up for reading nothing for --image-pull-progress-deadline.
func (m *Metrics) CountPulls(c PullCounters) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "podrun_image_pull_bytes_total",
			Help: "Bytes read from registries by image pulls."}, func() float64 { return float64(c.BytesRead()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "podrun_image_pull_stalls_total",
			Help: "Registry requests of image pulls given up for reading nothing for the image pull progress deadline."}, func() float64 { return float64(c.Stalls()) }))
}

// GaugePulls exports the pulls under way on b: how many, and the bytes
// they have left to fetch of the blobs known so far.
func (m *Metrics) GaugePulls(b *Pulls) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "podrun_image_pulls_in_progress",
			Help: "Image pulls under way."}, func() float64 { n, _ := b.remaining(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "podrun_image_pull_remaining_bytes",
			Help: "Bytes the image pulls under way have left to fetch, of the blobs known so far."}, func() float64 { _, n := b.remaining(); return float64(n) }))
}

// gaugeUpdates exports the changed pods whose update is held back
// (pending), by why: no update window open, or the pod holds its lock.
func (m *Metrics) gaugeUpdates(pending func() []Pending) {
	for _, reason := range []string{updates.ReasonWindow, updates.ReasonLock} {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "podrun_updates_pending",
			Help:        "Changed pods whose update waits, by reason: no update window open (window) or the running pod holds its update lock (lock).",
			ConstLabels: prometheus.Labels{"reason": reason}},
			func() float64 {
				n := 0
				for _, p := range pending() {
					if p.Reason == reason {
						n++
					}
				}
				return float64(n)
			}))
	}
}

// ObserveProbe counts a probe attempt; hand it to run.Host.ObserveProbes.
func (m *Metrics) ObserveProbe(kind probes.Kind, o probes.Outcome, took time.Duration) {
	m.probeResults.WithLabelValues(string(kind), strings.ToLower(o.Result.String())).Inc()
	m.probeDuration.WithLabelValues(string(kind)).Observe(took.Seconds())
}

func (m *Metrics) observeSync(took time.Duration, failed bool) {
	m.syncDuration.Observe(took.Seconds())
	if failed {
		m.syncFailures.Inc()
	}
}

func (m *Metrics) setPods(pods []*run.PodInfo) { m.pods.set(pods) }

// podMetrics are the pods by phase and their containers' restarts, from
// one listing: the whole set is built, then replaces the previous one, so
// that a scrape sees one listing or the next, never part of one.
type podMetrics struct {
	phase, restarts *prometheus.Desc
	current         atomic.Pointer[[]prometheus.Metric]
}

func newPodMetrics() *podMetrics {
	m := &podMetrics{
		phase: prometheus.NewDesc("podrun_pods", "Pods of the daemon's sources by phase.", []string{"phase"}, nil),
		restarts: prometheus.NewDesc("podrun_container_restarts", "Restart count of each container.",
			[]string{"namespace", "pod", "container"}, nil),
	}
	m.set(nil)
	return m
}

// set replaces the metrics with those of pods.
func (m *podMetrics) set(pods []*run.PodInfo) {
	phases := []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown}
	count := map[corev1.PodPhase]float64{}
	restarts := map[[3]string]int32{} // by namespace, pod, container; a name's last run counts
	var containers [][3]string
	for _, p := range pods {
		phase := corev1.PodUnknown
		if p.Pod != nil {
			phase = p.Pod.Status.Phase
		}
		if count[phase]++; !slices.Contains(phases, phase) {
			phases = append(phases, phase)
		}
		if p.Pod == nil {
			continue
		}
		for _, cs := range append(p.Pod.Status.InitContainerStatuses, p.Pod.Status.ContainerStatuses...) {
			key := [3]string{p.Namespace, p.Name, cs.Name}
			if _, ok := restarts[key]; !ok {
				containers = append(containers, key)
			}
			restarts[key] = cs.RestartCount
		}
	}
	out := make([]prometheus.Metric, 0, len(phases)+len(containers))
	for _, phase := range phases {
		out = append(out, prometheus.MustNewConstMetric(m.phase, prometheus.GaugeValue, count[phase], string(phase)))
	}
	for _, key := range containers {
		out = append(out, prometheus.MustNewConstMetric(m.restarts, prometheus.GaugeValue, float64(restarts[key]), key[:]...))
	}
	m.current.Store(&out)
}

// Describe and Collect make podMetrics a prometheus.Collector.
func (m *podMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.phase
	ch <- m.restarts
}

func (m *podMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, metric := range *m.current.Load() {
		ch <- metric
	}
}

// health is what /healthz and /readyz answer.
type health struct {
	mu     sync.Mutex
	synced bool   // the first sync finished
	ok     bool   // the last sync reached the runtime
	detail string // why not
}

func (h *health) set(ok bool, detail string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.synced = h.synced || ok
	h.ok, h.detail = ok, detail
}

func (h *health) get() (alive, ready bool, detail string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return true, h.synced && h.ok, h.detail
}

// Handler serves /healthz, /readyz and /metrics.
func (d *Daemon) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if _, ready, detail := d.Health(); !ready {
			http.Error(w, "not ready: "+detail, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}

// Listen opens the --listen address: "unix:PATH", or a loopback host:port
// (any other address is refused: the endpoints have no authentication).
func Listen(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return listenUnix(path)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, &net.AddrError{Err: "only a loopback address or a unix socket may be used", Addr: addr}
	}
	return net.Listen("tcp", addr)
}

// listenUnix listens on a unix socket, first removing a stale one that a
// killed daemon left (a socket nothing answers on), so that a restart
// under systemd is not refused; a socket something answers on is in use.
func listenUnix(path string) (net.Listener, error) {
	l, err := net.Listen("unix", path)
	if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
		return l, err
	}
	st, serr := os.Lstat(path)
	if serr != nil || st.Mode().Type() != os.ModeSocket {
		return nil, err // not a socket: never removed
	}
	if c, derr := net.DialTimeout("unix", path, time.Second); derr == nil {
		c.Close()
		return nil, fmt.Errorf("%s: another process is listening there", path)
	}
	if err := os.Remove(path); err != nil {
		return nil, err
	}
	return net.Listen("unix", path)
}
