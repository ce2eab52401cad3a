package images

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/archivereg"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/registry"
)

// fakeVerifier refuses the digests in refuse and records what it was asked.
type fakeVerifier struct {
	refuse map[string]bool
	asked  []string
	cred   registry.Credential
	insec  bool
	strict bool     // no scope accepts anything
	read   []string // what VerifyArchive read of each archive
}

// VerifyPulled fetches the signatures and records the attachment it was
// served (its tag's manifest and first layer), refusing the digests in
// refuse.
func (v *fakeVerifier) VerifyPulled(ctx context.Context, ref, digest string, insecure bool, cred registry.Credential, fetch func(context.Context) (archivereg.Source, error)) error {
	v.asked = append(v.asked, ref+" "+digest)
	v.cred, v.insec = cred, insecure
	src, err := fetch(ctx)
	if err != nil {
		return err
	}
	if desc, ok := src.Tagged(engine.AttachmentTag(digest)); ok {
		m, _ := src.Blob(desc.Digest)
		data, _ := io.ReadAll(m)
		var manifest ocispec.Manifest
		if err := json.Unmarshal(data, &manifest); err != nil {
			return err
		}
		for _, l := range manifest.Layers {
			b, ok := src.Blob(l.Digest)
			if !ok {
				return errors.New("layer not served")
			}
			layer, _ := io.ReadAll(b)
			v.read = append(v.read, string(layer))
		}
	}
	if v.refuse[digest] {
		return errors.New("no signature")
	}
	return nil
}

// AllowUnverified: a refused digest's scope asks for signatures, every
// other one's accepts anything, unless strict.
func (v *fakeVerifier) AllowUnverified(_ context.Context, ref, digest string) error {
	v.asked = append(v.asked, "unverified "+ref+" "+digest)
	if v.refuse[digest] || v.strict {
		return errors.New("archives are not verified")
	}
	return nil
}

// VerifyArchive refuses the digests in refuse, and reads archive whole.
func (v *fakeVerifier) VerifyArchive(_ context.Context, ref, digest string, archive *io.SectionReader) error {
	v.asked = append(v.asked, "archive "+ref+" "+digest)
	data, err := io.ReadAll(archive)
	if err != nil {
		return err
	}
	v.read = append(v.read, string(data))
	if v.refuse[digest] {
		return errors.New("no signature in the archive")
	}
	return nil
}

func TestPullVerified(t *testing.T) {
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const pinned = "registry.example.com/team/app@" + digest
	for _, tc := range []struct {
		name       string
		refuse     bool
		wantReason string
		wantRef    string
	}{
		{name: "allowed runs by digest", wantRef: pinned},
		{name: "refused", refuse: true, wantReason: ReasonSignatureValidationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := fake.New()
			fe.AddRemote(engine.Image{Ref: pullRef, Digest: digest})
			fe.AddRemote(engine.Image{Ref: pinned, Digest: digest})
			fe.AddAttachment(digest, attachment(digest, "the signature"))
			v := &fakeVerifier{refuse: map[string]bool{digest: tc.refuse}, strict: true}
			m := New(fe, Options{Verifier: v, Insecure: []string{"registry.example.com"}}, time.Now)
			img, err := m.EnsureGated(context.Background(), "uid", pullRef, corev1.PullIfNotPresent, nil)
			if got := []string{"unverified " + pullRef + " " + digest, pullRef + " " + digest}; !slices.Equal(v.asked, got) {
				t.Errorf("verifier asked %q, want %q", v.asked, got)
			}
			if !v.insec {
				t.Error("an --insecure-registry host is not verified over its insecure link")
			}
			if !slices.Contains(fe.Calls(), "FetchAttachment "+pullRef+" "+digest) || !slices.Equal(v.read, []string{"the signature"}) {
				t.Errorf("the signatures were not read through the engine: calls %q, read %q", fe.Calls(), v.read)
			}
			if tc.wantReason == "" {
				if err != nil || img.Ref != tc.wantRef {
					t.Fatalf("EnsureGated = %q, %v; want %q", img.Ref, err, tc.wantRef)
				}
				return
			}
			perr := (*PullError)(nil)
			if !errors.As(err, &perr) || perr.Reason != tc.wantReason || perr.Image != pullRef {
				t.Fatalf("EnsureGated error = %v; want a %s of %q", err, tc.wantReason, pullRef)
			}
			if _, err := fe.Image(context.Background(), pullRef); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("the refused image is still present (%v): a later IfNotPresent would run it", err)
			}
			if Retryable(err) {
				t.Error("a refusal is retried at once")
			}
			if _, err := m.EnsureGated(context.Background(), "uid", pullRef, corev1.PullIfNotPresent, nil); !errors.As(err, &perr) || perr.Reason != ReasonImagePullBackOff {
				t.Errorf("after a refusal: %v, want the image back-off", err)
			}
		})
	}
}

func TestImportVerified(t *testing.T) {
	imgs := []engine.Image{{Ref: "podrun.test/a:1", Digest: "sha256:a"}, {Ref: "podrun.test/b:1", Digest: "sha256:b"}}
	const content = "the archive's tar"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(content))
	_ = zw.Close()
	for _, tc := range []struct {
		name       string
		input      []byte
		file       bool // a regular file, not a pipe
		refuse     map[string]bool
		strict     bool // every scope asks for signatures
		wantErr    bool
		wantRead   []string // what VerifyArchive read
		wantPinned bool     // the images named by digest too
	}{
		{name: "scopes accept anything: nothing read", input: []byte(content), refuse: map[string]bool{}},
		{name: "one refused removes all", input: []byte(content), refuse: map[string]bool{"sha256:b": true}, wantErr: true, wantRead: []string{content}},
		{name: "verified: named by digest", input: []byte(content), strict: true, wantRead: []string{content, content}, wantPinned: true},
		{name: "a file, verified", input: []byte(content), file: true, strict: true, wantRead: []string{content, content}, wantPinned: true},
		{name: "a compressed file, read uncompressed", input: gz.Bytes(), file: true, strict: true, wantRead: []string{content, content}, wantPinned: true},
		{name: "a compressed pipe, read uncompressed", input: gz.Bytes(), strict: true, wantRead: []string{content, content}, wantPinned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := fake.New()
			var imported []byte
			fe.ImportFunc = func(r io.Reader) ([]engine.Image, error) {
				var err error
				imported, err = io.ReadAll(r)
				return imgs, err
			}
			v := &fakeVerifier{refuse: tc.refuse, strict: tc.strict}
			m := New(fe, Options{Verifier: v, ScratchDir: t.TempDir()}, time.Now)
			var r io.Reader = bytes.NewReader(tc.input)
			if tc.file {
				path := filepath.Join(t.TempDir(), "archive")
				if err := os.WriteFile(path, tc.input, 0o600); err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				r = f
			}
			_, err := m.Import(context.Background(), r)
			perr := (*PullError)(nil)
			if tc.wantErr != errors.As(err, &perr) || (tc.wantErr && (perr.Reason != ReasonSignatureValidationFailed || perr.Image != "podrun.test/b:1")) {
				t.Fatalf("Import = %v; want a refusal: %v", err, tc.wantErr)
			}
			want := content // a pipe is kept uncompressed, then imported
			if tc.file {
				want = string(tc.input) // a file is imported as it is
			}
			if string(imported) != want {
				t.Errorf("the engine imported %q, want %q", imported, want)
			}
			if !slices.Equal(v.read, tc.wantRead) {
				t.Errorf("VerifyArchive read %q, want %q", v.read, tc.wantRead)
			}
			for _, img := range imgs {
				if _, err := fe.Image(context.Background(), img.Ref); (err == nil) == tc.wantErr {
					t.Errorf("%s present: %v; want present: %v", img.Ref, err == nil, !tc.wantErr)
				}
				pinned, _ := byDigest(img)
				if _, err := fe.Image(context.Background(), pinned); (err == nil) != tc.wantPinned {
					t.Errorf("%s present: %v; want present: %v", pinned, err == nil, tc.wantPinned)
				}
			}
			if entries, _ := os.ReadDir(m.o.ScratchDir); len(entries) > 0 {
				t.Errorf("scratch files left: %v", entries)
			}
		})
	}
}

func TestPresentVerified(t *testing.T) {
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const pinned = "registry.example.com/team/app@" + digest
	for _, tc := range []struct {
		name       string
		refuse     bool // the scope asks for signatures
		pinned     bool // a verified pull left the image by digest
		policy     corev1.PullPolicy
		wantRef    string
		wantReason string
		wantPull   bool
	}{
		{name: "scope accepts anything: the tag as it is", policy: corev1.PullIfNotPresent, wantRef: fake.Normalize(pullRef)},
		{name: "verified before: by digest", refuse: true, pinned: true, policy: corev1.PullIfNotPresent, wantRef: pinned},
		{name: "never verified: pulled and verified", refuse: true, policy: corev1.PullIfNotPresent, wantReason: ReasonSignatureValidationFailed, wantPull: true},
		{name: "never verified, Never: refused", refuse: true, policy: corev1.PullNever, wantReason: ReasonSignatureValidationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := fake.New()
			fe.ImportFunc = func(io.Reader) ([]engine.Image, error) {
				imgs := []engine.Image{{Ref: pullRef, Digest: digest}}
				if tc.pinned {
					imgs = append(imgs, engine.Image{Ref: pinned, Digest: digest})
				}
				return imgs, nil
			}
			if _, err := fe.Import(context.Background(), strings.NewReader("")); err != nil {
				t.Fatal(err)
			}
			fe.AddRemote(engine.Image{Ref: pullRef, Digest: digest})
			v := &fakeVerifier{refuse: map[string]bool{digest: tc.refuse}}
			m := New(fe, Options{Verifier: v}, time.Now)
			img, err := m.Ensure(context.Background(), pullRef, tc.policy, nil)
			pulled := slices.ContainsFunc(v.asked, func(s string) bool { return !strings.HasPrefix(s, "unverified ") })
			if pulled != tc.wantPull {
				t.Errorf("verified by a pull: %v, want %v (asked %q)", pulled, tc.wantPull, v.asked)
			}
			if tc.wantReason != "" {
				perr := (*PullError)(nil)
				if !errors.As(err, &perr) || perr.Reason != tc.wantReason {
					t.Fatalf("Ensure = %q, %v; want %s", img.Ref, err, tc.wantReason)
				}
				return
			}
			if err != nil || img.Ref != tc.wantRef {
				t.Fatalf("Ensure = %q, %v; want %q", img.Ref, err, tc.wantRef)
			}
		})
	}
}

// TestPullUnverifiedScope: where the scope accepts anything (Debian's
// default policy), a pull is as without a policy: no verification, no
// image by digest.
func TestPullUnverifiedScope(t *testing.T) {
	fe := fake.New()
	fe.AddRemote(engine.Image{Ref: pullRef, Digest: "sha256:1"})
	v := &fakeVerifier{}
	m := New(fe, Options{Verifier: v}, time.Now)
	img, err := m.Ensure(context.Background(), pullRef, corev1.PullAlways, nil)
	if err != nil || img.Ref != fake.Normalize(pullRef) {
		t.Fatalf("Ensure = %q, %v; want %q", img.Ref, err, pullRef)
	}
	if want := []string{"unverified " + pullRef + " sha256:1"}; !slices.Equal(v.asked, want) {
		t.Errorf("verifier asked %q, want %q", v.asked, want)
	}
}

// attachment is a sigstore attachment of the manifest at digest with one
// layer, payload, as the engine fetches it.
func attachment(digest, payload string) engine.Attachment {
	layer := godigest.FromString(payload)
	manifest := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"layers":[{"mediaType":"application/vnd.dev.cosign.simplesigning.v1+json","digest":%q,"size":%d}]}`, ocispec.MediaTypeImageManifest, layer, len(payload))
	md := godigest.FromString(manifest)
	return engine.Attachment{Tag: engine.AttachmentTag(digest), Manifest: md.String(), Blobs: map[string]engine.Blob{
		md.String():    {MediaType: ocispec.MediaTypeImageManifest, Data: []byte(manifest)},
		layer.String(): {Data: []byte(payload)},
	}}
}
