package archivereg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// MaxManifestSize bounds a manifest served (c/image reads no more either).
const MaxManifestSize = 4 << 20

// tagRE is the distribution spec's tag.
var tagRE = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// Source is what a Server serves: blobs by digest (manifests too), the
// manifests tags name, and a manifest's media type. A Layout (an
// archive's) and Blobs (held in memory) are Sources.
type Source interface {
	// Blob is the blob of digest d, or false.
	Blob(d digest.Digest) (*io.SectionReader, bool)
	// Tagged is the manifest tag names, or false.
	Tagged(tag string) (ocispec.Descriptor, bool)
	// MediaType is the media type of manifest d whose content is data.
	MediaType(d digest.Digest, data []byte) string
}

// Server is a Source served on 127.0.0.1 until Close.
type Server struct {
	srv    *http.Server
	ln     net.Listener
	prefix string
}

// Serve serves l read-only on a random port of 127.0.0.1, under a random
// first path component of the repository names (Prefix): another local
// process that finds the port cannot read the archive.
func Serve(l Source) (*Server, error) {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serving on loopback: %w", err)
	}
	prefix := hex.EncodeToString(secret)
	s := &Server{ln: ln, prefix: prefix, srv: &http.Server{Handler: Handler(l, prefix), ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the server's HOST:PORT.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Prefix is the first path component every repository name served has.
func (s *Server) Prefix() string { return s.prefix }

// Close stops the server and its connections.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// Handler answers the pull side of the distribution API from l: GET and
// HEAD of /v2/, /v2/NAME/manifests/TAG-OR-DIGEST and /v2/NAME/blobs/DIGEST
// for the NAMEs under prefix ("" for any: the source is one repository's);
// anything else is an error in the registry's JSON form.
func Handler(l Source, prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			regError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "read-only")
			return
		}
		kind, name, ref, ok := route(r.URL.Path)
		switch {
		case !ok || kind != "" && prefix != "" && !strings.HasPrefix(name, prefix+"/"):
			regError(w, http.StatusNotFound, "NAME_UNKNOWN", "no such path")
		case kind == "":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "{}")
		case kind == "manifests":
			serveManifest(w, r, l, ref)
		default:
			d, err := digest.Parse(ref)
			b, found := l.Blob(d)
			if err != nil || !found {
				regError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown")
				return
			}
			serve(w, r, b, "application/octet-stream", d)
		}
	})
}

// route splits a path: kind "" for /v2/; else the kind (manifests or
// blobs), the repository name before it and the reference after it; false
// for anything else.
func route(path string) (kind, name, ref string, ok bool) {
	if path == "/v2/" || path == "/v2" {
		return "", "", "", true
	}
	rest, found := strings.CutPrefix(path, "/v2/")
	if !found {
		return "", "", "", false
	}
	for _, k := range []string{"manifests", "blobs"} {
		if i := strings.LastIndex(rest, "/"+k+"/"); i > 0 {
			ref := rest[i+len(k)+2:]
			if ref != "" && !strings.Contains(ref, "/") {
				return k, rest[:i], ref, true
			}
		}
	}
	return "", "", "", false
}

func serveManifest(w http.ResponseWriter, r *http.Request, l Source, ref string) {
	d, err := digest.Parse(ref)
	if err != nil {
		if !tagRE.MatchString(ref) {
			regError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
			return
		}
		desc, ok := l.Tagged(ref)
		if !ok {
			regError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
			return
		}
		d = desc.Digest
	}
	b, ok := l.Blob(d)
	if !ok {
		regError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
		return
	}
	if b.Size() > MaxManifestSize {
		regError(w, http.StatusNotFound, "MANIFEST_INVALID", "manifest too big")
		return
	}
	data, err := io.ReadAll(b)
	if err != nil {
		regError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
		return
	}
	serve(w, r, io.NewSectionReader(strings.NewReader(string(data)), 0, int64(len(data))), l.MediaType(d, data), d)
}

// serve sends b as content of type mt and digest d.
func serve(w http.ResponseWriter, r *http.Request, b *io.SectionReader, mt string, d digest.Digest) {
	h := w.Header()
	if mt != "" {
		h.Set("Content-Type", mt)
	}
	h.Set("Docker-Content-Digest", d.String())
	h.Set("Content-Length", strconv.FormatInt(b.Size(), 10))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, b)
}

// regError is the registry's error body ({"errors": [...]}).
func regError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}
