// The fake's images: Image, Pull, FetchAttachment, Import, Images, Tag, ImageFS, RemoveImage.

package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/registry"
)

// Image returns a local image.
func (e *Engine) Image(ctx context.Context, ref string) (engine.Image, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Image", ref); err != nil {
		return engine.Image{}, err
	}
	img, ok := e.images[Normalize(ref)]
	if !ok {
		return engine.Image{}, notFound("image", ref)
	}
	img.Size = 0 // set by Images only
	return img, nil
}

// Pull copies an image added with AddRemote into the local store. An image
// added with RequireAuth is refused (ErrUnauthorized) unless o.Auth answers
// its registry's host with the right credentials. A reference that does not
// parse fails with ErrInvalidImageName.
func (e *Engine) Pull(ctx context.Context, ref string, o engine.PullOptions) (engine.Image, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Pull", ref); err != nil {
		return engine.Image{}, err
	}
	domain, err := registry.Domain(ref)
	if err != nil {
		return engine.Image{}, fmt.Errorf("%w: %w", engine.ErrInvalidImageName, err)
	}
	img, ok := e.remote[Normalize(ref)]
	if !ok {
		return engine.Image{}, fmt.Errorf("pulling %q: %w", ref, engine.ErrNotFound)
	}
	if want, ok := e.auth[img.Ref]; ok {
		var got [2]string
		if o.Auth != nil {
			got[0], got[1] = o.Auth(registry.APIHost(domain))
		}
		if got != want {
			return engine.Image{}, fmt.Errorf("pulling %q: 401 Unauthorized: %w", ref, engine.ErrUnauthorized)
		}
	}
	if o.Progress != nil {
		o.Progress(engine.PullProgress{Done: img.Size / 2, Total: img.Size, Layers: 1, Layer: "0123456789ab"})
		o.Progress(engine.PullProgress{Done: img.Size, Total: img.Size, Layers: 1, LayersDone: 1})
	}
	e.images[img.Ref] = img
	img.Size = 0
	return img, nil
}

// Import adds the images ImportFunc finds in r.
func (e *Engine) Import(ctx context.Context, r io.Reader) ([]engine.Image, error) {
	e.mu.Lock()
	err := e.begin(ctx, "Import")
	fn := e.ImportFunc
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, errors.New("fake: Import needs ImportFunc")
	}
	imgs, err := fn(r)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]engine.Image, 0, len(imgs))
	for _, img := range imgs {
		img.Ref = Normalize(img.Ref)
		e.images[img.Ref] = img
		img.Size = 0
		out = append(out, img)
	}
	return out, nil
}

// Images lists the local images by reference.
func (e *Engine) Images(ctx context.Context) ([]engine.Image, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Images"); err != nil {
		return nil, err
	}
	out := slices.Collect(maps.Values(e.images))
	slices.SortFunc(out, func(a, b engine.Image) int { return strings.Compare(a.Ref, b.Ref) })
	return out, nil
}

// Tag names the local image ref also name.
func (e *Engine) Tag(ctx context.Context, ref, name string) (engine.Image, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "Tag", ref, name); err != nil {
		return engine.Image{}, err
	}
	img, ok := e.images[Normalize(ref)]
	if !ok {
		return engine.Image{}, notFound("image", ref)
	}
	img.Ref = Normalize(name)
	e.images[img.Ref] = img
	img.Size = 0
	return img, nil
}

// ImageFS is the test machine's temp dir.
func (e *Engine) ImageFS(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "ImageFS"); err != nil {
		return "", err
	}
	return os.TempDir(), nil
}

// RemoveImage removes a local image; a missing one is no error.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "RemoveImage", ref); err != nil {
		return err
	}
	delete(e.images, Normalize(ref))
	return nil
}

// Normalize completes a reference the way the runtime does for the common
// cases: busybox -> docker.io/library/busybox:latest, a tag added unless
// there is a tag or digest.
func Normalize(ref string) string {
	if ref == "" {
		return ""
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", name
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	last := rest[strings.LastIndex(rest, "/")+1:]
	if !strings.Contains(last, ":") && !hasDigest {
		rest += ":latest"
	}
	out := domain + "/" + rest
	if hasDigest {
		out += "@" + digest
	}
	return out
}

// FetchAttachment returns what AddAttachment gave for digest; else no
// attachment (and no blobs).
func (e *Engine) FetchAttachment(ctx context.Context, ref, digest string, _ engine.PullOptions) (engine.Attachment, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.begin(ctx, "FetchAttachment", ref, digest); err != nil {
		return engine.Attachment{}, err
	}
	if a, ok := e.attach[digest]; ok {
		return a, nil
	}
	return engine.Attachment{Tag: engine.AttachmentTag(digest), Blobs: map[string]engine.Blob{}}, nil
}
