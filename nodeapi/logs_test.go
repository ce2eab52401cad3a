package nodeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/logs"
	"github.com/podrun/podrun/run"
)

var discardLog = slog.New(slog.DiscardHandler)

func TestParseLogQuery(t *testing.T) {
	now := testNow
	since := now.Add(-time.Hour).Truncate(time.Second)
	for _, tc := range []struct {
		query string
		want  logRequest
		err   error
	}{
		{"", logRequest{Options: logs.Options{Tail: -1}}, nil},
		{"follow=true&timestamps=true", logRequest{Options: logs.Options{Tail: -1, Follow: true, Timestamps: true}}, nil},
		{"previous=true&follow=true", logRequest{Previous: true, Options: logs.Options{Tail: -1}}, nil},
		{"tailLines=10", logRequest{Options: logs.Options{Tail: 10}}, nil},
		{"tailLines=0", logRequest{Options: logs.Options{Tail: 0}}, nil},
		{"tail=5", logRequest{Options: logs.Options{Tail: 5}}, nil},
		{"tail=all&tailLines=3", logRequest{Options: logs.Options{Tail: -1}}, nil},
		{"limitBytes=100", logRequest{LimitBytes: 100, Options: logs.Options{Tail: -1}}, nil},
		{"sinceSeconds=60", logRequest{Options: logs.Options{Tail: -1, Since: now.Add(-time.Minute)}}, nil},
		{"sinceTime=" + url.QueryEscape(since.Format(time.RFC3339)), logRequest{Options: logs.Options{Tail: -1, Since: since}}, nil},
		{"stream=Stdout", logRequest{Options: logs.Options{Tail: -1, Stream: "stdout"}}, nil},
		{"stream=Stderr", logRequest{Options: logs.Options{Tail: -1, Stream: "stderr"}}, nil},
		{"stream=All", logRequest{Options: logs.Options{Tail: -1}}, nil},
		{"stream=Other", logRequest{}, errBadQuery},
		{"tailLines=x", logRequest{}, errBadQuery},
		{"tailLines=-1", logRequest{}, errInvalidQuery},
		{"limitBytes=0", logRequest{}, errInvalidQuery},
		{"sinceSeconds=0", logRequest{}, errInvalidQuery},
		{"sinceSeconds=5&sinceTime=" + url.QueryEscape(since.Format(time.RFC3339)), logRequest{}, errInvalidQuery},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseLogQuery(q, now)
		if !errors.Is(err, tc.err) || (tc.err == nil && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("%q: got %+v, %v; want %+v, %v", tc.query, got, err, tc.want, tc.err)
		}
	}
}

func TestLimitWriter(t *testing.T) {
	var out []byte
	w := &limitWriter{w: writerFunc(func(p []byte) (int, error) { out = append(out, p...); return len(p), nil }), left: 5}
	if n, err := w.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("first write: %d, %v", n, err)
	}
	if n, err := w.Write([]byte("defg")); n != 2 || !errors.Is(err, errLimit) {
		t.Fatalf("second write: %d, %v", n, err)
	}
	if n, err := w.Write([]byte("h")); n != 0 || !errors.Is(err, errLimit) {
		t.Fatalf("third write: %d, %v", n, err)
	}
	if string(out) != "abcde" {
		t.Fatalf("wrote %q", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// fakePods is a node with one pod, default/web (uid u1), whose
// containers are app (running, restarted once) and sidecar (not running);
// logs are under dir.
type fakePods struct {
	dir string
	pod *run.PodInfo
}

func newFakePods(t *testing.T) *fakePods {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Stdin: true, TTY: true}, {Name: "sidecar"}, {Name: "quiet"},
		}},
	}
	ctr := func(id, name, restart string, state engine.TaskState) engine.Container {
		return engine.Container{ID: id, Labels: map[string]string{labels.Container: name, labels.RestartCount: restart}, Task: engine.Task{State: state}}
	}
	f := &fakePods{dir: t.TempDir(), pod: &run.PodInfo{UID: "u1", Namespace: "default", Name: "web", Pod: pod, Containers: []engine.Container{
		ctr("app-0", "app", "0", engine.TaskStopped), ctr("app-1", "app", "1", engine.TaskRunning),
		ctr("sidecar-0", "sidecar", "0", engine.TaskStopped), ctr("quiet-0", "quiet", "0", engine.TaskRunning),
	}}}
	for _, l := range []struct {
		container string
		restart   int
		text      string
	}{
		{"app", 0, "2026-11-29T10:00:00Z stdout F before the restart\n"},
		{"app", 1, "2026-11-29T11:00:00Z stdout F one\n2026-11-29T11:30:00Z stderr F two\n2026-11-29T11:59:00Z stdout F three\n"},
		{"quiet", 0, "2026-11-29T11:00:00Z stdout F quiet's line\n"},
	} {
		d := filepath.Join(f.dir, l.container)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("%d.log", l.restart)), []byte(l.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fakePods) Pod(_ context.Context, t run.Target) (*run.PodInfo, error) {
	if t.Namespace == "default" && t.Name == "web" {
		return f.pod, nil
	}
	return nil, fmt.Errorf("%w: %s", run.ErrNoPod, t)
}

func (f *fakePods) LogDir(_ *run.PodInfo, container string) string {
	return filepath.Join(f.dir, container)
}

// allowMasters allows system:masters, as the API server's RBAC.
func allowMasters(spec authzv1.SubjectAccessReviewSpec) (bool, error) {
	return len(spec.Groups) > 0 && spec.Groups[0] == "system:masters", nil
}

// asAPIServer is a request from the API server's client certificate.
func asAPIServer(t *testing.T, ca *testCA, method, target string) *http.Request {
	t.Helper()
	c := ca.client(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, testNow.Add(time.Hour))
	r := httptest.NewRequest(method, target, nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c.Leaf}}
	return r
}

func TestContainerLogs(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	s, _ := authServer(t, ca, allowMasters, Config{Pods: newFakePods(t)})
	for _, tc := range []struct {
		target string
		code   int
		body   string
	}{
		{"/containerLogs/default/web/app", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/default/web/app?tailLines=1", 200, "three\n"},
		{"/containerLogs/default/web/app?timestamps=true&tailLines=1", 200, "2026-11-29T11:59:00.000000000Z three\n"},
		{"/containerLogs/default/web/app?limitBytes=6", 200, "one\ntw"},
		{"/containerLogs/default/web/app?sinceSeconds=1799", 200, "three\n"}, // now is 12:00
		{"/containerLogs/default/web/app?stream=Stderr", 200, "two\n"},
		{"/containerLogs/default/web/app?previous=true", 200, "before the restart\n"},
		{"/containerLogs/default/web/quiet?previous=true", 400, "previous terminated container \"quiet\" in pod \"web\" not found\n"},
		{"/containerLogs/default/web/sidecar", 400, "container \"sidecar\" in pod \"web\" is waiting to start: ContainerCreating\n"},
		{"/containerLogs/default/web/nope", 404, "container \"nope\" not found in pod \"web\"\n"},
		{"/containerLogs/default/nope/app", 404, "pod \"nope\" does not exist\n"},
		{"/containerLogs/default/web/app?tailLines=-1", 422, ""},
		{"/containerLogs/default/web/app?tailLines=x", 400, ""},
		{"/containerLogs/default/web", 404, ""},
	} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, asAPIServer(t, ca, "GET", tc.target))
		if w.Code != tc.code || (tc.body != "" && w.Body.String() != tc.body) {
			t.Errorf("%s: got %d %q, want %d %q", tc.target, w.Code, w.Body.String(), tc.code, tc.body)
		}
	}
}
