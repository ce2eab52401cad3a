package archivereg

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
		layerD: {MediaType: "application/vnd.dev.cosign.simplesigning.v1+json", Data: []byte(layer)},
		forged: {Data: []byte("something else")},
	}, map[string]digest.Digest{sigTag: sigD, "forged": forged, "absent": digest.FromString("absent")})
	srv := httptest.NewServer(Handler(b, "secret"))
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		status       int
		body, mt     string
	}{
		{"GET", "/v2/secret/app/manifests/" + sigTag, 200, sig, ocispec.MediaTypeImageManifest},
		{"HEAD", "/v2/secret/app/manifests/" + sigTag, 200, "", ocispec.MediaTypeImageManifest},
		{"GET", "/v2/secret/app/manifests/" + imageD.String(), 200, image, "application/vnd.docker.distribution.manifest.v2+json"},
		{"GET", "/v2/secret/app/blobs/" + layerD.String(), 200, layer, "application/octet-stream"},
		{"GET", "/v2/secret/app/blobs/" + forged.String(), 404, `"BLOB_UNKNOWN"`, "application/json"},
		{"GET", "/v2/secret/app/manifests/forged", 404, `"MANIFEST_UNKNOWN"`, "application/json"},
		{"GET", "/v2/secret/app/manifests/absent", 404, `"MANIFEST_UNKNOWN"`, "application/json"},
		{"GET", "/v2/secret/app/manifests/latest", 404, `"MANIFEST_UNKNOWN"`, "application/json"},
		{"GET", "/v2/app/manifests/" + sigTag, 404, `"NAME_UNKNOWN"`, "application/json"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) || resp.Header.Get("Content-Type") != tc.mt {
				t.Errorf("%d %s %q, want %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.mt, tc.body)
			}
		})
	}
}
