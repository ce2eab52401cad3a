package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/manifest"
	"github.com/podrun/podrun/run"
)

const podYAML = "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers: [{name: app, image: busybox:1}]\n"

func writeManifest(t *testing.T, dir, name, pod string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(fmt.Sprintf(podYAML, pod)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func problemsOf(ps []Problem, source string) string {
	var b strings.Builder
	for _, p := range ps {
		if p.Source == source {
			b.WriteString(p.Msg + "\n")
		}
	}
	return b.String()
}

// TestScanTrustsOnlyRootOwnedSources: like sshd's StrictModes, a
// group-writable directory is refused as a whole and changes nothing (its
// files' pods stay wanted as last read); a group-writable file, a symlink
// or a FIFO is refused on its own, without blocking.
func TestScanTrustsOnlyRootOwnedSources(t *testing.T) {
	dir := t.TempDir()
	good := writeManifest(t, dir, "a.yaml", "a", 0o644)
	s := NewSources(dir, "")
	if wants, _, problems := s.Scan(context.Background(), nil); len(wants) != 1 || len(problems) != 0 {
		t.Fatalf("a trusted directory: wants %v, problems %v", wants, problems)
	}

	writable := writeManifest(t, dir, "b.yaml", "b", 0o664)
	if err := os.Symlink(good, filepath.Join(dir, "c.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "d.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wants map[string]Want
	var problems []Problem
	go func() {
		defer close(done)
		wants, _, problems = s.Scan(context.Background(), nil)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Scan hangs on a FIFO in the manifest directory")
	}
	if _, ok := wants["default/b"]; ok || len(wants) != 1 {
		t.Errorf("wants %v: want default/a only", wants)
	}
	if msg := problemsOf(problems, writable); !strings.Contains(msg, "writable by its group or by others (mode 0664)") {
		t.Errorf("group-writable file: %q", msg)
	}

	if err := os.Chmod(dir, 0o775); err != nil {
		t.Fatal(err)
	}
	wants, broken, problems := s.Scan(context.Background(), nil)
	if msg := problemsOf(problems, dir); !strings.Contains(msg, "not trusted") || !strings.Contains(msg, "mode 0775") {
		t.Errorf("group-writable directory: problems %+v", problems)
	}
	if _, ok := wants["default/a"]; !ok || !broken[good] {
		t.Errorf("a refused directory tore down its pods: wants %v, broken %v", wants, broken)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(writable, 0o644); err != nil {
		t.Fatal(err)
	}
	if wants, _, _ := s.Scan(context.Background(), nil); len(wants) != 2 {
		t.Errorf("after chmod go-w: wants %v, want a and b", wants)
	}
}

// TestFetchBounded: a URL body over the limit is an error that keeps the
// last good content; a redirect to another host is not followed; the
// header file's headers are sent; credentials never show.
func TestFetchBounded(t *testing.T) {
	body := fmt.Sprintf(podYAML, "u")
	var gotAuth string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		switch body {
		case "big":
			_, _ = w.Write(bytes.Repeat([]byte("#"), 2<<20))
		case "redirect":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		default:
			_, _ = w.Write([]byte(body))
		}
	}))
	defer srv.Close()
	headers := filepath.Join(t.TempDir(), "headers")
	if err := os.WriteFile(headers, []byte("# token\nAuthorization: Bearer s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := strings.Replace(srv.URL, "http://", "http://user:pw@", 1) + "/p.yaml?token=abc"
	s := NewSources(t.TempDir(), url)
	s.URLHeaderFile = headers
	s.Admission = manifest.Options{MaxFileSize: 1 << 20}
	name := s.URLName()
	if strings.Contains(name, "pw") || strings.Contains(name, "abc") || strings.Contains(name, "user") {
		t.Errorf("URLName %q shows credentials", name)
	}
	if wants, _, problems := s.Scan(context.Background(), nil); len(wants) != 1 || len(problems) != 0 {
		t.Fatalf("a good body: wants %v, problems %v", wants, problems)
	}
	if gotAuth != "Bearer s3cret" {
		t.Errorf("Authorization sent: %q", gotAuth)
	}
	for what, want := range map[string]string{"big": "larger than the limit of 1 MiB", "redirect": "redirect to another scheme or host"} {
		body = what
		wants, broken, problems := s.Scan(context.Background(), nil)
		msg := problemsOf(problems, name)
		if !strings.Contains(msg, want) || !broken[name] {
			t.Errorf("%s: problems %q, want %q", what, msg, want)
		}
		if _, ok := wants["default/u"]; !ok {
			t.Errorf("%s: the URL's pod is no longer wanted", what)
		}
		if strings.Contains(msg, "pw") || strings.Contains(msg, "abc") {
			t.Errorf("%s: the problem shows credentials: %q", what, msg)
		}
	}
	if err := os.Chmod(headers, 0o644|0o020); err != nil {
		t.Fatal(err)
	}
	body = fmt.Sprintf(podYAML, "u")
	if _, _, problems := s.Scan(context.Background(), nil); !strings.Contains(problemsOf(problems, name), "writable by its group") {
		t.Errorf("a group-writable header file was used: %+v", problems)
	}
}

func TestCheckURL(t *testing.T) {
	for u, insecure := range map[string]bool{"https://h/p": false, "http://h/p": true} {
		if err := CheckURL(u, insecure); err != nil {
			t.Errorf("%s (insecure %v): %v", u, insecure, err)
		}
	}
	for _, u := range []string{"http://h/p", "ftp://h/p", "file:///etc/p", "nohost"} {
		if err := CheckURL(u, false); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	if got := RedactURL("https://u:p@h/x?token=t&a=b"); got != "https://REDACTED@h/x?a=REDACTED&token=REDACTED" {
		t.Errorf("RedactURL = %s", got)
	}
}

// TestListenRemovesStaleSocket: a socket left by a killed daemon does not
// stop the next one; a socket in use is not taken over.
func TestListenRemovesStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen("unix:" + path); err == nil || !strings.Contains(err.Error(), "another process is listening") {
		t.Errorf("a socket in use: %v", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false) // as kill -9 leaves it
	l.Close()
	l2, err := Listen("unix:" + path)
	if err != nil {
		t.Fatalf("a stale socket: %v", err)
	}
	l2.Close()
	notSocket := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notSocket, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen("unix:" + notSocket); err == nil {
		t.Error("a regular file at the socket path was replaced")
	}
}

// TestStatusPrivateAndProblemsLoggedOnce: daemon.json is root's alone, and
// a broken file's problems are logged when they change, not every resync.
func TestStatusPrivateAndProblemsLoggedOnce(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("kind: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := run.NewHost(run.Config{Root: root, LogDir: t.TempDir()}, run.Deps{Engine: fake.New()}, nil, nil)
	defer h.Close()
	var log bytes.Buffer
	status := filepath.Join(root, "state", "daemon.json")
	d := New(h, Options{ManifestDir: dir, Resync: time.Minute, StatusFile: status}, slog.New(slog.NewTextHandler(&log, nil)), NewMetrics())
	for range 3 {
		d.sync(context.Background(), nil)
	}
	if n := strings.Count(log.String(), "manifest not applied"); n != 1 {
		t.Errorf("the problem was logged %d times over 3 syncs, want once:\n%s", n, log.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("apiVersion: v1\nkind: Nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.sync(context.Background(), nil)
	if n := strings.Count(log.String(), "manifest not applied"); n != 2 {
		t.Errorf("a changed problem was not logged again (%d lines)", n)
	}
	for path, want := range map[string]os.FileMode{status: 0o600, filepath.Dir(status): 0o700} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want %v", path, st.Mode().Perm(), err, want)
		}
	}
}
