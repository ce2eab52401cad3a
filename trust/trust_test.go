package trust

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	imgref "go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/signature"
)

func writeFile(t testing.TB, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFailsClosed(t *testing.T) {
	dir := t.TempDir()
	key := writeFile(t, dir, "key.pub", "not checked until an image is verified")
	missing := filepath.Join(dir, "absent.pub")
	for _, tc := range []struct {
		name     string
		policy   string // "" for no file
		explicit bool
		wantNil  bool
		wantErr  []string // all in the error
	}{
		{name: "default location absent: no policy", wantNil: true},
		{name: "named file absent", explicit: true, wantErr: []string{"signature policy", "policy.json"}},
		{name: "accept anything", policy: `{"default":[{"type":"insecureAcceptAnything"}]}`},
		{name: "does not parse", policy: `{"default":[`, wantErr: []string{"policy.json"}},
		{name: "unknown requirement", policy: `{"default":[{"type":"trustMe"}]}`, wantErr: []string{"policy.json", `"trustMe"`}},
		{name: "no default", policy: `{"transports":{}}`, wantErr: []string{"policy.json", "default"}},
		{name: "sigstoreSigned with its key", policy: `{"default":[{"type":"reject"}],"transports":{"docker":{"127.0.0.1:5000":[{"type":"sigstoreSigned","keyPath":"` + key + `"}]}}}`},
		{name: "sigstoreSigned key file missing", policy: `{"default":[{"type":"reject"}],"transports":{"docker":{"127.0.0.1:5000":[{"type":"sigstoreSigned","keyPath":"` + missing + `"}]}}}`,
			wantErr: []string{"policy.json", `transports.docker["127.0.0.1:5000"][0].keyPath`, "absent.pub"}},
		{name: "rekor key missing", policy: `{"default":[{"type":"sigstoreSigned","keyPath":"` + key + `","rekorPublicKeyPath":"` + missing + `"}]}`,
			wantErr: []string{"default[0].rekorPublicKeyPath"}},
		{name: "fulcio CA missing", policy: `{"default":[{"type":"sigstoreSigned","fulcio":{"caPath":"` + missing + `","oidcIssuer":"https://o","subjectEmail":"a@b"},"rekorPublicKeyPath":"` + key + `"}]}`,
			wantErr: []string{"default[0].fulcio.caPath"}},
		{name: "signedBy key missing", policy: `{"default":[{"type":"signedBy","keyType":"GPGKeys","keyPath":"` + missing + `"}]}`,
			wantErr: []string{"default[0].keyPath"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "policy.json")
			if tc.policy != "" {
				writeFile(t, filepath.Dir(path), "policy.json", tc.policy)
			}
			p, err := Load(path, tc.explicit, "")
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("loaded; want an error")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (p == nil) != tc.wantNil {
				t.Errorf("policy = %v, want nil: %v", p, tc.wantNil)
			}
		})
	}
}

func TestScope(t *testing.T) {
	p, err := signature.NewPolicyFromBytes([]byte(`{"default":[{"type":"reject"}],"transports":{"docker":{
		"127.0.0.1:5000": [{"type":"insecureAcceptAnything"}],
		"127.0.0.1:5000/team": [{"type":"reject"}],
		"127.0.0.1:5000/team/app:1": [{"type":"insecureAcceptAnything"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	const d = "@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	for _, tc := range []struct {
		ref, want string
		anything  bool
	}{
		{"127.0.0.1:5000/team/app" + d, `docker:"127.0.0.1:5000/team"`, false},
		{"127.0.0.1:5000/team/app:1", `docker:"127.0.0.1:5000/team/app:1"`, true},
		{"127.0.0.1:5000/other" + d, `docker:"127.0.0.1:5000"`, true},
		{"example.com/x" + d, "default", false},
	} {
		named, err := imgref.ParseNormalizedNamed(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		got, reqs := Scope(p, named)
		if got != tc.want || acceptsAnything(reqs) != tc.anything {
			t.Errorf("Scope(%s) = %s (accepts anything: %v), want %s (%v)", tc.ref, got, acceptsAnything(reqs), tc.want, tc.anything)
		}
	}
}

func TestPinned(t *testing.T) {
	const d = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	for _, tc := range []struct{ ref, want string }{
		{"busybox", "docker.io/library/busybox@" + d},
		{"127.0.0.1:5000/app:1", "127.0.0.1:5000/app@" + d},
		{"127.0.0.1:5000/app@sha256:2222222222222222222222222222222222222222222222222222222222222222", "127.0.0.1:5000/app@" + d},
	} {
		got, err := pinned(tc.ref, d)
		if err != nil || got.String() != tc.want {
			t.Errorf("pinned(%s) = %v, %v; want %s", tc.ref, got, err, tc.want)
		}
	}
}
