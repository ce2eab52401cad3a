package kubepods

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podrun/podrun/manifest"
)

// issued is a token as the API server returns it at now for tr: its
// expiry now + expirationSeconds (3600 when not asked), the request's
// spec echoed.
func issued(tr *authenticationv1.TokenRequest, now time.Time, n int) *authenticationv1.TokenRequest {
	out := tr.DeepCopy()
	if out.Spec.ExpirationSeconds == nil {
		out.Spec.ExpirationSeconds = ptr.To[int64](3600)
	}
	out.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", n),
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*out.Spec.ExpirationSeconds) * time.Second))}
	return out
}

// tokenReactor makes cs issue tokens as the API server does (issued), or
// fail with *fail when set; each request is recorded in asked with the
// service account it was made for.
type tokenReactor struct {
	clk   clock.PassiveClock
	asked []string
	reqs  []*authenticationv1.TokenRequest
	fail  error
}

func (r *tokenReactor) install(cs *fake.Clientset) {
	cs.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.CreateAction)
		if c.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := c.GetObject().(*authenticationv1.TokenRequest)
		r.asked = append(r.asked, c.GetNamespace()+"/"+a.(k8stesting.CreateActionImpl).Name)
		r.reqs = append(r.reqs, tr.DeepCopy())
		if r.fail != nil {
			return true, nil, r.fail
		}
		return true, issued(tr, r.clk.Now(), len(r.reqs)), nil
	})
}

// TestRenew is the kubelet's requiresRefresh decision table: renewed
// once older than 80% of its TTL or 24 h (each less the jitter), or issued
// in the future; never without expirationSeconds.
func TestRenew(t *testing.T) {
	iat := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tok := func(ttl time.Duration) *authenticationv1.TokenRequest {
		tr := &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{ExpirationTimestamp: metav1.NewTime(iat.Add(ttl))}}
		tr.Spec.ExpirationSeconds = ptr.To(int64(ttl / time.Second))
		return tr
	}
	noExp := tok(time.Hour)
	noExp.Spec.ExpirationSeconds = nil
	for _, tc := range []struct {
		name   string
		tr     *authenticationv1.TokenRequest
		age    time.Duration
		jitter time.Duration
		want   bool
	}{
		{"new", tok(time.Hour), 0, 0, false},
		{"1h at 47m59s", tok(time.Hour), 47*time.Minute + 59*time.Second, 0, false},
		{"1h at 48m", tok(time.Hour), 48 * time.Minute, 0, false}, // after, not at
		{"1h past 48m", tok(time.Hour), 48*time.Minute + time.Second, 0, true},
		{"1h at 47m55s, jitter 6s", tok(time.Hour), 47*time.Minute + 55*time.Second, 6 * time.Second, true},
		{"1h at 47m55s, jitter 4s", tok(time.Hour), 47*time.Minute + 55*time.Second, 4 * time.Second, false},
		// 20% of 3607 s is 721 s (whole seconds, as the kubelet's).
		{"3607s at 48m6s", tok(3607 * time.Second), 48*time.Minute + 6*time.Second, 0, false},
		{"3607s past 48m6s", tok(3607 * time.Second), 48*time.Minute + 7*time.Second, 0, true},
		{"10m past 8m", tok(10 * time.Minute), 8*time.Minute + time.Second, 0, true},
		{"48h at 23h59m", tok(48 * time.Hour), 23*time.Hour + 59*time.Minute, 0, false},
		{"48h past 24h", tok(48 * time.Hour), 24*time.Hour + time.Second, 0, true},
		{"48h at 23h59m55s, jitter 9s", tok(48 * time.Hour), 23*time.Hour + 59*time.Minute + 55*time.Second, 9 * time.Second, true},
		{"1y (extended) past 24h", tok(365 * 24 * time.Hour), 24*time.Hour + time.Second, 0, true},
		{"issued in the future", tok(time.Hour), -time.Second, 0, true},
		{"expired", tok(time.Hour), 2 * time.Hour, 0, true},
		{"no expirationSeconds", noExp, 2 * time.Hour, 0, false},
	} {
		if got := renew(iat.Add(tc.age), tc.tr, tc.jitter); got != tc.want {
			t.Errorf("%s: renew %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestTokensForPod: each serviceAccountToken source of a pod is requested
// (client-go's fake clientset) for the pod's service account in its
// namespace, with the source's audience and expirationSeconds, bound to
// the pod by name and UID, and keyed by volume and path.
func TestTokensForPod(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	pod := decodePod(t, apiPod)
	pod.Spec.ServiceAccountName = "builder"
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "vault", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr.To[int64](600), Path: "auth/token"}}}}}})
	cs := fake.NewClientset()
	r := &tokenReactor{clk: clk}
	r.install(cs)
	got, err := NewTokens(cs, clk).ForPod(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(r.asked, ", "); g != "default/builder, default/builder" {
		t.Errorf("asked %s", g)
	}
	ref := &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	want := []authenticationv1.TokenRequestSpec{
		{ExpirationSeconds: ptr.To[int64](3607), BoundObjectRef: ref},
		{Audiences: []string{"vault"}, ExpirationSeconds: ptr.To[int64](600), BoundObjectRef: ref},
	}
	for i, w := range want {
		if i >= len(r.reqs) || !equality.Semantic.DeepEqual(r.reqs[i].Spec, w) {
			t.Errorf("request %d: %+v, want %+v", i, r.reqs, w)
		}
	}
	if len(got) != 2 || got["kube-api-access-abcde/token"].Status.Token != "token-1" || got["vault/auth/token"].Status.Token != "token-2" {
		t.Errorf("tokens %v", got)
	}
	if got, err := NewTokens(cs, clk).ForPod(context.Background(), boundPod("a", nil)); got != nil || err != nil {
		t.Errorf("a pod without token sources: %v %v", got, err)
	}
}

// TestTokensRefresh: over a fake clock, a token is reused until 80% of
// its TTL, then renewed; a failed renewal keeps the last token while it
// is valid and is an error once it has expired; a pod never given one
// waits with the API server's answer; the tokens of a pod gone are
// forgotten.
func TestTokensRefresh(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	pod := decodePod(t, apiPod) // kube-api-access: 3607 s
	cs := fake.NewClientset()
	r := &tokenReactor{clk: clk}
	r.install(cs)
	tk := NewTokens(cs, clk)
	tk.Jitter = func() time.Duration { return 0 }
	token := func() (string, error) {
		t.Helper()
		got, err := tk.ForPod(context.Background(), pod)
		if err != nil {
			return "", err
		}
		return got["kube-api-access-abcde/token"].Status.Token, nil
	}
	steps := []struct {
		step time.Duration
		fail error
		want string // token, or the error's text
	}{
		{0, nil, "token-1"},
		{10 * time.Second, nil, "token-1"},                                     // cached
		{47*time.Minute + 40*time.Second, nil, "token-1"},                      // 47m50s: not yet (renewed past 3607 s - 721 s = 48m6s)
		{20 * time.Second, nil, "token-2"},                                     // 48m10s: renewed
		{48*time.Minute + 7*time.Second, errors.New("unreachable"), "token-2"}, // renewal failed, still valid
		{12*time.Minute + time.Second, errors.New("unreachable"), "expired and its renewal failed: unreachable"},
		{time.Second, nil, "token-5"}, // the API answers again (requests 3 and 4 failed)
	}
	for i, s := range steps {
		clk.Step(s.step)
		r.fail = s.fail
		got, err := token()
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, s.want) {
			t.Errorf("step %d (+%v): %q, want %q", i, s.step, got, s.want)
		}
	}
	if len(r.reqs) != 5 {
		t.Errorf("%d requests, want 5", len(r.reqs))
	}
	// Another pod (another UID): its own token; gone, forgotten.
	other := pod.DeepCopy()
	other.UID = "other"
	if _, err := tk.ForPod(context.Background(), other); err != nil || len(tk.cache) != 2 {
		t.Fatalf("%v, cache %d", err, len(tk.cache))
	}
	tk.Forget(map[types.UID]bool{pod.UID: true})
	if len(tk.cache) != 1 {
		t.Errorf("cache %d after forgetting the other pod", len(tk.cache))
	}
	clk.Step(2 * time.Hour)
	tk.Forget(map[types.UID]bool{pod.UID: true})
	if len(tk.cache) != 0 {
		t.Errorf("cache %d after the token expired", len(tk.cache))
	}

	// Never issued: the error says why (the Node authorizer's refusal).
	fresh := NewTokens(cs, clk)
	r.fail = errors.New(`serviceaccounts "default" is forbidden: User "system:node:vm" cannot create resource "serviceaccounts/token"`)
	if _, err := fresh.ForPod(context.Background(), pod); err == nil || !strings.Contains(err.Error(), `service account token of volume "kube-api-access-abcde" (token): requesting a token for service account default/default: serviceaccounts "default" is forbidden`) {
		t.Errorf("never issued: %v", err)
	}
}

// TestSourceTokens: a pod bound to the node gets its token; one whose
// token is refused waits (a problem, not rejected, read again soon); a
// renewed token changes the fingerprint (the daemon writes it into the
// running pod's volume).
func TestSourceTokens(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	cs := fake.NewClientset(rootCA())
	r := &tokenReactor{clk: clk}
	r.install(cs)
	s := NewSource(cs, "vm", manifest.Options{}, clk, quiet())
	s.tokens.Jitter = func() time.Duration { return 0 }
	web := decodePod(t, apiPod)
	w := s.read(context.Background(), []*corev1.Pod{web})
	if len(w.Pods) != 1 || w.Pods[0].Tokens["kube-api-access-abcde/token"].Status.Token != "token-1" {
		t.Fatalf("pods %v problems %q", w.Pods, w.Problems)
	}
	print := fingerprint(w)
	clk.Step(10 * time.Second)
	if p := fingerprint(s.read(context.Background(), []*corev1.Pod{web})); p != print {
		t.Errorf("fingerprint changed without a new token:\n%s\n%s", print, p)
	}
	clk.Step(49 * time.Minute)
	w = s.read(context.Background(), []*corev1.Pod{web})
	if fingerprint(w) == print || w.Pods[0].Tokens["kube-api-access-abcde/token"].Status.Token != "token-2" {
		t.Errorf("renewed token: %v, fingerprint unchanged %t", w.Pods[0].Tokens, fingerprint(w) == print)
	}
	if strings.Contains(fingerprint(w), "token-2") {
		t.Error("the token is in the fingerprint")
	}

	other := decodePod(t, strings.ReplaceAll(apiPod, "x2k4q", "y"))
	other.UID = "other"
	r.fail = errors.New("forbidden")
	s.failed = false
	w = s.read(context.Background(), []*corev1.Pod{web, other})
	if len(w.Pods) != 1 || len(w.Rejected) != 0 || !s.failed || len(w.Problems) != 1 ||
		!strings.Contains(w.Problems[0], "web-5d9c7b8f6-y (uid other) bound to this node: service account token of volume") {
		t.Errorf("refused token: pods %d rejected %v failed %t problems %q", len(w.Pods), w.Rejected, s.failed, w.Problems)
	}
}
