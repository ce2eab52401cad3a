package archivereg

import (
	"io"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestBlobs(t *testing.T) {
	image := `{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"}`
	sig := `{"schemaVersion": 2, "layers": []}`
	layer := "signature payload"
	imageD, sigD, layerD := digest.FromString(image), digest.FromString(sig), digest.FromString(layer)
	forged := digest.FromString("what the registry should have sent")
	sigTag := "sha256-" + imageD.Encoded() + ".sig"
	b := NewBlobs(map[digest.Digest]Blob{
		imageD: {Data: []byte(image)},
		sigD:   {MediaType: ocispec.MediaTypeImageManifest, Data: []byte(sig)},
		layerD: {Data: []byte(layer)},
		forged: {Data: []byte("something else")},
	}, map[string]digest.Digest{sigTag: sigD, "forged": forged, "absent": digest.FromString("absent")})
	for _, tc := range []struct {
		name      string
		tag       string        // looked up when set, else blob
		blob      digest.Digest // read
		want      string        // its content; "" absent
		mediaType string        // of the manifest
	}{
		{name: "the attachment by its tag", tag: sigTag, want: sig, mediaType: ocispec.MediaTypeImageManifest},
		{name: "the image's manifest by digest", blob: imageD, want: image, mediaType: "application/vnd.docker.distribution.manifest.v2+json"},
		{name: "a layer", blob: layerD, want: layer},
		{name: "a blob that does not match its digest", blob: forged},
		{name: "a tag naming such a blob", tag: "forged"},
		{name: "a tag naming an absent blob", tag: "absent"},
		{name: "an unknown tag", tag: "latest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.blob
			if tc.tag != "" {
				desc, ok := b.Tagged(tc.tag)
				if !ok {
					if tc.want != "" {
						t.Fatalf("Tagged(%q): none", tc.tag)
					}
					return
				}
				if desc.Size != int64(len(tc.want)) || desc.MediaType != tc.mediaType {
					t.Errorf("Tagged(%q) = %+v", tc.tag, desc)
				}
				d = desc.Digest
			}
			r, ok := b.Blob(d)
			if !ok {
				if tc.want != "" {
					t.Fatalf("Blob(%s): none", d)
				}
				return
			}
			data, err := io.ReadAll(r)
			if err != nil || string(data) != tc.want || tc.want == "" {
				t.Fatalf("Blob(%s) = %q, %v; want %q", d, data, err, tc.want)
			}
			if tc.mediaType != "" {
				if mt := b.MediaType(d, data); mt != tc.mediaType {
					t.Errorf("MediaType(%s) = %q, want %q", d, mt, tc.mediaType)
				}
			}
		})
	}
}
