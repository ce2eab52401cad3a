package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/manifest"
	"go.podman.io/image/v5/pkg/blobinfocache/none"
	"go.podman.io/image/v5/types"
)

// layout is an OCI image layout being written into a tar.
type layout struct {
	tw    *tar.Writer
	blobs map[digest.Digest]bool
	index []ocispec.Descriptor
}

// save writes docker://src, and its sigstore attachment if the registry
// has one, as an OCI layout archive at path; the image named src in it
// (org.opencontainers.image.ref.name), the attachment by its tag.
func save(ctx context.Context, src, path string) error {
	named, err := reference.ParseNormalizedNamed(src)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	l := &layout{tw: tar.NewWriter(f), blobs: map[digest.Digest]bool{}}
	d, err := l.add(ctx, named, named.String())
	if err != nil {
		return err
	}
	sig, err := reference.WithTag(reference.TrimNamed(named), "sha256-"+d.Encoded()+".sig")
	if err != nil {
		return err
	}
	switch _, err := l.add(ctx, sig, sig.Tag()); {
	case err == nil:
		fmt.Fprintf(os.Stderr, "saved %s@%s with its signatures\n", reference.TrimNamed(named), d)
	case errors.Is(err, errNoManifest):
		fmt.Fprintf(os.Stderr, "saved %s@%s without signatures (%v)\n", reference.TrimNamed(named), d, err)
	default:
		return err
	}
	if err := l.close(); err != nil {
		return err
	}
	return f.Close()
}

var errNoManifest = errors.New("no such manifest")

// add writes the manifest ref names, its config and layers, and lists it
// in index.json as name; its digest.
func (l *layout) add(ctx context.Context, ref reference.Named, name string) (digest.Digest, error) {
	dref, err := docker.NewReference(ref)
	if err != nil {
		return "", err
	}
	sys := &types.SystemContext{DockerInsecureSkipTLSVerify: types.OptionalBoolTrue}
	is, err := dref.NewImageSource(ctx, sys)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", ref, errNoManifest, err)
	}
	defer func() { _ = is.Close() }()
	data, mt, err := is.GetManifest(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", ref, errNoManifest, err)
	}
	m, err := manifest.FromBlob(data, mt)
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	for _, b := range append([]types.BlobInfo{m.ConfigInfo()}, blobInfos(m.LayerInfos())...) {
		rc, size, err := is.GetBlob(ctx, b, none.NoCache)
		if err != nil {
			return "", fmt.Errorf("%s: blob %s: %w", ref, b.Digest, err)
		}
		err = l.blob(b.Digest, size, rc)
		_ = rc.Close()
		if err != nil {
			return "", err
		}
	}
	d := digest.FromBytes(data)
	if err := l.blob(d, int64(len(data)), bytes.NewReader(data)); err != nil {
		return "", err
	}
	l.index = append(l.index, ocispec.Descriptor{MediaType: mt, Digest: d, Size: int64(len(data)),
		Annotations: map[string]string{ocispec.AnnotationRefName: name}})
	return d, nil
}

func blobInfos(layers []manifest.LayerInfo) []types.BlobInfo {
	var out []types.BlobInfo
	for _, l := range layers {
		out = append(out, l.BlobInfo)
	}
	return out
}

// blob writes blobs/ALG/HEX once.
func (l *layout) blob(d digest.Digest, size int64, r io.Reader) error {
	if l.blobs[d] {
		return nil
	}
	l.blobs[d] = true
	return l.file(ocispec.ImageBlobsDir+"/"+d.Algorithm().String()+"/"+d.Encoded(), size, r)
}

func (l *layout) file(name string, size int64, r io.Reader) error {
	if err := l.tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
		return err
	}
	_, err := io.Copy(l.tw, r)
	return err
}

// close writes oci-layout and index.json.
func (l *layout) close() error {
	index, err := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: l.index})
	if err != nil {
		return err
	}
	layoutFile := []byte(`{"imageLayoutVersion":"` + ocispec.ImageLayoutVersion + `"}`)
	if err := l.file(ocispec.ImageLayoutFile, int64(len(layoutFile)), bytes.NewReader(layoutFile)); err != nil {
		return err
	}
	if err := l.file("index.json", int64(len(index)), bytes.NewReader(index)); err != nil {
		return err
	}
	return l.tw.Close()
}
