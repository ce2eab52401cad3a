// Images: Image, Import, Images, Tag, ImageFS, RemoveImage (pulls are in pull.go).

package ctrd

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/archive/compression"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/platforms"
	"github.com/distribution/reference"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/spec"
)

// Image returns a local image, unpacking it first if needed.
func (e *Engine) Image(ctx context.Context, ref string) (engine.Image, error) {
	ctx = e.ns(ctx)
	ref, err := Normalize(ref)
	if err != nil {
		return engine.Image{}, err
	}
	img, err := e.client.GetImage(ctx, ref)
	if err != nil {
		return engine.Image{}, mapErr(err)
	}
	return e.describe(ctx, img)
}

func (e *Engine) describe(ctx context.Context, img containerd.Image) (engine.Image, error) {
	unpacked, err := img.IsUnpacked(ctx, snapshotter)
	if err != nil {
		return engine.Image{}, fmt.Errorf("checking unpacked layers of %q: %w", img.Name(), err)
	}
	if !unpacked {
		if err := img.Unpack(ctx, snapshotter); err != nil {
			return engine.Image{}, fmt.Errorf("unpacking %q: %w", img.Name(), err)
		}
	}
	oci, err := img.Spec(ctx)
	if err != nil {
		return engine.Image{}, fmt.Errorf("reading config of %q: %w", img.Name(), err)
	}
	c := oci.Config
	return engine.Image{
		Ref:    img.Name(),
		Digest: img.Target().Digest.String(),
		Config: spec.Image{
			Ref:        img.Name(),
			Entrypoint: c.Entrypoint,
			Cmd:        c.Cmd,
			Env:        c.Env,
			WorkingDir: c.WorkingDir,
			User:       c.User,
			StopSignal: c.StopSignal,
		},
	}, nil
}

// Import loads an OCI or docker archive, plain or compressed (gzip, zstd:
// containerd's own detection).
func (e *Engine) Import(ctx context.Context, r io.Reader) ([]engine.Image, error) {
	ctx = e.ns(ctx)
	if e.importLock != nil {
		unlock, err := e.importLock(ctx)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	dr, err := compression.DecompressStream(r)
	if err != nil {
		return nil, err
	}
	defer dr.Close()
	imgs, err := e.client.Import(ctx, dr,
		containerd.WithImportPlatform(platforms.Default()),
		containerd.WithSkipDigestRef(func(name string) bool { return name != "" }))
	if err != nil {
		return nil, err
	}
	var out []engine.Image
	for _, i := range imgs {
		if isAttachment(i.Name) {
			// Signatures beside an image (read by the signature policy
			// from the archive itself), not an image: no record left.
			if err := e.client.ImageService().Delete(ctx, i.Name); err != nil && !errdefs.IsNotFound(err) {
				return nil, err
			}
			continue
		}
		d, err := e.describe(ctx, containerd.NewImageWithPlatform(e.client, i, platforms.Default()))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// attachmentTag is the tag of a sigstore attachment of the manifest of
// digest sha256:HEX (cosign's and c/image's naming).
var attachmentTag = regexp.MustCompile(`^sha256-[0-9a-f]{64}\.(sig|att|sbom)$`)

// isAttachment reports whether an imported name (a full reference or the
// bare tag an OCI layout's ref.name may be) is a sigstore attachment's.
func isAttachment(name string) bool {
	tag := name[strings.LastIndexAny(name, ":/")+1:]
	return attachmentTag.MatchString(tag)
}

// Tag names the local image ref also name.
func (e *Engine) Tag(ctx context.Context, ref, name string) (engine.Image, error) {
	ctx = e.ns(ctx)
	ref, err := Normalize(ref)
	if err != nil {
		return engine.Image{}, err
	}
	if name, err = Normalize(name); err != nil {
		return engine.Image{}, err
	}
	is := e.client.ImageService()
	img, err := is.Get(ctx, ref)
	if err != nil {
		return engine.Image{}, mapErr(err)
	}
	img.Name = name
	if _, err := is.Create(ctx, img); errdefs.IsAlreadyExists(err) {
		_, err = is.Update(ctx, img, "target")
		if err != nil {
			return engine.Image{}, err
		}
	} else if err != nil {
		return engine.Image{}, err
	}
	return e.describe(ctx, containerd.NewImageWithPlatform(e.client, img, platforms.Default()))
}

// Images lists the local images.
func (e *Engine) Images(ctx context.Context) ([]engine.Image, error) {
	ctx = e.ns(ctx)
	imgs, err := e.client.ImageService().List(ctx)
	if err != nil {
		return nil, err
	}
	var out []engine.Image
	for _, i := range imgs {
		img := containerd.NewImageWithPlatform(e.client, i, platforms.Default())
		size, err := img.Size(ctx)
		if err != nil {
			size = -1 // content missing for this platform: still list it
		}
		out = append(out, engine.Image{Ref: i.Name, Digest: i.Target.Digest.String(), Size: size, CreatedAt: i.CreatedAt})
	}
	return out, nil
}

// ImageFS is the snapshotter's root, as containerd's introspection reports
// it (what the CRI's ImageFsInfo measures).
func (e *Engine) ImageFS(ctx context.Context) (string, error) {
	// One filter: its comma-separated terms must all match.
	resp, err := e.client.IntrospectionService().Plugins(ctx, []string{fmt.Sprintf(`type=="io.containerd.snapshotter.v1",id==%q`, snapshotter)})
	if err != nil {
		return "", err
	}
	for _, p := range resp.Plugins {
		if root := p.Exports["root"]; root != "" {
			return root, nil
		}
	}
	return "", fmt.Errorf("containerd reports no root for the %s snapshotter", snapshotter)
}

// RemoveImage deletes an image record and waits for containerd's garbage
// collector to free what only it used.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	ctx = e.ns(ctx)
	err := e.client.ImageService().Delete(ctx, ref, images.SynchronousDelete())
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// Normalize turns a reference into its full Docker form
// (busybox -> docker.io/library/busybox:latest).
func Normalize(ref string) (string, error) {
	n, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", engine.ErrInvalidImageName, ref, err)
	}
	return n.String(), nil
}
