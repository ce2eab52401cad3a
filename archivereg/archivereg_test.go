package archivereg

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// entry is one tar entry of a test archive.
type entry struct {
	name string
	typ  byte
	data string
}

func tarOf(t *testing.T, entries ...entry) *io.SectionReader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Size: int64(len(e.data))}
		if typ != tar.TypeReg {
			hdr.Size, hdr.Linkname = 0, "index.json"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.data); err != nil && typ == tar.TypeReg {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return io.NewSectionReader(bytes.NewReader(buf.Bytes()), 0, int64(buf.Len()))
}

func blobEntry(data string) entry {
	return entry{name: "blobs/sha256/" + digest.FromString(data).Encoded(), data: data}
}

func indexEntry(t *testing.T, descs ...ocispec.Descriptor) entry {
	t.Helper()
	data, err := json.Marshal(ocispec.Index{Manifests: descs})
	if err != nil {
		t.Fatal(err)
	}
	return entry{name: "index.json", data: string(data)}
}

func TestOpenRefuses(t *testing.T) {
	idx := entry{name: "index.json", data: `{"manifests": []}`}
	for _, tc := range []struct {
		name    string
		entries []entry
		want    string // in the error
	}{
		{"no index.json: a docker archive", []entry{{name: "manifest.json", data: "[]"}}, "docker archive"},
		{"climbs out", []entry{idx, {name: "blobs/../../etc/passwd", data: "x"}}, "not a relative path"},
		{"absolute", []entry{idx, {name: "/index.json", data: "{}"}}, "not a relative path"},
		{"a blob not named by a digest", []entry{idx, {name: "blobs/sha256/abc", data: "x"}}, "blobs/sha256/abc"},
		{"a blob too deep", []entry{idx, {name: "blobs/sha256/x/y", data: "x"}}, "not blobs/ALGORITHM/HEX"},
		{"index.json a symlink", []entry{{name: "index.json", typ: tar.TypeSymlink}}, "not a regular file"},
		{"a blob a hard link", []entry{idx, {name: "blobs/sha256/" + digest.FromString("x").Encoded(), typ: tar.TypeLink}}, "not a regular file"},
		{"index.json twice", []entry{idx, idx}, "twice"},
		{"a blob twice", []entry{idx, blobEntry("x"), blobEntry("x")}, "twice"},
		{"index.json too big", []entry{{name: "index.json", data: strings.Repeat(" ", MaxIndexSize+1)}}, "more than"},
		{"index.json not JSON", []entry{{name: "index.json", data: "{"}}, "index.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tarOf(t, tc.entries...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestOpenTwice: an archive read before is indexed from its start.
func TestOpenTwice(t *testing.T) {
	archive := tarOf(t, entry{name: "index.json", data: `{"manifests": []}`}, blobEntry("x"))
	for i := range 2 {
		l, err := Open(archive)
		if err != nil {
			t.Fatalf("Open #%d: %v", i+1, err)
		}
		if _, ok := l.Blob(digest.FromString("x")); !ok {
			t.Errorf("Open #%d: the blob is not found", i+1)
		}
	}
}

func TestOpenTooManyEntries(t *testing.T) {
	entries := make([]entry, MaxEntries+1)
	for i := range entries {
		entries[i] = entry{name: "x/", typ: tar.TypeDir}
	}
	if _, err := Open(tarOf(t, entries...)); err == nil || !strings.Contains(err.Error(), "entries") {
		t.Fatalf("Open of %d entries = %v, want refused", len(entries), err)
	}
}

func TestHandler(t *testing.T) {
	image := `{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json"}`
	sig := `{"schemaVersion": 2, "layers": []}`
	dockerManifest := `{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"}`
	layer := "layer bytes"
	imageD, sigD := digest.FromString(image), digest.FromString(sig)
	sigTag := "sha256-" + imageD.Encoded() + ".sig"
	l, err := Open(tarOf(t,
		entry{name: "./oci-layout", data: `{"imageLayoutVersion": "1.0.0"}`},
		entry{name: "./", typ: tar.TypeDir},
		entry{name: "manifest.json", data: "[]"},
		indexEntry(t,
			ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: imageD, Size: int64(len(image)), Annotations: map[string]string{ocispec.AnnotationRefName: "registry.example.com/app:1"}},
			ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: sigD, Size: int64(len(sig)), Annotations: map[string]string{ocispec.AnnotationRefName: sigTag}},
		),
		blobEntry(image), entry{name: "./" + blobEntry(sig).name, data: sig}, blobEntry(dockerManifest), blobEntry(layer),
	))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(l, "secret"))
	defer srv.Close()
	for _, tc := range []struct {
		method, path string
		status       int
		body, mt     string
	}{
		{"GET", "/v2/", 200, "{}", "application/json"},
		{"GET", "/v2/secret/app/manifests/" + sigTag, 200, sig, ocispec.MediaTypeImageManifest},
		{"GET", "/v2/secret/app/manifests/1", 200, image, ocispec.MediaTypeImageManifest},
		{"GET", "/v2/secret/team/app/manifests/" + imageD.String(), 200, image, ocispec.MediaTypeImageManifest},
		{"HEAD", "/v2/secret/app/manifests/" + imageD.String(), 200, "", ocispec.MediaTypeImageManifest},
		{"GET", "/v2/secret/app/manifests/" + digest.FromString(dockerManifest).String(), 200, dockerManifest, "application/vnd.docker.distribution.manifest.v2+json"},
		{"GET", "/v2/secret/app/manifests/sha256-" + sigD.Encoded() + ".sig", 404, `"MANIFEST_UNKNOWN"`, "application/json"},
		{"GET", "/v2/secret/app/manifests/" + digest.FromString("absent").String(), 404, `"MANIFEST_UNKNOWN"`, "application/json"},
		{"GET", "/v2/secret/app/manifests/..", 404, `"MANIFEST_UNKNOWN"`, "application/json"},
		{"GET", "/v2/secret/app/blobs/" + digest.FromString(layer).String(), 200, layer, "application/octet-stream"},
		{"GET", "/v2/secret/app/blobs/" + digest.FromString("absent").String(), 404, `"BLOB_UNKNOWN"`, "application/json"},
		{"GET", "/v2/secret/app/blobs/sha256:zz", 404, `"BLOB_UNKNOWN"`, "application/json"},
		{"GET", "/v2/app/manifests/1", 404, `"NAME_UNKNOWN"`, "application/json"},
		{"GET", "/v2/secretapp/blobs/" + digest.FromString(layer).String(), 404, `"NAME_UNKNOWN"`, "application/json"},
		{"GET", "/v2/other/secret/app/manifests/1", 404, `"NAME_UNKNOWN"`, "application/json"},
		{"GET", "/v2/secret/app/tags/list", 404, `"NAME_UNKNOWN"`, "application/json"},
		{"GET", "/index.json", 404, `"NAME_UNKNOWN"`, "application/json"},
		{"PUT", "/v2/secret/app/manifests/2", 405, `"UNSUPPORTED"`, "application/json"},
		{"DELETE", "/v2/secret/app/blobs/" + digest.FromString(layer).String(), 405, `"UNSUPPORTED"`, "application/json"},
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

func TestServeLoopback(t *testing.T) {
	l, err := Open(tarOf(t, entry{name: "index.json", data: `{"manifests": []}`}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Serve(l)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Errorf("serving on %s, not loopback", s.Addr())
	}
	if len(s.Prefix()) != 32 {
		t.Errorf("prefix %q: want 128 random bits", s.Prefix())
	}
	resp, err := http.Get("http://" + s.Addr() + "/v2/" + s.Prefix() + "/app/manifests/1")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an absent tag: %s", resp.Status)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + s.Addr() + "/v2/"); err == nil {
		t.Error("still serving after Close")
	}
}
