package trust

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podrun/podrun/archivereg"
	"github.com/podrun/podrun/registry"
)

// TestLiveReadsTheFileAgain: the daemon's policy follows its file — a
// change is read at the next check, a file that no longer loads refuses
// (naming the file and the field), the default location removed is no
// policy and a file named explicitly removed refuses.
func TestLiveReadsTheFileAgain(t *testing.T) {
	const (
		ref    = "127.0.0.1:5000/app:1"
		digest = "sha256:0123456789012345678901234567890123456789012345678901234567890123"
		accept = `{"default":[{"type":"insecureAcceptAnything"}]}`
		reject = `{"default":[{"type":"reject"}]}`
	)
	ctx := context.Background()
	for _, explicit := range []bool{false, true} {
		dir := t.TempDir()
		path := writeFile(t, dir, "policy.json", accept)
		p, err := Load(path, explicit, "")
		if err != nil {
			t.Fatal(err)
		}
		l := NewLive(p, path, explicit, "")
		allowed := func(step string, want bool, wantErr ...string) {
			t.Helper()
			err := l.AllowUnverified(ctx, ref, digest)
			if (err == nil) != want {
				t.Fatalf("explicit %v, %s: AllowUnverified = %v, want allowed %v", explicit, step, err, want)
			}
			var r *Refusal
			if err != nil && !errors.As(err, &r) {
				t.Errorf("explicit %v, %s: %v is no *Refusal", explicit, step, err)
			}
			for _, w := range wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("explicit %v, %s: %v, want %q in it", explicit, step, err, w)
				}
			}
		}
		allowed("as loaded", true)
		writeFile(t, dir, "policy.json", reject)
		allowed("changed to reject", false, `scope default`)
		writeFile(t, dir, "policy.json", `{"default":[{"type":"trustMeNow"}]}`)
		allowed("no longer loads", false, path, `"trustMeNow"`, "nothing runs unverified")
		fetch := func(context.Context) (archivereg.Source, error) {
			t.Error("signatures fetched while the policy does not load")
			return nil, errors.New("no fetch")
		}
		if err := l.VerifyPulled(ctx, ref, digest, true, registry.Credential{}, fetch); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("explicit %v: VerifyPulled while the policy does not load = %v, want a refusal naming %s", explicit, err, path)
		}
		if err := l.VerifyArchive(ctx, ref, digest, io.NewSectionReader(strings.NewReader(""), 0, 0)); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("explicit %v: VerifyArchive while the policy does not load = %v, want a refusal naming %s", explicit, err, path)
		}
		writeFile(t, dir, "policy.json", accept)
		allowed("loads again", true)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if explicit {
			allowed("the named file removed", false, filepath.Base(path))
		} else {
			allowed("the default location removed: no policy", true)
		}
	}
}
