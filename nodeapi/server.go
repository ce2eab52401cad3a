package nodeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"k8s.io/utils/clock"

	"github.com/podrun/podrun/attach"
	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/run"
)

// Pods are the node's pods, as run.Host has them.
type Pods interface {
	Pod(ctx context.Context, t run.Target) (*run.PodInfo, error)
	LogDir(p *run.PodInfo, container string) string
}

// Engine runs commands in containers and sizes their terminals (the
// engine.Engine methods the streams need).
type Engine interface {
	Exec(ctx context.Context, id string, p engine.ExecSpec) (int, error)
	Resize(ctx context.Context, id string, width, height uint32) error
}

// Config is what a Server serves from.
type Config struct {
	Pods   Pods
	Engine Engine
	// Attach connects to container id's stream keeper (attach.Attach in
	// the container's I/O directory).
	Attach func(ctx context.Context, id string, o attach.Options) error
	// Dial connects to a port of a pod from inside its network namespace.
	Dial          Dialer
	Authenticator *Authenticator
	Authorizer    *Authorizer
	Clock         clock.PassiveClock
	Log           *slog.Logger
}

// Server is the node's API: the kubelet's paths it honours, behind
// authentication and authorisation.
type Server struct {
	pods   Pods
	engine Engine
	attach func(ctx context.Context, id string, o attach.Options) error
	dial   Dialer
	authn  *Authenticator
	authz  *Authorizer
	clock  clock.PassiveClock
	log    *slog.Logger
	mux    *http.ServeMux
}

// New is the server of c.
func New(c Config) *Server {
	s := &Server{pods: c.Pods, engine: c.Engine, attach: c.Attach, dial: c.Dial,
		authn: c.Authenticator, authz: c.Authorizer, clock: c.Clock, log: c.Log, mux: http.NewServeMux()}
	// The kubelet's paths (pkg/kubelet/server InstallAuthRequiredHandlers,
	// InstallAuthNotRequiredHandlers' healthz), GET and POST where it takes both.
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	s.mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLogs)
	for _, m := range []string{"GET", "POST"} {
		s.mux.HandleFunc(m+" /exec/{namespace}/{pod}/{container}", s.exec)
		s.mux.HandleFunc(m+" /exec/{namespace}/{pod}/{uid}/{container}", s.exec)
		s.mux.HandleFunc(m+" /attach/{namespace}/{pod}/{container}", s.attachTo)
		s.mux.HandleFunc(m+" /attach/{namespace}/{pod}/{uid}/{container}", s.attachTo)
		s.mux.HandleFunc(m+" /portForward/{namespace}/{pod}", s.portForward)
		s.mux.HandleFunc(m+" /portForward/{namespace}/{pod}/{uid}", s.portForward)
	}
	return s
}

// ServeHTTP authenticates and authorises every request, as the kubelet's
// auth filter (InstallAuthFilter), before anything is served: 401 for a
// request that proves no identity, 403 for one the API server does not
// allow, 500 when it cannot be asked.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, err := s.authn.Authenticate(r)
	if err != nil {
		s.log.Debug("node API: unauthenticated", "path", r.URL.Path, "err", err)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	attrs := attributes(r.Method, r.URL.Path)
	var subs []string
	for _, a := range attrs {
		subs = append(subs, a.Subresource)
		ok, err := s.authz.Allowed(r.Context(), u, a)
		if err != nil {
			s.log.Error("node API: authorization error", "user", u.Name, "verb", a.Verb, "subresource", a.Subresource, "err", err)
			http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)", u.Name, a.Verb, a.Subresource), http.StatusInternalServerError)
			return
		}
		if ok {
			s.mux.ServeHTTP(w, r)
			return
		}
	}
	s.log.Info("node API: forbidden", "user", u.Name, "verb", attrs[0].Verb, "path", r.URL.Path)
	http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)", u.Name, attrs[0].Verb, subs), http.StatusForbidden)
}

// TLSConfig serves cert and asks clients for a certificate of clientCAs
// (verified by the Authenticator, so that a request without one may still
// bring a bearer token), as the kubelet with --client-ca-file.
func TLSConfig(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		c.ClientAuth = tls.RequestClientCert
		c.ClientCAs = clientCAs
	}
	return c
}

// Serve answers on l over TLS until ctx ends, with the kubelet's server
// timeouts (streams may stay open for hours).
func (s *Server) Serve(ctx context.Context, l net.Listener, tlsConfig *tls.Config) error {
	srv := &http.Server{
		Handler:        s,
		TLSConfig:      tlsConfig,
		IdleTimeout:    90 * time.Second,
		ReadTimeout:    4 * time.Hour,
		WriteTimeout:   4 * time.Hour,
		MaxHeaderBytes: 1 << 20,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	err := srv.ServeTLS(l, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
