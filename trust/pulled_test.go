package trust

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podrun/podrun/archivereg"
	"github.com/podrun/podrun/registry"
)

// source is the layout's blobs and tags as a pull's fetch holds them.
func (l *testLayout) source() *archivereg.Blobs {
	blobs := map[digest.Digest]archivereg.Blob{}
	for d, data := range l.blobs {
		blobs[d] = archivereg.Blob{Data: data}
	}
	tags := map[string]digest.Digest{}
	for _, m := range l.index {
		tags[m.Annotations[ocispec.AnnotationRefName]] = m.Digest
	}
	return archivereg.NewBlobs(blobs, tags)
}

// TestVerifyPulled: the signatures of a pulled image are read from what
// the pull's fetch returned, served on loopback: the registry the image
// is named by (127.0.0.1:1, where nothing answers) is never asked.
func TestVerifyPulled(t *testing.T) {
	const ref = "127.0.0.1:1/team/app:1"
	trusted, trustedPub := newKey(t)
	other, _ := newKey(t)
	pub := writeFile(t, t.TempDir(), "trusted.pub", trustedPub)
	registriesD := t.TempDir() // no lookaside configured: c/image's default directory
	load := func(scope string, req map[string]any) *Policy {
		p, err := Load(writePolicy(t, scope, req), true, registriesD)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := load("127.0.0.1:1/team", map[string]any{"type": "sigstoreSigned", "keyPath": pub, "signedIdentity": map[string]any{"type": "matchRepoDigestOrExact"}})
	open := load("open.example.com", map[string]any{"type": "insecureAcceptAnything"})
	for _, tc := range []struct {
		name     string
		ref      string
		build    func(l *testLayout) digest.Digest // the image's digest
		fetchErr error
		want     string // in the refusal; "" allowed
		fetched  bool
	}{
		{name: "signed", ref: ref, fetched: true, build: func(l *testLayout) digest.Digest {
			d := l.image("1")
			l.sign(d, trusted, ref, d)
			return d
		}},
		{name: "unsigned", ref: ref, fetched: true, want: "no signature exists", build: func(l *testLayout) digest.Digest {
			return l.image("1")
		}},
		{name: "signed by another key", ref: ref, fetched: true, want: "cryptographic signature verification failed", build: func(l *testLayout) digest.Digest {
			d := l.image("1")
			l.sign(d, other, ref, d)
			return d
		}},
		{name: "the fetch failed", ref: ref, fetched: true, fetchErr: errors.New("502 Bad Gateway"), want: "reading its signatures: 502 Bad Gateway", build: func(l *testLayout) digest.Digest {
			return l.image("1")
		}},
		{name: "a scope that accepts anything fetches nothing", ref: "open.example.com/app:1", build: func(*testLayout) digest.Digest {
			return digest.FromString("anything")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &testLayout{t: t, blobs: map[digest.Digest][]byte{}}
			d := tc.build(l)
			policy := p
			if strings.HasPrefix(tc.ref, "open.example.com/") {
				policy = open
			}
			checkPulled(t, policy, tc.ref, d, l.source(), tc.fetchErr, tc.fetched, `docker:"127.0.0.1:1/team"`, tc.want)
		})
	}
}

// TestVerifyPulledLookaside: the lookaside directory registries.d gives
// the real repository is read for the image served on loopback (simple
// signing, GPG); a lookaside on a web server sends the verification to
// the registry directly, as Verify, fetching nothing.
func TestVerifyPulledLookaside(t *testing.T) {
	const host = "127.0.0.1:1" // nothing answers: the pull went through a mirror
	data := fixture(t, "simple-signing/manifest.json")
	d := digest.FromBytes(data)
	remap := map[string]any{"type": "remapIdentity", "prefix": host + "/testing", "signedPrefix": "docker.io/testing"}
	req := map[string]any{"type": "signedBy", "keyType": "GPGKeys", "keyPath": fixturePath(t, "simple-signing/public-key.gpg"), "signedIdentity": remap}
	for _, tc := range []struct {
		name      string
		lookaside string // "": a directory, with the signature when signed
		signed    bool
		fetched   bool
		want      string // in the refusal; "" allowed
	}{
		{name: "signed in the lookaside directory", signed: true, fetched: true},
		{name: "not in the lookaside directory", fetched: true, want: "no signature exists"},
		{name: "a lookaside on a web server", lookaside: "http://" + host + "/sigstore", want: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookaside := t.TempDir()
			if tc.signed {
				dir := filepath.Join(lookaside, "testing", "manifest@sha256="+d.Encoded())
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, dir, "signature-1", string(fixture(t, "simple-signing/signature-1")))
			}
			url := "file://" + lookaside
			if tc.lookaside != "" {
				url = tc.lookaside
			}
			registriesD := t.TempDir()
			writeFile(t, registriesD, "lookaside.yaml", fmt.Sprintf("docker:\n  %q:\n    lookaside: %q\n", host, url))
			p, err := Load(writePolicy(t, host+"/testing", req), true, registriesD)
			if err != nil {
				t.Fatal(err)
			}
			src := archivereg.NewBlobs(map[digest.Digest]archivereg.Blob{d: {Data: data}}, nil)
			checkPulled(t, p, host+"/testing/manifest:latest", d, src, nil, tc.fetched, fmt.Sprintf("docker:%q", host+"/testing"), tc.want)
		})
	}
}

// checkPulled checks VerifyPulled of ref at d, its fetch returning src and
// fetchErr: whether it fetched (wantFetched), and that it allowed the
// image (want "") or refused it in scope saying want.
func checkPulled(t *testing.T, p *Policy, ref string, d digest.Digest, src archivereg.Source, fetchErr error, wantFetched bool, scope, want string) {
	t.Helper()
	fetched := false
	fetch := func(context.Context) (archivereg.Source, error) {
		fetched = true
		return src, fetchErr
	}
	err := p.VerifyPulled(context.Background(), ref, d.String(), true, registry.Credential{}, fetch)
	if fetched != wantFetched {
		t.Errorf("fetched %v, want %v", fetched, wantFetched)
	}
	r := (*Refusal)(nil)
	switch {
	case want == "" && err != nil:
		t.Fatalf("VerifyPulled = %v, want allowed", err)
	case want != "" && (!errors.As(err, &r) || r.Scope != scope || !strings.Contains(err.Error(), want)):
		t.Fatalf("VerifyPulled = %v, want a refusal in scope %s saying %q", err, scope, want)
	}
}
