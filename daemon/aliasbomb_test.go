package daemon

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSourcesBoundAliases: a small file of the manifest directory, or the
// body of the manifest URL, whose aliases expand to hundreds of megabytes
// is refused as such, in bounded memory (it took gigabytes: one such file
// could OOM-kill the daemon).
func TestSourcesBoundAliases(t *testing.T) {
	var bomb bytes.Buffer
	fmt.Fprintf(&bomb, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    a0: &b %q\n", strings.Repeat("y", 10<<10))
	for i := 1; i < 20000; i++ { // (fewer values than manifest bounds: refused for its aliases)
		fmt.Fprintf(&bomb, "    a%d: *b\n", i)
	}
	bomb.WriteString("spec:\n  containers: [{name: c, image: i}]\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bomb.yaml"), bomb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(bomb.Bytes()) }))
	defer srv.Close()
	s := NewSources(dir, srv.URL)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, broken, problems := s.Scan(context.Background(), nil)
	runtime.ReadMemStats(&after)
	if len(broken) != 2 || len(problems) != 2 {
		t.Fatalf("broken %v, problems %v: want the file and the URL", broken, problems)
	}
	for _, p := range problems {
		if !strings.Contains(p.Msg, "the object is larger than 1536 KiB") {
			t.Errorf("%s: %s", p.Source, p.Msg)
		}
	}
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("two %d-byte sources refused after allocating %d MiB", bomb.Len(), grew>>20)
	if grew > 200<<20 {
		t.Errorf("reading two %d-byte sources allocated %d MiB", bomb.Len(), grew>>20)
	}
}
