package nodeapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/run"
)

// logRequest is what a /containerLogs query asks.
type logRequest struct {
	Previous   bool
	Options    logs.Options
	LimitBytes int64 // 0: no limit
}

// errBadQuery and errInvalidQuery are the kubelet's 400 and 422 for a
// log query.
var (
	errBadQuery     = errors.New("unable to decode query")
	errInvalidQuery = errors.New("invalid request")
)

// parseLogQuery reads a /containerLogs query as the kubelet does: the
// v1 PodLogOptions of its parameters (the old "tail" for tailLines,
// "all" for none), checked as ValidatePodLogOptions; sinceSeconds counts
// back from now.
func parseLogQuery(q url.Values, now time.Time) (logRequest, error) {
	q = cloneValues(q)
	if tail := q.Get("tail"); tail != "" {
		q["tailLines"] = []string{tail}
		if tail == "all" {
			delete(q, "tailLines")
		}
	}
	o, err := podLogOptions(q)
	if err != nil {
		return logRequest{}, fmt.Errorf("%w: %w", errBadQuery, err)
	}
	switch {
	case o.TailLines != nil && *o.TailLines < 0:
		return logRequest{}, fmt.Errorf("%w: tailLines must be greater than or equal to 0", errInvalidQuery)
	case o.LimitBytes != nil && *o.LimitBytes < 1:
		return logRequest{}, fmt.Errorf("%w: limitBytes must be greater than 0", errInvalidQuery)
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		return logRequest{}, fmt.Errorf("%w: sinceSeconds must be greater than 0", errInvalidQuery)
	case o.SinceSeconds != nil && o.SinceTime != nil:
		return logRequest{}, fmt.Errorf("%w: at most one of sinceTime or sinceSeconds may be specified", errInvalidQuery)
	}
	r := logRequest{Previous: o.Previous, Options: logs.Options{Tail: -1, Timestamps: o.Timestamps, Follow: o.Follow && !o.Previous}}
	if o.TailLines != nil {
		r.Options.Tail = int(*o.TailLines)
	}
	if o.LimitBytes != nil {
		r.LimitBytes = *o.LimitBytes
	}
	switch {
	case o.SinceSeconds != nil:
		r.Options.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	case o.SinceTime != nil:
		r.Options.Since = o.SinceTime.Time
	}
	if o.Stream != nil {
		switch *o.Stream {
		case corev1.LogStreamStdout:
			r.Options.Stream = "stdout"
		case corev1.LogStreamStderr:
			r.Options.Stream = "stderr"
		case corev1.LogStreamAll:
		default:
			return logRequest{}, fmt.Errorf("%w: invalid stream type %q", errBadQuery, *o.Stream)
		}
	}
	return r, nil
}

// podLogOptions decodes the v1 PodLogOptions query parameters as the API
// machinery's conversions do (the kubelet's ParameterCodec): a bool is
// false when absent, "0" or "false", else true; a time is RFC 3339.
func podLogOptions(q url.Values) (corev1.PodLogOptions, error) {
	var o corev1.PodLogOptions
	flag := func(name string) bool {
		v, ok := q[name]
		return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
	}
	number := func(name string) (*int64, error) {
		v := q.Get(name)
		if _, ok := q[name]; !ok || v == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &n, nil
	}
	o.Container = q.Get("container")
	o.Follow, o.Previous, o.Timestamps = flag("follow"), flag("previous"), flag("timestamps")
	o.InsecureSkipTLSVerifyBackend = flag("insecureSkipTLSVerifyBackend")
	var err error
	if o.SinceSeconds, err = number("sinceSeconds"); err != nil {
		return o, err
	}
	if o.TailLines, err = number("tailLines"); err != nil {
		return o, err
	}
	if o.LimitBytes, err = number("limitBytes"); err != nil {
		return o, err
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, fmt.Errorf("sinceTime: %w", err)
		}
		o.SinceTime = &metav1.Time{Time: t}
	}
	if v, ok := q["stream"]; ok && len(v) > 0 {
		st := v[0]
		o.Stream = &st
	}
	return o, nil
}

func cloneValues(q url.Values) url.Values {
	c := make(url.Values, len(q))
	for k, v := range q {
		c[k] = v
	}
	return c
}

// containerLogs serves GET /containerLogs/{namespace}/{pod}/{container}:
// the container's log as `podrun logs` prints it, flushed as it comes.
func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	req, err := parseLogQuery(r.URL.Query(), s.clock.Now())
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errInvalidQuery) {
			code = http.StatusUnprocessableEntity
		}
		http.Error(w, err.Error(), code)
		return
	}
	p, ok := s.pod(w, r, ns, name)
	if !ok {
		return
	}
	if attach.ContainerSpec(p.Pod, container) == nil {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, name), http.StatusNotFound)
		return
	}
	dir := s.pods.LogDir(p, container)
	restart, err := logs.Latest(dir)
	if err != nil {
		http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start: ContainerCreating", container, name), http.StatusBadRequest)
		return
	}
	if req.Previous {
		if restart == 0 {
			http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, name), http.StatusBadRequest)
			return
		}
		restart--
	}
	w.Header().Set("Content-Type", "text/plain")
	var out io.Writer = &flushWriter{w: w, rc: http.NewResponseController(w)}
	if req.LimitBytes > 0 {
		out = &limitWriter{w: out, left: req.LimitBytes}
	}
	if err := logs.Copy(r.Context(), out, dir, restart, req.Options); err != nil && !errors.Is(err, errLimit) && r.Context().Err() == nil {
		s.log.Warn("node API: container log", "pod", ns+"/"+name, "container", container, "err", err)
	}
}

// pod finds the pod namespace/name, or answers 404 (500 when the node
// cannot be read).
func (s *Server) pod(w http.ResponseWriter, r *http.Request, ns, name string) (*run.PodInfo, bool) {
	p, err := s.pods.Pod(r.Context(), run.Target{Namespace: ns, Name: name})
	switch {
	case errors.Is(err, run.ErrNoPod):
		http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
		return nil, false
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, false
	}
	return p, true
}

// flushWriter sends every write on at once (the kubelet's flushwriter):
// a followed log reaches the client as it is written.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	return n, f.rc.Flush()
}

// errLimit ends a log copy at limitBytes.
var errLimit = errors.New("limitBytes reached")

// limitWriter writes the first left bytes, then fails with errLimit (the
// kubelet's LogWriter with limitBytes: the last line may be cut).
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimit
	}
	cut := int64(len(p)) > l.left
	if cut {
		p = p[:l.left]
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err == nil && cut {
		err = errLimit
	}
	return n, err
}
