package archivereg

import (
	"bytes"
	"io"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Blobs is a Source held in memory: a pulled image's manifest and its
// sigstore attachment, as the pull's way fetched them.
type Blobs struct {
	blobs map[digest.Digest]Blob
	tags  map[string]digest.Digest
}

// Blob is a blob of Blobs.
type Blob struct {
	MediaType string // "" for the manifest's own mediaType field
	Data      []byte
}

// NewBlobs holds blobs (by digest; a blob whose content does not match
// its digest is not served) and the manifest tags name.
func NewBlobs(blobs map[digest.Digest]Blob, tags map[string]digest.Digest) *Blobs {
	b := &Blobs{blobs: map[digest.Digest]Blob{}, tags: tags}
	for d, blob := range blobs {
		if d.Validate() == nil && d.Algorithm().FromBytes(blob.Data) == d {
			b.blobs[d] = blob
		}
	}
	return b
}

// Blob is the blob of digest d, or false.
func (b *Blobs) Blob(d digest.Digest) (*io.SectionReader, bool) {
	blob, ok := b.blobs[d]
	if !ok {
		return nil, false
	}
	return io.NewSectionReader(bytes.NewReader(blob.Data), 0, int64(len(blob.Data))), true
}

// Tagged is the manifest tag names, or false.
func (b *Blobs) Tagged(tag string) (ocispec.Descriptor, bool) {
	d, ok := b.tags[tag]
	if !ok {
		return ocispec.Descriptor{}, false
	}
	blob, ok := b.blobs[d]
	if !ok {
		return ocispec.Descriptor{}, false
	}
	return ocispec.Descriptor{MediaType: b.MediaType(d, blob.Data), Digest: d, Size: int64(len(blob.Data))}, true
}

// MediaType is manifest d's media type as it was fetched, else its own
// mediaType field.
func (b *Blobs) MediaType(d digest.Digest, data []byte) string {
	if mt := b.blobs[d].MediaType; mt != "" {
		return mt
	}
	return ownMediaType(data)
}
