// Package testimage builds small OCI image archives offline from the host's
// static busybox, for tests and demos that have no registry to pull from.
//
// The archive is an OCI image layout in a tar stream (oci-layout, index.json,
// blobs/sha256/...), the format `ctr images import` and containerd's
// Client.Import accept. Building it needs no root and no daemon, and the output
// is deterministic: the same Config and busybox binary give the same digests.
package testimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "crypto/sha256" // registers sha256 for go-digest
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// DefaultBusybox is the static busybox used when Config.Busybox is empty.
const DefaultBusybox = "/bin/busybox"

// DefaultEnv is the image environment used when Config.Env is nil.
var DefaultEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// AnnotationImageName is containerd's annotation for the full image name in index.json.
const AnnotationImageName = "io.containerd.image.name"

// epoch is the fixed modification time of every tar entry and the image's
// creation time, so that archives are reproducible.
var epoch = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC)

// File is an extra file placed in the image's layer.
type File struct {
	Path       string      // absolute path inside the image, e.g. "/var/www/index.html"
	Mode       os.FileMode // permission bits (plus os.ModeDir for a directory); 0 means 0644 (0755 for a directory)
	Data       []byte      // file content
	LinkTarget string      // when set, the entry is a symlink to LinkTarget and Data is ignored
}

// Config describes the image to build.
type Config struct {
	Ref          string   // image name, e.g. "podrun.test/busybox:1"; normalized ("busybox" -> "docker.io/library/busybox:latest")
	Busybox      string   // path of a static busybox; "" = /bin/busybox
	Files        []File   // extra files (e.g. a test program, an index.html); they replace default entries at the same path
	Entrypoint   []string // image entrypoint
	Cmd          []string // image command; when Entrypoint and Cmd are both empty, Cmd is ["sh"] as in Docker Hub's busybox
	Env          []string // nil = DefaultEnv
	User         string
	WorkingDir   string
	StopSignal   string
	ExposedPorts []string // e.g. "80/tcp"
}

// WriteOCIArchive writes an OCI image layout tar (oci-layout, index.json with the
// org.opencontainers.image.ref.name and io.containerd.image.name annotations,
// blobs/sha256/...) holding one gzip layer with /bin/busybox, a symlink for
// every applet, /etc/passwd (root, nobody 65534), /etc/group, /tmp (1777),
// /root, /var/www and cfg.Files.
func WriteOCIArchive(w io.Writer, cfg Config) error {
	name, tag, err := normalizeRef(cfg.Ref)
	if err != nil {
		return err
	}
	entries, err := layerEntries(cfg)
	if err != nil {
		return err
	}
	layerTar, err := writeTar(entries)
	if err != nil {
		return fmt.Errorf("writing layer: %w", err)
	}
	layerGz, err := gzipBytes(layerTar)
	if err != nil {
		return fmt.Errorf("compressing layer: %w", err)
	}

	layerDesc := descriptor(ocispec.MediaTypeImageLayerGzip, layerGz)
	configBlob, err := json.Marshal(imageConfig(cfg, digest.FromBytes(layerTar)))
	if err != nil {
		return fmt.Errorf("encoding image config: %w", err)
	}
	configDesc := descriptor(ocispec.MediaTypeImageConfig, configBlob)

	manifestBlob, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return fmt.Errorf("encoding manifest: %w", err)
	}
	manifestDesc := descriptor(ocispec.MediaTypeImageManifest, manifestBlob)
	manifestDesc.Platform = &ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	manifestDesc.Annotations = map[string]string{
		ocispec.AnnotationRefName: tag,
		AnnotationImageName:       name,
	}

	indexBlob, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return fmt.Errorf("encoding index: %w", err)
	}
	layoutBlob, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return fmt.Errorf("encoding oci-layout: %w", err)
	}

	outer := []entry{
		{hdr: dirHeader("blobs", 0o755)},
		{hdr: dirHeader("blobs/sha256", 0o755)},
	}
	for _, b := range [][]byte{layerGz, configBlob, manifestBlob} {
		outer = append(outer, regular("blobs/sha256/"+digest.FromBytes(b).Encoded(), 0o644, b))
	}
	outer = append(outer,
		regular(ocispec.ImageLayoutFile, 0o644, layoutBlob),
		regular(ocispec.ImageIndexFile, 0o644, indexBlob),
	)
	tw := tar.NewWriter(w)
	for _, e := range outer {
		if err := writeEntry(tw, e); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("closing archive: %w", err)
	}
	return nil
}

// normalizeRef returns the full docker reference of ref (with a tag, "latest"
// when none is given) and the tag alone, which OCI's ref.name annotation holds.
func normalizeRef(ref string) (name, tag string, err error) {
	if ref == "" {
		return "", "", errors.New("image reference is empty")
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", "", fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return "", "", fmt.Errorf("image reference %q: a digest cannot name an image being built", ref)
	}
	tagged, ok := reference.TagNameOnly(named).(reference.Tagged)
	if !ok {
		return "", "", fmt.Errorf("image reference %q has no tag", ref)
	}
	return tagged.String(), tagged.Tag(), nil
}

func descriptor(mediaType string, blob []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
}

func imageConfig(cfg Config, diffID digest.Digest) ocispec.Image {
	env := cfg.Env
	if env == nil {
		env = DefaultEnv
	}
	cmd := cfg.Cmd
	if len(cfg.Entrypoint) == 0 && len(cmd) == 0 {
		cmd = []string{"sh"}
	}
	var ports map[string]struct{}
	if len(cfg.ExposedPorts) > 0 {
		ports = make(map[string]struct{}, len(cfg.ExposedPorts))
		for _, p := range cfg.ExposedPorts {
			ports[p] = struct{}{}
		}
	}
	created := epoch
	return ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Config: ocispec.ImageConfig{
			User:         cfg.User,
			ExposedPorts: ports,
			Env:          env,
			Entrypoint:   cfg.Entrypoint,
			Cmd:          cmd,
			WorkingDir:   cfg.WorkingDir,
			StopSignal:   cfg.StopSignal,
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		History: []ocispec.History{{
			Created:   &created,
			CreatedBy: "podrun testimage",
		}},
	}
}

// entry is one tar entry: a header and, for regular files, its content.
type entry struct {
	hdr  *tar.Header
	data []byte
}

const (
	passwd = "root:x:0:0:root:/root:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n"
)

// layerEntries returns the layer's entries sorted by path, parent directories included.
func layerEntries(cfg Config) ([]entry, error) {
	bbPath := cfg.Busybox
	if bbPath == "" {
		bbPath = DefaultBusybox
	}
	bb, err := os.ReadFile(bbPath)
	if err != nil {
		return nil, fmt.Errorf("reading busybox: %w", err)
	}
	applets, err := listApplets(bbPath)
	if err != nil {
		return nil, err
	}

	byPath := map[string]entry{}
	add := func(e entry) { byPath[strings.TrimSuffix(e.hdr.Name, "/")] = e }

	add(regular("bin/busybox", 0o755, bb))
	for _, a := range applets {
		if a == "bin/busybox" {
			continue
		}
		add(symlink(a, "/bin/busybox"))
	}
	add(regular("etc/passwd", 0o644, []byte(passwd)))
	add(regular("etc/group", 0o644, []byte(group)))
	add(entry{hdr: dirHeader("tmp", 0o1777)})
	add(entry{hdr: dirHeader("root", 0o700)})
	add(entry{hdr: dirHeader("var/www", 0o755)})

	for _, f := range cfg.Files {
		e, err := fileEntry(f)
		if err != nil {
			return nil, err
		}
		add(e)
	}

	// Every parent directory gets an entry of its own.
	for name := range byPath {
		for dir := path.Dir(name); dir != "." && dir != "/"; dir = path.Dir(dir) {
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = entry{hdr: dirHeader(dir, 0o755)}
			}
		}
	}
	for name, e := range byPath {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if byPath[dir].hdr.Typeflag != tar.TypeDir {
				return nil, fmt.Errorf("image file %q: parent %q is not a directory", "/"+e.hdr.Name, "/"+dir)
			}
		}
	}

	names := make([]string, 0, len(byPath))
	for name := range byPath {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]entry, 0, len(names))
	for _, name := range names {
		out = append(out, byPath[name])
	}
	return out, nil
}

// listApplets runs `busybox --list-full`, which prints paths such as usr/bin/wget.
func listApplets(bbPath string) ([]string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(bbPath, "--list-full")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing busybox applets (%s --list-full): %w: %s", bbPath, err, strings.TrimSpace(stderr.String()))
	}
	var applets []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		p, err := cleanPath(line)
		if err != nil {
			return nil, fmt.Errorf("busybox applet: %w", err)
		}
		applets = append(applets, p)
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s --list-full printed no applets", bbPath)
	}
	return applets, nil
}

// cleanPath turns an image path ("/usr/bin/x" or "usr/bin/x") into a tar entry name ("usr/bin/x").
func cleanPath(p string) (string, error) {
	c := strings.TrimPrefix(path.Clean("/"+p), "/")
	if c == "" || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") {
		return "", fmt.Errorf("invalid path %q", p)
	}
	return c, nil
}

func fileEntry(f File) (entry, error) {
	name, err := cleanPath(f.Path)
	if err != nil {
		return entry{}, fmt.Errorf("image file: %w", err)
	}
	switch {
	case f.LinkTarget != "":
		return symlink(name, f.LinkTarget), nil
	case f.Mode.IsDir():
		mode := tarMode(f.Mode)
		if mode == 0 {
			mode = 0o755
		}
		return entry{hdr: dirHeader(name, mode)}, nil
	case f.Mode.Type() != 0:
		return entry{}, fmt.Errorf("image file %q: unsupported file type %v", f.Path, f.Mode.Type())
	default:
		mode := tarMode(f.Mode)
		if mode == 0 {
			mode = 0o644
		}
		return regular(name, mode, f.Data), nil
	}
}

// tarMode converts permission and setuid/setgid/sticky bits to tar's numeric mode.
func tarMode(m os.FileMode) int64 {
	mode := int64(m.Perm())
	if m&os.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

func dirHeader(name string, mode int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: epoch, Format: tar.FormatPAX}
}

func regular(name string, mode int64, data []byte) entry {
	return entry{
		hdr:  &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX},
		data: data,
	}
}

func symlink(name, target string) entry {
	return entry{hdr: &tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX}}
}

func writeTar(entries []entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := writeEntry(tw, e); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, e entry) error {
	if err := tw.WriteHeader(e.hdr); err != nil {
		return fmt.Errorf("writing tar header %q: %w", e.hdr.Name, err)
	}
	if len(e.data) > 0 {
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("writing tar entry %q: %w", e.hdr.Name, err)
		}
	}
	return nil
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	// The gzip header carries no name and a zero mtime, so the output depends on b alone.
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
