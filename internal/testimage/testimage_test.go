package testimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeBusybox writes a shell script standing in for busybox: it answers
// --list-full like the real one (including its own path) and is small.
func fakeBusybox(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "busybox")
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = --list-full ]; then printf 'bin/busybox\\nbin/sh\\nusr/bin/wget\\nsbin/ip\\nusr/sbin/httpd\\n'; fi\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type tarFile struct {
	hdr  tar.Header
	data []byte
}

// readTar returns the entries of a tar stream in order, failing on duplicates.
func readTar(t *testing.T, r io.Reader) ([]string, map[string]tarFile) {
	t.Helper()
	tr := tar.NewReader(r)
	var order []string
	files := map[string]tarFile{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading tar: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading tar entry %q: %v", hdr.Name, err)
		}
		if _, dup := files[hdr.Name]; dup {
			t.Errorf("duplicate tar entry %q", hdr.Name)
		}
		order = append(order, hdr.Name)
		files[hdr.Name] = tarFile{hdr: *hdr, data: data}
	}
	return order, files
}

// archive is a parsed OCI layout archive whose blobs were checked against their descriptors.
type archive struct {
	index       ocispec.Index
	manifest    ocispec.Manifest
	config      ocispec.Image
	layerOrder  []string
	layer       map[string]tarFile
	layerDiffID digest.Digest
}

// blob returns the blob for desc, checking that its digest and size match.
func blob(t *testing.T, files map[string]tarFile, desc ocispec.Descriptor) []byte {
	t.Helper()
	if err := desc.Digest.Validate(); err != nil {
		t.Fatalf("descriptor digest %q: %v", desc.Digest, err)
	}
	name := "blobs/" + desc.Digest.Algorithm().String() + "/" + desc.Digest.Encoded()
	f, ok := files[name]
	if !ok {
		t.Fatalf("blob %s (%s) is not in the archive", desc.Digest, desc.MediaType)
	}
	if got := digest.FromBytes(f.data); got != desc.Digest {
		t.Fatalf("blob %s has digest %s", name, got)
	}
	if int64(len(f.data)) != desc.Size {
		t.Fatalf("blob %s has size %d, descriptor says %d", name, len(f.data), desc.Size)
	}
	return f.data
}

func parseArchive(t *testing.T, b []byte) archive {
	t.Helper()
	order, files := readTar(t, bytes.NewReader(b))
	var a archive

	layout, ok := files["oci-layout"]
	if !ok {
		t.Fatalf("no oci-layout file; entries: %v", order)
	}
	var l ocispec.ImageLayout
	if err := json.Unmarshal(layout.data, &l); err != nil || l.Version != ocispec.ImageLayoutVersion {
		t.Fatalf("oci-layout = %s (err %v)", layout.data, err)
	}
	for _, name := range order {
		if name != "oci-layout" && name != "index.json" && !strings.HasPrefix(name, "blobs/") {
			t.Errorf("unexpected archive entry %q", name)
		}
	}

	idx, ok := files["index.json"]
	if !ok {
		t.Fatalf("no index.json; entries: %v", order)
	}
	if err := json.Unmarshal(idx.data, &a.index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if a.index.SchemaVersion != 2 || a.index.MediaType != ocispec.MediaTypeImageIndex {
		t.Errorf("index schemaVersion/mediaType = %d %q", a.index.SchemaVersion, a.index.MediaType)
	}
	if len(a.index.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(a.index.Manifests))
	}
	md := a.index.Manifests[0]
	if md.MediaType != ocispec.MediaTypeImageManifest {
		t.Errorf("manifest mediaType = %q", md.MediaType)
	}
	if md.Platform == nil || md.Platform.OS != "linux" || md.Platform.Architecture != runtime.GOARCH {
		t.Errorf("manifest platform = %+v", md.Platform)
	}
	if err := json.Unmarshal(blob(t, files, md), &a.manifest); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if a.manifest.SchemaVersion != 2 || a.manifest.MediaType != ocispec.MediaTypeImageManifest {
		t.Errorf("manifest schemaVersion/mediaType = %d %q", a.manifest.SchemaVersion, a.manifest.MediaType)
	}
	if a.manifest.Config.MediaType != ocispec.MediaTypeImageConfig {
		t.Errorf("config mediaType = %q", a.manifest.Config.MediaType)
	}
	if err := json.Unmarshal(blob(t, files, a.manifest.Config), &a.config); err != nil {
		t.Fatalf("config: %v", err)
	}
	if len(a.manifest.Layers) != 1 {
		t.Fatalf("manifest has %d layers, want 1", len(a.manifest.Layers))
	}
	ld := a.manifest.Layers[0]
	if ld.MediaType != ocispec.MediaTypeImageLayerGzip {
		t.Errorf("layer mediaType = %q", ld.MediaType)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, ld)))
	if err != nil {
		t.Fatalf("layer is not gzip: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip layer: %v", err)
	}
	a.layerDiffID = digest.FromBytes(raw)
	a.layerOrder, a.layer = readTar(t, bytes.NewReader(raw))

	// Every blob in the archive is referenced: no strays.
	referenced := map[string]bool{}
	for _, d := range []ocispec.Descriptor{md, a.manifest.Config, ld} {
		referenced["blobs/sha256/"+d.Digest.Encoded()] = true
	}
	for _, name := range order {
		if strings.HasPrefix(name, "blobs/sha256/") && name != "blobs/sha256/" && !referenced[name] {
			t.Errorf("unreferenced blob %q", name)
		}
	}
	return a
}

func build(t *testing.T, cfg Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteOCIArchive(&buf, cfg); err != nil {
		t.Fatalf("WriteOCIArchive: %v", err)
	}
	return buf.Bytes()
}

func TestWriteOCIArchiveStructure(t *testing.T) {
	bb := fakeBusybox(t)
	cfg := Config{
		Ref:     "podrun.test/busybox:1",
		Busybox: bb,
		Files: []File{
			{Path: "/var/www/index.html", Data: []byte("hello\n")},
			{Path: "/usr/local/bin/app", Mode: 0o755, Data: []byte("#!/bin/sh\necho app\n")},
			{Path: "/opt/data", Mode: os.ModeDir | 0o750},
			{Path: "/etc/motd", LinkTarget: "/var/www/index.html"},
			{Path: "/etc/passwd", Mode: 0o600, Data: []byte("root:x:0:0::/root:/bin/sh\n")},
		},
		Cmd:          []string{"httpd", "-f"},
		User:         "65534",
		WorkingDir:   "/var/www",
		StopSignal:   "SIGQUIT",
		ExposedPorts: []string{"80/tcp"},
	}
	a := parseArchive(t, build(t, cfg))

	md := a.index.Manifests[0]
	if got := md.Annotations[AnnotationImageName]; got != "podrun.test/busybox:1" {
		t.Errorf("%s = %q", AnnotationImageName, got)
	}
	if got := md.Annotations[ocispec.AnnotationRefName]; got != "1" {
		t.Errorf("%s = %q, want the tag", ocispec.AnnotationRefName, got)
	}

	c := a.config
	if c.OS != "linux" || c.Architecture != runtime.GOARCH {
		t.Errorf("config platform = %s/%s", c.OS, c.Architecture)
	}
	if c.RootFS.Type != "layers" || len(c.RootFS.DiffIDs) != 1 || c.RootFS.DiffIDs[0] != a.layerDiffID {
		t.Errorf("rootfs = %+v, want one diffID %s", c.RootFS, a.layerDiffID)
	}
	ic := c.Config
	if !reflect.DeepEqual(ic.Cmd, []string{"httpd", "-f"}) || len(ic.Entrypoint) != 0 {
		t.Errorf("cmd/entrypoint = %q %q", ic.Cmd, ic.Entrypoint)
	}
	if !reflect.DeepEqual(ic.Env, DefaultEnv) {
		t.Errorf("env = %q", ic.Env)
	}
	if ic.User != "65534" || ic.WorkingDir != "/var/www" || ic.StopSignal != "SIGQUIT" {
		t.Errorf("user/workdir/stopsignal = %q %q %q", ic.User, ic.WorkingDir, ic.StopSignal)
	}
	if _, ok := ic.ExposedPorts["80/tcp"]; !ok || len(ic.ExposedPorts) != 1 {
		t.Errorf("exposed ports = %v", ic.ExposedPorts)
	}

	// Entries are sorted, have fixed mtimes and root ownership.
	for i, name := range a.layerOrder {
		if i > 0 && strings.TrimSuffix(a.layerOrder[i-1], "/") >= strings.TrimSuffix(name, "/") {
			t.Errorf("layer entries not sorted: %q before %q", a.layerOrder[i-1], name)
		}
		h := a.layer[name].hdr
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%q: mtime %v uid %d gid %d", name, h.ModTime, h.Uid, h.Gid)
		}
		if strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
			t.Errorf("bad entry name %q", name)
		}
	}

	bbData, _ := os.ReadFile(bb)
	wantReg := map[string]struct {
		mode int64
		data string
	}{
		"bin/busybox":        {0o755, string(bbData)},
		"etc/passwd":         {0o600, "root:x:0:0::/root:/bin/sh\n"}, // cfg.Files replaces the default
		"etc/group":          {0o644, group},
		"var/www/index.html": {0o644, "hello\n"},
		"usr/local/bin/app":  {0o755, "#!/bin/sh\necho app\n"},
	}
	for name, want := range wantReg {
		f, ok := a.layer[name]
		if !ok {
			t.Errorf("layer has no %q", name)
			continue
		}
		if f.hdr.Typeflag != tar.TypeReg || f.hdr.Mode != want.mode || string(f.data) != want.data {
			t.Errorf("%q: type %c mode %o data %q; want regular %o %q", name, f.hdr.Typeflag, f.hdr.Mode, f.data, want.mode, want.data)
		}
	}
	wantLinks := map[string]string{
		"bin/sh":         "/bin/busybox",
		"usr/bin/wget":   "/bin/busybox",
		"sbin/ip":        "/bin/busybox",
		"usr/sbin/httpd": "/bin/busybox",
		"etc/motd":       "/var/www/index.html",
	}
	for name, target := range wantLinks {
		f, ok := a.layer[name]
		if !ok || f.hdr.Typeflag != tar.TypeSymlink || f.hdr.Linkname != target {
			t.Errorf("%q: present %v type %c link %q; want symlink to %q", name, ok, f.hdr.Typeflag, f.hdr.Linkname, target)
		}
	}
	wantDirs := map[string]int64{
		"bin/": 0o755, "sbin/": 0o755, "usr/": 0o755, "usr/bin/": 0o755, "usr/sbin/": 0o755,
		"usr/local/": 0o755, "usr/local/bin/": 0o755, "etc/": 0o755, "tmp/": 0o1777, "root/": 0o700,
		"var/": 0o755, "var/www/": 0o755, "opt/": 0o755, "opt/data/": 0o750,
	}
	for name, mode := range wantDirs {
		f, ok := a.layer[name]
		if !ok || f.hdr.Typeflag != tar.TypeDir || f.hdr.Mode != mode {
			t.Errorf("%q: present %v type %c mode %o; want directory %o", name, ok, f.hdr.Typeflag, f.hdr.Mode, mode)
		}
	}
	if n := len(a.layer); n != len(wantReg)+len(wantLinks)+len(wantDirs) {
		t.Errorf("layer has %d entries, want %d: %v", n, len(wantReg)+len(wantLinks)+len(wantDirs), a.layerOrder)
	}
}

func TestDefaultPasswdAndCmd(t *testing.T) {
	a := parseArchive(t, build(t, Config{Ref: "busybox", Busybox: fakeBusybox(t)}))
	if got := a.index.Manifests[0].Annotations[AnnotationImageName]; got != "docker.io/library/busybox:latest" {
		t.Errorf("image name = %q", got)
	}
	if !reflect.DeepEqual(a.config.Config.Cmd, []string{"sh"}) {
		t.Errorf("default cmd = %q, want [sh]", a.config.Config.Cmd)
	}
	passwd := string(a.layer["etc/passwd"].data)
	for _, want := range []string{"root:x:0:0:", "nobody:x:65534:65534:"} {
		if !strings.Contains(passwd, want) {
			t.Errorf("/etc/passwd %q lacks %q", passwd, want)
		}
	}
	if !strings.Contains(string(a.layer["etc/group"].data), "nobody:x:65534:") {
		t.Errorf("/etc/group = %q", a.layer["etc/group"].data)
	}

	a = parseArchive(t, build(t, Config{Ref: "x/y:z", Busybox: fakeBusybox(t), Entrypoint: []string{"/bin/sleep"}, Env: []string{}}))
	if len(a.config.Config.Cmd) != 0 || !reflect.DeepEqual(a.config.Config.Entrypoint, []string{"/bin/sleep"}) {
		t.Errorf("entrypoint-only image: cmd %q entrypoint %q", a.config.Config.Cmd, a.config.Config.Entrypoint)
	}
	if len(a.config.Config.Env) != 0 {
		t.Errorf("explicit empty env became %q", a.config.Config.Env)
	}
}

func TestDeterministic(t *testing.T) {
	cfg := Config{Ref: "podrun.test/busybox:1", Busybox: fakeBusybox(t), Files: []File{{Path: "/a/b/c", Data: []byte("x")}}}
	first := build(t, cfg)
	second := build(t, cfg)
	if !bytes.Equal(first, second) {
		t.Fatal("two archives from the same config differ")
	}
	cfg.Files[0].Data = []byte("y")
	if bytes.Equal(first, build(t, cfg)) {
		t.Fatal("changing a file did not change the archive")
	}
}

func TestErrors(t *testing.T) {
	bb := fakeBusybox(t)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"empty ref", Config{Busybox: bb}, "empty"},
		{"bad ref", Config{Ref: "Not A Ref", Busybox: bb}, "parsing image reference"},
		{"digest ref", Config{Ref: "busybox@sha256:" + strings.Repeat("a", 64), Busybox: bb}, "digest"},
		{"missing busybox", Config{Ref: "a:b", Busybox: filepath.Join(t.TempDir(), "nope")}, "reading busybox"},
		{"file under a file", Config{Ref: "a:b", Busybox: bb, Files: []File{{Path: "/bin/busybox/x"}}}, "not a directory"},
		{"root path", Config{Ref: "a:b", Busybox: bb, Files: []File{{Path: "/"}}}, "invalid path"},
		{"device", Config{Ref: "a:b", Busybox: bb, Files: []File{{Path: "/dev/x", Mode: os.ModeDevice}}}, "unsupported file type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteOCIArchive(io.Discard, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestRealBusybox builds from the host's static busybox, as the e2e harness does.
func TestRealBusybox(t *testing.T) {
	if _, err := os.Stat(DefaultBusybox); err != nil {
		t.Skipf("no %s (install busybox-static): %v", DefaultBusybox, err)
	}
	a := parseArchive(t, build(t, Config{Ref: "podrun.test/busybox:1"}))
	if f := a.layer["bin/sh"]; f.hdr.Typeflag != tar.TypeSymlink || f.hdr.Linkname != "/bin/busybox" {
		t.Errorf("bin/sh = %+v", f.hdr)
	}
	if f := a.layer["bin/busybox"]; f.hdr.Typeflag != tar.TypeReg || f.hdr.Size < 100000 {
		t.Errorf("bin/busybox = %+v", f.hdr)
	}
	links := 0
	for _, f := range a.layer {
		if f.hdr.Typeflag == tar.TypeSymlink {
			links++
		}
	}
	if links < 100 {
		t.Errorf("only %d applet symlinks", links)
	}
}
