package ctrd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/containerd/containerd/content"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/remotes"
	remotedocker "github.com/containerd/containerd/remotes/docker"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/podrun/podrun/engine"
)

// FetchAttachment reads image ref's manifest at dgst from the content store
// and fetches its sigstore attachment with the resolver a Pull with o uses
// (hosts.toml, credentials, the link's deadline and rate), into memory: the
// attachment manifest (at most engine.MaxAttachmentManifest bytes) and its
// layers (at most engine.MaxAttachmentLayers of engine.MaxAttachmentLayer
// bytes, engine.MaxAttachmentBytes together), each checked against its
// digest. Nothing is written to the store.
func (e *Engine) FetchAttachment(ctx context.Context, ref, dgst string, o engine.PullOptions) (engine.Attachment, error) {
	ctx = e.ns(ctx)
	ref, err := Normalize(ref)
	if err != nil {
		return engine.Attachment{}, err
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return engine.Attachment{}, fmt.Errorf("%w: %w", engine.ErrInvalidImageName, err)
	}
	d, err := digest.Parse(dgst)
	if err != nil {
		return engine.Attachment{}, fmt.Errorf("image digest %q: %w", dgst, err)
	}
	a := engine.Attachment{Tag: engine.AttachmentTag(dgst), Blobs: map[string]engine.Blob{}}
	cs := e.client.ContentStore()
	info, err := cs.Info(ctx, d)
	if err != nil {
		return engine.Attachment{}, fmt.Errorf("the image's manifest %s: %w", d, mapErr(err))
	}
	if info.Size > engine.MaxAttachmentManifest {
		return engine.Attachment{}, fmt.Errorf("the image's manifest %s is %d bytes, more than %d", d, info.Size, engine.MaxAttachmentManifest)
	}
	data, err := content.ReadBlob(ctx, cs, ocispec.Descriptor{Digest: d, Size: info.Size})
	if err != nil {
		return engine.Attachment{}, fmt.Errorf("the image's manifest %s: %w", d, mapErr(err))
	}
	a.Blobs[d.String()] = engine.Blob{Data: data}

	wrap := func(rt http.RoundTripper) http.RoundTripper { return rt }
	if o.Link != nil {
		p := o.Link.Watch(ctx)
		wrap = p.Transport
		defer p.Stop()
	}
	resolver := remotedocker.NewResolver(remotedocker.ResolverOptions{Hosts: registryHosts(ctx, o, wrap)})
	name, desc, err := resolver.Resolve(ctx, reference.TrimNamed(named).String()+":"+a.Tag)
	if errdefs.IsNotFound(err) {
		return a, nil
	}
	if err != nil {
		return engine.Attachment{}, fmt.Errorf("resolving the signature attachment %s: %w", a.Tag, classifyPull(err))
	}
	fetcher, err := resolver.Fetcher(ctx, name)
	if err != nil {
		return engine.Attachment{}, classifyPull(err)
	}
	data, err = fetchBounded(ctx, fetcher, desc, engine.MaxAttachmentManifest)
	if err != nil {
		return engine.Attachment{}, fmt.Errorf("the signature attachment %s: %w", a.Tag, err)
	}
	a.Manifest = desc.Digest.String()
	a.Blobs[a.Manifest] = engine.Blob{MediaType: desc.MediaType, Data: data}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return engine.Attachment{}, fmt.Errorf("the signature attachment %s: %w", a.Tag, err)
	}
	if err := checkLayers(m.Layers); err != nil {
		return engine.Attachment{}, fmt.Errorf("the signature attachment %s: %w", a.Tag, err)
	}
	for _, l := range m.Layers {
		data, err := fetchBounded(ctx, fetcher, l, engine.MaxAttachmentLayer)
		if err != nil {
			return engine.Attachment{}, fmt.Errorf("the signature attachment %s: %w", a.Tag, err)
		}
		a.Blobs[l.Digest.String()] = engine.Blob{MediaType: l.MediaType, Data: data}
	}
	return a, nil
}

// checkLayers bounds an attachment's layers before any is fetched: how
// many, and their declared sizes together (each is bounded by
// fetchBounded, and read to its declared size at most).
func checkLayers(layers []ocispec.Descriptor) error {
	if len(layers) > engine.MaxAttachmentLayers {
		return fmt.Errorf("%d layers, more than %d", len(layers), engine.MaxAttachmentLayers)
	}
	var total int64
	for _, l := range layers {
		if l.Size < 0 || l.Size > engine.MaxAttachmentLayer {
			return fmt.Errorf("layer %s is %d bytes, more than %d", l.Digest, l.Size, engine.MaxAttachmentLayer)
		}
		total += l.Size
	}
	if total > engine.MaxAttachmentBytes {
		return fmt.Errorf("layers of %d bytes together, more than %d", total, engine.MaxAttachmentBytes)
	}
	return nil
}

// fetchBounded reads the blob desc, at most limit bytes, and checks its
// digest.
func fetchBounded(ctx context.Context, f remotes.Fetcher, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	if desc.Size > limit || desc.Size < 0 {
		return nil, fmt.Errorf("blob %s is %d bytes, more than %d", desc.Digest, desc.Size, limit)
	}
	if err := desc.Digest.Validate(); err != nil {
		return nil, err
	}
	rc, err := f.Fetch(ctx, desc)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", desc.Digest, classifyPull(err))
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, desc.Size+1))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", desc.Digest, classifyPull(err))
	}
	if int64(len(data)) != desc.Size || desc.Digest.Algorithm().FromBytes(data) != desc.Digest {
		return nil, errors.New("blob " + desc.Digest.String() + ": content does not match its digest and size")
	}
	return data, nil
}
