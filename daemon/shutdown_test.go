package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/run"
)

// TestSyncInterruptedByShutdown: a sync cut short by SIGTERM (its context
// ended) while it asks the runtime, or fetches --manifest-url, is logged as
// interrupted by the shutdown, not as a runtime outage or a broken source,
// and leaves the health as the last real sync set it.
func TestSyncInterruptedByShutdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  bool // the shutdown comes while the URL is fetched
	}{{"runtime", false}, {"manifest URL", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			interrupt := make(chan bool, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-interrupt:
					cancel()
					<-r.Context().Done()
				default:
					_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n"))
				}
			}))
			defer srv.Close()
			root := t.TempDir()
			h := run.NewHost(run.Config{Root: root, LogDir: t.TempDir()}, run.Deps{Engine: fake.New()}, nil, nil)
			defer h.Close()
			var log bytes.Buffer
			o := Options{ManifestDir: t.TempDir(), Resync: time.Minute, StatusFile: filepath.Join(root, "daemon.json")}
			if tc.url {
				o.URL = srv.URL
			}
			d := New(h, o, slog.New(slog.NewTextHandler(&log, nil)), NewMetrics())

			if retry := d.sync(context.Background(), nil); retry || strings.Contains(log.String(), "level=ERROR") {
				t.Fatalf("a sync with everything answering: retry %v; log:\n%s", retry, log.String())
			}
			if tc.url {
				interrupt <- true
			} else {
				cancel()
			}
			if retry := d.sync(ctx, nil); retry {
				t.Errorf("an interrupted sync asks for a retry")
			}
			if !strings.Contains(log.String(), `level=INFO msg="sync interrupted by the shutdown"`) {
				t.Errorf("the interruption is not logged; log:\n%s", log.String())
			}
			if strings.Contains(log.String(), "unavailable") || strings.Contains(log.String(), "level=ERROR") {
				t.Errorf("the shutdown is logged as an error:\n%s", log.String())
			}
			if _, ready, detail := d.Health(); !ready || detail != "" {
				t.Errorf("health after the interrupted sync: ready %v, %q; want ready as the last real sync left it", ready, detail)
			}
		})
	}
}
