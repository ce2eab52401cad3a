package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/engine/fake"
	"github.com/podrun/podrun/run"
)

// TestImportImages: the images directory's archives are imported once
// each (again when changed); one being written waits; one others may write
// is refused with the reason; other files are ignored.
func TestImportImages(t *testing.T) {
	images := t.TempDir()
	e := fake.New()
	var imported []string
	e.ImportFunc = func(r io.Reader) ([]engine.Image, error) {
		data, err := io.ReadAll(r)
		imported = append(imported, string(data))
		return []engine.Image{{Ref: "podrun.test/" + string(data) + ":1"}}, err
	}
	h := run.NewHost(run.Config{Root: t.TempDir(), LogDir: t.TempDir()}, run.Deps{Engine: e}, nil, nil)
	defer h.Close()
	var log bytes.Buffer
	d := New(h, Options{ManifestDir: t.TempDir(), ImagesDir: images, Settle: time.Second}, slog.New(slog.NewTextHandler(&log, nil)), NewMetrics())
	write := func(name, content string, mode os.FileMode, age time.Duration) {
		p := filepath.Join(images, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write("a.tar", "a", 0o644, time.Minute)
	write("b.tar.gz", "b", 0o664, time.Minute)
	write("c.txt", "c", 0o644, time.Minute)
	write("d.tar.zst", "d", 0o644, 0) // being written
	problems := d.importImages(context.Background())
	if !slices.Equal(imported, []string{"a"}) {
		t.Errorf("imported %v, want [a]", imported)
	}
	if len(problems) != 1 || !strings.HasSuffix(problems[0].Source, "b.tar.gz") || !strings.Contains(problems[0].Msg, "writable by its group") {
		t.Errorf("problems %+v, want b.tar.gz refused as group-writable", problems)
	}
	write("d.tar.zst", "d", 0o644, time.Minute) // done
	d.importImages(context.Background())
	write("a.tar", "a2", 0o644, time.Minute) // changed
	problems = d.importImages(context.Background())
	if !slices.Equal(imported, []string{"a", "d", "a2"}) {
		t.Errorf("imported %v, want [a d a2]", imported)
	}
	if len(problems) != 1 {
		t.Errorf("b.tar.gz's problem is not kept while it is unchanged: %+v", problems)
	}
	if !strings.Contains(log.String(), `msg="imported image archive"`) {
		t.Errorf("imports not logged:\n%s", log.String())
	}
}
