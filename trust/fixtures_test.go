package trust

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podrun/podrun/registry"
)

// The tests here verify real signatures made against real Fulcio, Rekor
// and GPG keys (c/image's own fixtures, testdata/README.md), offline,
// through podrun's code paths: VerifyArchive for sigstore attachments in
// an archive, Verify with a registry's lookaside for simple signing.

// fixture is testdata/name.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fixturePath is testdata/name's absolute path (a policy names files so).
func fixturePath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sigstoreSig is a sigstore signature as c/image stores it in a file: a
// 0 byte, "sigstore-json", a newline, then this as JSON.
type sigstoreSig struct {
	MIMEType    string            `json:"mimeType"`
	Payload     []byte            `json:"payload"`
	Annotations map[string]string `json:"annotations"`
}

func readSigstoreSig(t *testing.T, name string) sigstoreSig {
	t.Helper()
	rest, ok := bytes.CutPrefix(fixture(t, name), []byte("\x00sigstore-json\n"))
	if !ok {
		t.Fatalf("%s: not a sigstore signature blob", name)
	}
	var s sigstoreSig
	if err := json.Unmarshal(rest, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// without is s without annotation key.
func (s sigstoreSig) without(key string) sigstoreSig {
	s.Annotations = maps.Clone(s.Annotations)
	delete(s.Annotations, key)
	return s
}

// rawManifest adds the manifest data byte for byte (a signature covers
// those bytes), of mediaType, named name in index.json; its digest.
func (l *testLayout) rawManifest(data []byte, mediaType, name string) digest.Digest {
	desc := l.blob(data)
	desc.MediaType = mediaType
	desc.Annotations = map[string]string{ocispec.AnnotationRefName: name}
	l.index = append(l.index, desc)
	return desc.Digest
}

// attach adds the sigstore attachment of the manifest of digest of
// holding sig as cosign stores it: one layer, the payload, with the
// signature's media type and annotations (certificate, chain, Rekor
// bundle).
func (l *testLayout) attach(of digest.Digest, sig sigstoreSig) {
	layer := l.blob(sig.Payload)
	layer.MediaType = sig.MIMEType
	layer.Annotations = sig.Annotations
	cfg := l.blob([]byte(`{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}`))
	cfg.MediaType = ocispec.MediaTypeImageConfig
	l.manifest(ocispec.Manifest{Config: cfg, Layers: []ocispec.Descriptor{layer}}, "sha256-"+of.Encoded()+".sig")
}

const dockerV2 = "application/vnd.docker.distribution.manifest.v2+json"

// writePolicy writes a policy rejecting everything but scope, which
// requires req; its path.
func writePolicy(t *testing.T, scope string, req map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"default":    []any{map[string]any{"type": "reject"}},
		"transports": map[string]any{"docker": map[string]any{scope: []any{req}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "policy.json", string(data))
}

// TestVerifyArchiveFulcioRekor: a keyless cosign signature (a Fulcio
// certificate, logged in Rekor) carried in an archive is verified offline
// with the Fulcio CA, the OIDC issuer and email, and Rekor's public key
// given as files; each of them wrong refuses it, as do a signature not
// logged in Rekor and a manifest other than the one signed.
func TestVerifyArchiveFulcioRekor(t *testing.T) {
	// The repository the fixture's payload names (no tag: cosign signs
	// the repository, so the policy's identity is matchRepository).
	const repo = "192.168.64.2:5000/cosign-signed/fulcio-rekor-1"
	const scope = "192.168.64.2:5000/cosign-signed"
	sig := readSigstoreSig(t, "fulcio-rekor/signature-1")
	signed := fixture(t, "fulcio-rekor/manifest.json")
	modified := fixture(t, "fulcio-rekor/modified-manifest.json")
	requirement := func(change func(req, fulcio map[string]any)) map[string]any {
		fulcio := map[string]any{
			"caPath":       fixturePath(t, "fulcio-rekor/fulcio_v1.crt.pem"),
			"oidcIssuer":   "https://github.com/login/oauth",
			"subjectEmail": "mitr@redhat.com",
		}
		req := map[string]any{
			"type":               "sigstoreSigned",
			"fulcio":             fulcio,
			"rekorPublicKeyPath": fixturePath(t, "fulcio-rekor/rekor.pub"),
			"signedIdentity":     map[string]any{"type": "matchRepository"},
		}
		if change != nil {
			change(req, fulcio)
		}
		return req
	}
	signedImage := func(l *testLayout) digest.Digest {
		d := l.rawManifest(signed, dockerV2, repo+":latest")
		l.attach(d, sig)
		return d
	}
	for _, tc := range []struct {
		name   string
		change func(req, fulcio map[string]any)
		build  func(l *testLayout) digest.Digest // the image's digest
		want   string                            // in the refusal; "" allowed
	}{
		{name: "signed", build: signedImage},
		{name: "another email", want: `Required email "someone@example.com" not found (got ["mitr@redhat.com"])`, build: signedImage,
			change: func(_, f map[string]any) { f["subjectEmail"] = "someone@example.com" }},
		{name: "another OIDC issuer", want: `Unexpected Fulcio OIDC issuer "https://github.com/login/oauth"`, build: signedImage,
			change: func(_, f map[string]any) { f["oidcIssuer"] = "https://oauth2.sigstore.dev/auth" }},
		{name: "another CA", want: "x509: certificate signed by unknown authority", build: signedImage,
			change: func(_, f map[string]any) { f["caPath"] = fixturePath(t, "fulcio-rekor/pki_root_crts.pem") }},
		{name: "another Rekor key", want: "cryptographic signature verification of Rekor SET failed", build: signedImage,
			change: func(req, _ map[string]any) { req["rekorPublicKeyPath"] = fixturePath(t, "fulcio-rekor/cosign.pub") }},
		{name: "the default identity: cosign names the repository only", want: `Signature for identity "` + repo + `" is not accepted`, build: signedImage,
			change: func(req, _ map[string]any) { delete(req, "signedIdentity") }},
		{name: "not logged in Rekor", want: "missing dev.sigstore.cosign/bundle annotation", build: func(l *testLayout) digest.Digest {
			d := l.rawManifest(signed, dockerV2, repo+":latest")
			l.attach(d, sig.without("dev.sigstore.cosign/bundle"))
			return d
		}},
		{name: "the signature moved to another manifest", want: "Signature for digest " + digest.FromBytes(signed).String() + " does not match", build: func(l *testLayout) digest.Digest {
			d := l.rawManifest(modified, dockerV2, repo+":latest")
			l.attach(d, sig)
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(writePolicy(t, scope, requirement(tc.change)), true, "")
			if err != nil {
				t.Fatal(err)
			}
			l := &testLayout{t: t, blobs: map[digest.Digest][]byte{}}
			d := tc.build(l)
			err = p.VerifyArchive(context.Background(), repo+":latest", d.String(), l.tar())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("VerifyArchive = %v, want allowed", err)
				}
				return
			}
			r := (*Refusal)(nil)
			if !errors.As(err, &r) || r.Scope != fmt.Sprintf("docker:%q", scope) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("VerifyArchive = %v, want a refusal in scope %s saying %q", err, scope, tc.want)
			}
			t.Log(err)
		})
	}
	// Fulcio without a Rekor key is no policy c/image accepts: podrun
	// refuses to load it.
	req := requirement(func(req, _ map[string]any) { delete(req, "rekorPublicKeyPath") })
	path := writePolicy(t, scope, req)
	if _, err := Load(path, true, ""); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "must be specified if fulcio is used") {
		t.Errorf("Load of Fulcio without Rekor = %v, want an error naming %s and the missing Rekor key", err, path)
	}
}

// TestVerifySignedByLookaside: a GPG simple signing signature (signedBy)
// is read from the lookaside registries.d names for the registry (a
// file:// directory) and verified with the key file the policy names;
// the registry (plain HTTP on 127.0.0.1, as an insecure one is read)
// serves the image under another name than the one signed, which
// remapIdentity maps.
func TestVerifySignedByLookaside(t *testing.T) {
	signedData, otherData := fixture(t, "simple-signing/manifest.json"), fixture(t, "fulcio-rekor/manifest.json")
	signed, other := digest.FromBytes(signedData), digest.FromBytes(otherData)
	manifests := map[digest.Digest][]byte{signed: signedData, other: otherData}
	srv := httptest.NewServer(manifestRegistry("testing/manifest", manifests))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	// The signature names testing/manifest:latest (docker.io/testing/manifest).
	remap := map[string]any{"type": "remapIdentity", "prefix": host + "/testing", "signedPrefix": "docker.io/testing"}
	for _, tc := range []struct {
		name     string
		key      string
		identity map[string]any // nil: the default, matchRepoDigestOrExact
		image    digest.Digest  // the manifest verified
		signed   bool           // the signature is in the lookaside for image
		want     string         // in the refusal; "" allowed
	}{
		{name: "signed", key: "public-key.gpg", identity: remap, image: signed, signed: true},
		{name: "signed by another key", key: "public-key-2.gpg", identity: remap, image: signed, signed: true, want: "Key not found for key ID e932f44b23e8dd43"},
		{name: "unsigned", key: "public-key.gpg", identity: remap, image: signed, want: "no signature exists"},
		{name: "signed for another name", key: "public-key.gpg", image: signed, signed: true, want: `Signature for identity "testing/manifest:latest" is not accepted`},
		{name: "the signature copied to another manifest", key: "public-key.gpg", identity: remap, image: other, signed: true, want: "Signature for digest " + signed.String() + " does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookaside := t.TempDir()
			if tc.signed {
				dir := filepath.Join(lookaside, "testing", "manifest@sha256="+tc.image.Encoded())
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, dir, "signature-1", string(fixture(t, "simple-signing/signature-1")))
			}
			registriesD := t.TempDir()
			writeFile(t, registriesD, "lookaside.yaml", fmt.Sprintf("docker:\n  %q:\n    lookaside: %q\n", host, "file://"+lookaside))
			req := map[string]any{"type": "signedBy", "keyType": "GPGKeys", "keyPath": fixturePath(t, "simple-signing/"+tc.key)}
			if tc.identity != nil {
				req["signedIdentity"] = tc.identity
			}
			p, err := Load(writePolicy(t, host+"/testing", req), true, registriesD)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Verify(context.Background(), host+"/testing/manifest:latest", tc.image.String(), true, registry.Credential{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Verify = %v, want allowed", err)
				}
				return
			}
			r := (*Refusal)(nil)
			if !errors.As(err, &r) || r.Scope != fmt.Sprintf("docker:%q", host+"/testing") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify = %v, want a refusal in scope %s/testing saying %q", err, host, tc.want)
			}
			t.Log(err)
		})
	}
}

// manifestRegistry answers the distribution API's manifest reads of repo
// by digest from manifests (docker v2 schema 2), as a registry over plain
// HTTP; anything else is not found.
func manifestRegistry(repo string, manifests map[digest.Digest][]byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		if r.URL.Path == "/v2/" {
			return
		}
		ref, ok := strings.CutPrefix(r.URL.Path, "/v2/"+repo+"/manifests/")
		data, found := manifests[digest.Digest(ref)]
		if !ok || !found || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", dockerV2)
		w.Header().Set("Docker-Content-Digest", ref)
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(data)
		}
	})
}
