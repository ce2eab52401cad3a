package trust

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// testLayout builds OCI layout archives (an image and, maybe, its sigstore
// attachment) in memory.
type testLayout struct {
	t     testing.TB
	blobs map[digest.Digest][]byte
	index []ocispec.Descriptor
}

func (l *testLayout) blob(data []byte) ocispec.Descriptor {
	d := digest.FromBytes(data)
	l.blobs[d] = data
	return ocispec.Descriptor{Digest: d, Size: int64(len(data))}
}

func (l *testLayout) manifest(m ocispec.Manifest, name string) digest.Digest {
	m.SchemaVersion, m.MediaType = 2, ocispec.MediaTypeImageManifest
	data, err := json.Marshal(m)
	if err != nil {
		l.t.Fatal(err)
	}
	desc := l.blob(data)
	desc.MediaType = ocispec.MediaTypeImageManifest
	desc.Annotations = map[string]string{ocispec.AnnotationRefName: name}
	l.index = append(l.index, desc)
	return desc.Digest
}

// image adds an image named name; its manifest's digest.
func (l *testLayout) image(name string) digest.Digest {
	cfg := l.blob([]byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`))
	cfg.MediaType = ocispec.MediaTypeImageConfig
	return l.manifest(ocispec.Manifest{Config: cfg, Layers: []ocispec.Descriptor{}}, name)
}

// sign adds the sigstore attachment of the manifest of digest of, signed
// by key, saying the image is ref at signed (cosign's payload).
func (l *testLayout) sign(of digest.Digest, key *ecdsa.PrivateKey, ref string, signed digest.Digest) {
	payload := fmt.Appendf(nil, `{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, ref, signed)
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		l.t.Fatal(err)
	}
	layer := l.blob(payload)
	layer.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	layer.Annotations = map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}
	cfg := l.blob([]byte(`{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}`))
	cfg.MediaType = ocispec.MediaTypeImageConfig
	l.manifest(ocispec.Manifest{Config: cfg, Layers: []ocispec.Descriptor{layer}}, "sha256-"+of.Encoded()+".sig")
}

// tar is the layout as an archive.
func (l *testLayout) tar() *io.SectionReader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	index, err := json.Marshal(ocispec.Index{Manifests: l.index})
	if err != nil {
		l.t.Fatal(err)
	}
	files := map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`), "index.json": index}
	for d, data := range l.blobs {
		files["blobs/sha256/"+d.Encoded()] = data
	}
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			l.t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			l.t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		l.t.Fatal(err)
	}
	return io.NewSectionReader(bytes.NewReader(buf.Bytes()), 0, int64(buf.Len()))
}

func newKey(t testing.TB) (*ecdsa.PrivateKey, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// TestVerifyArchive: c/image's policy evaluation on the signatures an
// archive carries, read from it through the loopback registry.
func TestVerifyArchive(t *testing.T) {
	const repo = "registry.example.com/team/app"
	const ref = repo + ":1"
	trusted, trustedPub := newKey(t)
	other, _ := newKey(t)
	dir := t.TempDir()
	pub := writeFile(t, dir, "trusted.pub", trustedPub)
	policy := writeFile(t, dir, "policy.json", `{"default":[{"type":"reject"}],"transports":{"docker":{
 "registry.example.com/team":[{"type":"sigstoreSigned","keyPath":"`+pub+`","signedIdentity":{"type":"matchRepoDigestOrExact"}}],
 "open.example.com":[{"type":"insecureAcceptAnything"}]}}}`)
	p, err := Load(policy, true, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		ref   string
		build func(l *testLayout) digest.Digest // the image's digest
		want  string                            // in the refusal; "" allowed
	}{
		{name: "signed", ref: ref, build: func(l *testLayout) digest.Digest {
			d := l.image(ref)
			l.sign(d, trusted, ref, d)
			return d
		}},
		{name: "signed, the layout naming tags only", ref: ref, build: func(l *testLayout) digest.Digest {
			d := l.image("1")
			l.sign(d, trusted, ref, d)
			return d
		}},
		{name: "unsigned", ref: ref, want: "no signature exists", build: func(l *testLayout) digest.Digest {
			return l.image(ref)
		}},
		{name: "signed by another key", ref: ref, want: "cryptographic signature verification failed", build: func(l *testLayout) digest.Digest {
			d := l.image(ref)
			l.sign(d, other, ref, d)
			return d
		}},
		{name: "the attachment of another digest", ref: ref, want: "does not match", build: func(l *testLayout) digest.Digest {
			d := l.image(ref)
			l.sign(d, trusted, ref, digest.FromString("another manifest"))
			return d
		}},
		{name: "signed for another repository", ref: ref, want: "not accepted", build: func(l *testLayout) digest.Digest {
			d := l.image(ref)
			l.sign(d, trusted, "registry.example.com/team/other:1", d)
			return d
		}},
		{name: "a scope that accepts anything reads nothing", ref: "open.example.com/app:1", build: func(l *testLayout) digest.Digest {
			l.blobs = nil // the archive is not even read
			return digest.FromString("anything")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &testLayout{t: t, blobs: map[digest.Digest][]byte{}}
			d := tc.build(l)
			archive := io.NewSectionReader(strings.NewReader("not a tar"), 0, 9)
			if l.blobs != nil {
				archive = l.tar()
			}
			err := p.VerifyArchive(context.Background(), tc.ref, d.String(), archive)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("VerifyArchive = %v, want allowed", err)
				}
				return
			}
			r := (*Refusal)(nil)
			if !errors.As(err, &r) || r.Scope != `docker:"registry.example.com/team"` || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("VerifyArchive = %v, want a refusal in scope registry.example.com/team saying %q", err, tc.want)
			}
		})
	}
}

// TestVerifyDockerArchive: a docker archive carries no signatures, and
// the refusal says so.
func TestVerifyDockerArchive(t *testing.T) {
	dir := t.TempDir()
	policy := writeFile(t, dir, "policy.json", `{"default":[{"type":"reject"}]}`)
	p, err := Load(policy, true, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "manifest.json", Typeflag: tar.TypeReg, Size: 2})
	_, _ = tw.Write([]byte("[]"))
	_ = tw.Close()
	err = p.VerifyArchive(context.Background(), "registry.example.com/app:1", digest.FromString("x").String(), io.NewSectionReader(bytes.NewReader(buf.Bytes()), 0, int64(buf.Len())))
	r := (*Refusal)(nil)
	if !errors.As(err, &r) || r.Scope != "default" || !strings.Contains(err.Error(), "docker archive carries no signatures") {
		t.Fatalf("VerifyArchive = %v, want a refusal saying a docker archive carries no signatures", err)
	}
}

// BenchmarkVerifyArchive: one verification of a signed archive (index the
// tar, serve it on loopback, c/image reads the image's manifest and its
// attachment, the policy checks the signature), without containerd.
func BenchmarkVerifyArchive(b *testing.B) {
	const ref = "registry.example.com/team/app:1"
	key, pubPEM := newKey(b)
	dir := b.TempDir()
	pub := writeFile(b, dir, "key.pub", pubPEM)
	p, err := Load(writeFile(b, dir, "policy.json", `{"default":[{"type":"sigstoreSigned","keyPath":"`+pub+`","signedIdentity":{"type":"matchRepoDigestOrExact"}}]}`), true, "")
	if err != nil {
		b.Fatal(err)
	}
	l := &testLayout{t: b, blobs: map[digest.Digest][]byte{}}
	d := l.image(ref)
	l.sign(d, key, ref, d)
	archive := l.tar()
	b.ResetTimer()
	for range b.N {
		if err := p.VerifyArchive(context.Background(), ref, d.String(), archive); err != nil {
			b.Fatal(err)
		}
	}
}
