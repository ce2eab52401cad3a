// Package archivereg serves an image archive's OCI layout, or the blobs
// of a pulled image's signatures held in memory (Blobs), read-only as a
// registry (the distribution API's pull side) on 127.0.0.1, so that the
// signature policy reads the sigstore attachments the archive carries, or
// the pull fetched, through c/image's docker transport, as it reads them
// from a registry.
// The archive is untrusted: its tar entries are indexed once, within
// bounds, and only blobs/<alg>/<hex>, index.json and oci-layout are
// served, straight from the archive (no copy, no link followed).
package archivereg

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Bounds of what an archive's index may hold.
const (
	MaxEntries   = 100000  // tar entries
	MaxIndexSize = 4 << 20 // bytes of index.json
)

// ErrNoLayout: the archive has no index.json, it is not an OCI layout (a
// docker archive, which carries no signatures).
var ErrNoLayout = errors.New("not an OCI layout (no index.json): a docker archive carries no signatures")

// Layout is an OCI layout in an uncompressed tar.
type Layout struct {
	blobs map[digest.Digest]*io.SectionReader
	index ocispec.Index
}

// Open indexes the tar archive: each blob's place in it, and index.json parsed.
// A name that is not clean (.., absolute), a link or other special entry
// named as a layout file, a blob whose name is not a valid digest, a
// duplicate, too many entries or a too big index.json refuse the archive.
func Open(archive *io.SectionReader) (*Layout, error) {
	r := io.NewSectionReader(archive, 0, archive.Size()) // from its start, whatever read it before
	l := &Layout{blobs: map[digest.Digest]*io.SectionReader{}}
	var index *io.SectionReader
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the archive: %w", err)
		}
		if n >= MaxEntries {
			return nil, fmt.Errorf("the archive has more than %d entries", MaxEntries)
		}
		kind, dgst, err := classify(hdr.Name)
		if err != nil {
			return nil, err
		}
		if kind == other {
			continue
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("archive entry %q: not a regular file (type %q)", hdr.Name, hdr.Typeflag)
		}
		off, err := r.Seek(0, io.SeekCurrent) // tar.Reader reads no further than the header
		if err != nil {
			return nil, err
		}
		data := io.NewSectionReader(r, off, hdr.Size)
		switch kind {
		case indexFile:
			if index != nil {
				return nil, errors.New("the archive has index.json twice")
			}
			index = data
		case blob:
			if _, dup := l.blobs[dgst]; dup {
				return nil, fmt.Errorf("the archive has blob %s twice", dgst)
			}
			l.blobs[dgst] = data
		}
	}
	if index == nil {
		return nil, ErrNoLayout
	}
	if index.Size() > MaxIndexSize {
		return nil, fmt.Errorf("the archive's index.json is %d bytes, more than %d", index.Size(), MaxIndexSize)
	}
	if err := json.NewDecoder(index).Decode(&l.index); err != nil {
		return nil, fmt.Errorf("the archive's index.json: %w", err)
	}
	return l, nil
}

type entryKind int

const (
	other entryKind = iota
	indexFile
	blob
	layoutFile
)

// classify names a tar entry: a layout file (with "./" before it at most),
// other entries (manifest.json of a docker archive, directories), or an
// error when the name climbs out, is absolute or a blob's is no digest.
func classify(name string) (entryKind, digest.Digest, error) {
	n := strings.TrimPrefix(name, "./")
	if strings.HasPrefix(n, "/") || strings.Contains("/"+n+"/", "/../") {
		return other, "", fmt.Errorf("archive entry %q: not a relative path inside the archive", name)
	}
	switch {
	case n == "index.json":
		return indexFile, "", nil
	case n == ocispec.ImageLayoutFile:
		return layoutFile, "", nil
	case strings.HasPrefix(n, ocispec.ImageBlobsDir+"/") && !strings.HasSuffix(n, "/"):
		parts := strings.Split(n, "/")
		if len(parts) != 3 {
			return other, "", fmt.Errorf("archive entry %q: not blobs/ALGORITHM/HEX", name)
		}
		d := digest.NewDigestFromEncoded(digest.Algorithm(parts[1]), parts[2])
		if err := d.Validate(); err != nil {
			return other, "", fmt.Errorf("archive entry %q: %w", name, err)
		}
		return blob, d, nil
	}
	return other, "", nil
}

// Blob is the blob of digest d, or false.
func (l *Layout) Blob(d digest.Digest) (*io.SectionReader, bool) {
	b, ok := l.blobs[d]
	if !ok {
		return nil, false
	}
	return io.NewSectionReader(b, 0, b.Size()), true
}

// Tagged is the index.json entry tag names: its ref.name annotation is the
// tag, or a full name ending in ":"+tag.
func (l *Layout) Tagged(tag string) (ocispec.Descriptor, bool) {
	for _, m := range l.index.Manifests {
		name := m.Annotations[ocispec.AnnotationRefName]
		if name == tag || strings.HasSuffix(name, ":"+tag) {
			return m, true
		}
	}
	return ocispec.Descriptor{}, false
}

// MediaType is the media type of manifest d: its descriptor's in
// index.json, else the manifest's own mediaType field.
func (l *Layout) MediaType(d digest.Digest, data []byte) string {
	for _, m := range l.index.Manifests {
		if m.Digest == d && m.MediaType != "" {
			return m.MediaType
		}
	}
	return ownMediaType(data)
}

// ownMediaType is a manifest's own mediaType field.
func ownMediaType(data []byte) string {
	var v struct {
		MediaType string `json:"mediaType"`
	}
	if json.Unmarshal(data, &v) == nil {
		return v.MediaType
	}
	return ""
}
