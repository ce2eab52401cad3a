package images

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
)

const pullRef = "registry.example.com/team/app:1"

// pullSecret is a kubernetes.io/dockerconfigjson Secret for registry.example.com.
func pullSecret(name, user, pass string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": []byte(
			`{"auths": {"https://registry.example.com": {"username": "` + user + `", "password": "` + pass + `"}}}`)},
	}
}

// recordingEngine keeps the options of every Pull.
type recordingEngine struct {
	*fake.Engine
	mu   sync.Mutex
	opts []engine.PullOptions
}

func (e *recordingEngine) Pull(ctx context.Context, ref string, o engine.PullOptions) (engine.Image, error) {
	e.mu.Lock()
	e.opts = append(e.opts, o)
	e.mu.Unlock()
	return e.Engine.Pull(ctx, ref, o)
}

type progressRecord struct {
	mu     sync.Mutex
	events []string
}

func (p *progressRecord) Update(ref string, _ engine.PullProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, "update "+ref)
}

func (p *progressRecord) Done(ref string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, "done "+ref)
}

func newPullHost(t *testing.T, o Options) (*Manager, *recordingEngine, struct{}) {
	t.Helper()
	fe := fake.New()
	fe.AddRemote(engine.Image{Ref: pullRef, Digest: "sha256:1", Size: 100})
	fe.RequireAuth(pullRef, "alice", "s3cret")
	e := &recordingEngine{Engine: fe}
	return New(e, o, time.Now), e, struct{}{}
}

func writeDockerConfig(t *testing.T, user, pass string) string {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(`{"auths": {"registry.example.com": {"auth": "`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEnsureImageCredentials(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		secrets   []*corev1.Secret
		config    string // user:pass in the node's Docker config; "" none
		wantErr   []string
		wantPulls int
	}{
		{name: "anonymous", wantPulls: 1, wantErr: []string{"ErrImagePull: image", "401 Unauthorized",
			"podrun has no credentials for registry.example.com: add an imagePullSecret of type kubernetes.io/dockerconfigjson"}},
		{name: "pull secret", secrets: []*corev1.Secret{pullSecret("regcred", "alice", "s3cret")}, wantPulls: 1},
		{name: "node config", config: "alice:s3cret", wantPulls: 1},
		{name: "wrong secret, then the node's", secrets: []*corev1.Secret{pullSecret("regcred", "bob", "x")}, config: "alice:s3cret", wantPulls: 2},
		{name: "all refused", secrets: []*corev1.Secret{pullSecret("regcred", "bob", "x")}, config: "carol:y", wantPulls: 2,
			wantErr: []string{"ErrImagePull", `the registry refused the credentials of user "bob" from secret "default/regcred", user "carol" from `}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Options
			if tc.config != "" {
				user, pass, _ := strings.Cut(tc.config, ":")
				cfg.RegistryConfig = writeDockerConfig(t, user, pass)
			}
			h, e, _ := newPullHost(t, cfg)
			img, err := h.Ensure(ctx, pullRef, corev1.PullAlways, tc.secrets)
			if n := len(e.opts); n != tc.wantPulls {
				t.Errorf("%d pulls, want %d", n, tc.wantPulls)
			}
			if len(tc.wantErr) == 0 {
				if err != nil || img.Ref != pullRef {
					t.Fatalf("ensureImage = %+v, %v", img, err)
				}
				return
			}
			var perr *PullError
			if !errors.As(err, &perr) || perr.Reason != ReasonErrImagePull || !errors.Is(err, engine.ErrUnauthorized) {
				t.Fatalf("err = %v; want an PullError ErrImagePull wrapping ErrUnauthorized", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), `"x"`) {
				t.Errorf("the error shows a password: %v", err)
			}
		})
	}
}

func TestPullCredentialsGoToTheImagesRegistryOnly(t *testing.T) {
	h, e, _ := newPullHost(t, Options{})
	if _, err := h.Ensure(context.Background(), pullRef, corev1.PullAlways, []*corev1.Secret{pullSecret("r", "alice", "s3cret")}); err != nil {
		t.Fatal(err)
	}
	auth := e.opts[0].Auth
	if u, p := auth("registry.example.com"); u != "alice" || p != "s3cret" {
		t.Errorf("Auth(registry.example.com) = %q, %q", u, p)
	}
	if u, p := auth("storage.example.net"); u != "" || p != "" {
		t.Errorf("Auth(storage.example.net) = %q, %q; want nothing for another host", u, p)
	}
}

func TestEnsureImageReasons(t *testing.T) {
	ctx := context.Background()
	h, e, _ := newPullHost(t, Options{Insecure: []string{"registry.example.com"}})
	_, err := h.Ensure(ctx, "podrun.test/absent:1", corev1.PullNever, nil)
	if perr := (*PullError)(nil); !errors.As(err, &perr) || perr.Reason != ReasonErrImageNeverPull {
		t.Errorf("Never, absent: %v; want ErrImageNeverPull", err)
	}
	_, err = h.Ensure(ctx, "Not A Ref", corev1.PullIfNotPresent, nil)
	if perr := (*PullError)(nil); !errors.As(err, &perr) || perr.Reason != ReasonInvalidImageName {
		t.Errorf("invalid name: %v; want InvalidImageName", err)
	}
	_, err = h.Ensure(ctx, "podrun.test/absent:1", corev1.PullIfNotPresent, nil)
	if perr := (*PullError)(nil); !errors.As(err, &perr) || perr.Reason != ReasonErrImagePull || !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("not in the registry: %v; want ErrImagePull wrapping ErrNotFound", err)
	}
	if len(e.opts) == 0 || !slices.Equal(e.opts[0].Insecure, []string{"registry.example.com"}) || e.opts[0].Progress != nil {
		t.Errorf("pull options %+v; want the insecure registries and no progress", e.opts)
	}
}

func TestPullProgressAndImagePullCommand(t *testing.T) {
	rec := &progressRecord{}
	h, _, _ := newPullHost(t, Options{RegistryConfig: writeDockerConfig(t, "alice", "s3cret"), Progress: rec})
	img, err := h.Pull(context.Background(), pullRef)
	if err != nil || img.Ref != pullRef {
		t.Fatalf("PullImage = %+v, %v", img, err)
	}
	want := []string{"update " + pullRef, "update " + pullRef, "done " + pullRef}
	if !slices.Equal(rec.events, want) {
		t.Errorf("progress %q, want %q", rec.events, want)
	}
	// A --registry-config given explicitly must exist; the default need not.
	missing := filepath.Join(t.TempDir(), "nope.json")
	h2, _, _ := newPullHost(t, Options{RegistryConfig: missing})
	if _, err := h2.Pull(context.Background(), pullRef); err == nil || !strings.Contains(err.Error(), "reading the registry config") {
		t.Errorf("missing explicit config: %v", err)
	}
	h3, _, _ := newPullHost(t, Options{RegistryConfig: missing, RegistryConfigOptional: true})
	if _, err := h3.Pull(context.Background(), pullRef); !errors.Is(err, engine.ErrUnauthorized) {
		t.Errorf("missing default config: %v; want an anonymous pull, refused", err)
	}
}

// TestPullMessagesAreTheKubelets: a failed pull's message is containerd
// CRI's ("failed to pull and unpack image" and the image fully named), and
// the back-off after it is the kubelet's image manager's: the image as
// written with the default tag, then the failed pull's reason and message.
func TestPullMessagesAreTheKubelets(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	h := New(fake.New(), Options{}, func() time.Time { return now })
	_, err := h.EnsureGated(ctx, "uid1", "absent", corev1.PullIfNotPresent, nil)
	perr := (*PullError)(nil)
	if !errors.As(err, &perr) || perr.Reason != ReasonErrImagePull ||
		!strings.HasPrefix(perr.Err.Error(), `failed to pull and unpack image "docker.io/library/absent:latest": `) {
		t.Fatalf("first pull: %v; want ErrImagePull, containerd CRI's message", err)
	}
	cause := perr.Err.Error()
	_, err = h.EnsureGated(ctx, "uid1", "absent", corev1.PullIfNotPresent, nil)
	want := `Back-off pulling image "absent:latest": ErrImagePull: ` + cause
	if !errors.As(err, &perr) || perr.Reason != ReasonImagePullBackOff || perr.Err.Error() != want {
		t.Errorf("in back-off: %v; want ImagePullBackOff, %q", err, want)
	}
	for ref, want := range map[string]string{
		"busybox": "busybox:latest", "podrun.test/x:1": "podrun.test/x:1", "localhost:5000/x": "localhost:5000/x:latest",
		"x@sha256:" + strings.Repeat("a", 64): "x@sha256:" + strings.Repeat("a", 64),
	} {
		if got := withDefaultTag(ref); got != want {
			t.Errorf("withDefaultTag(%q) = %q, want %q", ref, got, want)
		}
	}
}
