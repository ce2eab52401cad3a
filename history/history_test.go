package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hashes(revs []Revision) []string {
	var out []string
	for _, r := range revs {
		out = append(out, r.Hash)
	}
	return out
}

func nums(revs []Revision) []int {
	var out []int
	for _, r := range revs {
		out = append(out, r.Revision)
	}
	return out
}

func TestAdd(t *testing.T) {
	var revs []Revision
	var changed bool
	for _, h := range []string{"a", "b", "c"} {
		revs, changed = Add(revs, Revision{Hash: h}, 3)
		if !changed {
			t.Fatalf("adding %s changed nothing", h)
		}
	}
	if got := nums(revs); len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("revisions %v, want 1 2 3", got)
	}
	if _, changed = Add(revs, Revision{Hash: "c"}, 3); changed {
		t.Fatal("the newest version added again changed the history")
	}
	// An older version applied again moves to the end with the next number.
	revs, _ = Add(revs, Revision{Hash: "a"}, 3)
	if got := hashes(revs); got[0] != "b" || got[1] != "c" || got[2] != "a" || revs[2].Revision != 4 {
		t.Fatalf("after a again: %v %v, want b c a, a numbered 4", got, nums(revs))
	}
	// Beyond max, the oldest go.
	revs, _ = Add(revs, Revision{Hash: "d"}, 3)
	if got := hashes(revs); len(got) != 3 || got[0] != "c" || got[2] != "d" {
		t.Fatalf("after d: %v, want c a d", got)
	}
}

func TestFind(t *testing.T) {
	revs := []Revision{{Revision: 2, Hash: "b"}, {Revision: 3, Hash: "c"}}
	if r, err := Find(revs, 0, "c"); err != nil || r.Hash != "b" {
		t.Fatalf("Find(0) running c = %v, %v; want b, the one before", r.Hash, err)
	}
	if r, err := Find(revs, 0, "x"); err != nil || r.Hash != "c" {
		t.Fatalf("Find(0) running a version never Ready = %v, %v; want c, the newest", r.Hash, err)
	}
	if r, err := Find(revs, 3, "c"); err != nil || r.Hash != "c" {
		t.Fatalf("Find(3) = %v, %v", r.Hash, err)
	}
	if _, err := Find(revs, 1, "c"); err == nil {
		t.Fatal("Find(1): no error for a revision not kept")
	}
	if _, err := Find(revs[1:], 0, "c"); err == nil {
		t.Fatal("Find(0) of the running version alone: no error")
	}
}

func TestStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history")
	s := &Store{Dir: dir}
	if revs, err := s.List("default/web"); err != nil || revs != nil {
		t.Fatalf("List of nothing = %v, %v", revs, err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default",
		Annotations: map[string]string{ChangeCauseAnnotation: "image 1.2"}}}
	cm := map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"k": "v"}}}
	for _, h := range []string{"a", "b", "c", "d"} {
		if err := s.Record("default/web", Revision{Hash: h, Source: "/etc/pods/web.yaml", Pod: pod, ConfigMaps: cm}); err != nil {
			t.Fatal(err)
		}
	}
	revs, err := s.List("default/web")
	if err != nil {
		t.Fatal(err)
	}
	if got := hashes(revs); len(got) != Max || got[0] != "b" || got[2] != "d" {
		t.Fatalf("kept %v, want b c d", got)
	}
	if revs[2].ChangeCause() != "image 1.2" || revs[2].ConfigMaps["cfg"].Data["k"] != "v" {
		t.Fatalf("the version read back lost its manifest or objects: %+v", revs[2])
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, s.path("default/web"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d files, want the pod's alone (no temporary left)", len(entries))
	}
	if err := s.Remove("default/web"); err != nil {
		t.Fatal(err)
	}
	if revs, _ := s.List("default/web"); revs != nil {
		t.Fatalf("after Remove: %v", revs)
	}
	if err := s.Remove("default/web"); err != nil {
		t.Fatalf("removing what is gone: %v", err)
	}
}

func TestOverride(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	if o, err := s.Override("default/web"); err != nil || o != nil {
		t.Fatalf("Override of nothing = %v, %v", o, err)
	}
	want := Override{Hash: "bad", To: Revision{Revision: 2, Hash: "good"}, Reason: "CrashLoopBackOff"}
	if err := s.SetOverride("default/web", want); err != nil {
		t.Fatal(err)
	}
	o, err := s.Override("default/web")
	if err != nil || o == nil || o.Hash != "bad" || o.To.Hash != "good" || o.Reason != "CrashLoopBackOff" {
		t.Fatalf("Override = %+v, %v", o, err)
	}
	if err := s.ClearOverride("default/web"); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Override("default/web"); o != nil {
		t.Fatalf("after ClearOverride: %+v", o)
	}
	if err := s.SetOverride("default/web", want); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("default/web"); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Override("default/web"); o != nil {
		t.Fatalf("after Remove: %+v", o)
	}
}

// TestLongestPodName: a namespace of 63 and a name of 253 characters (both
// valid) make file names within 255 bytes, two such pods apart.
func TestLongestPodName(t *testing.T) {
	s := &Store{Dir: filepath.Join(t.TempDir(), "history")}
	ns := strings.Repeat("n", 63)
	keys := []string{ns + "/" + strings.Repeat("x", 253), ns + "/" + strings.Repeat("x", 252) + "y"}
	for _, key := range keys {
		if err := s.Record(key, Revision{Hash: key[len(key)-1:], Pod: &corev1.Pod{}}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetOverride(key, Override{Hash: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range keys {
		revs, err := s.List(key)
		if err != nil || len(revs) != 1 || revs[0].Hash != key[len(key)-1:] {
			t.Fatalf("%s: List = %v, %v", key[len(key)-3:], revs, err)
		}
		if err := s.Remove(key); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(s.Dir); len(entries) != 0 {
		t.Fatalf("left after Remove: %d files", len(entries))
	}
}

// TestDottedNameKeepsItsOwnFiles: pod "ns/web.override" (dots are valid in
// a name) has files of its own: recording and removing its versions
// neither reads nor removes the override (the rollback) of pod "ns/web".
func TestDottedNameKeepsItsOwnFiles(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	ov := Override{Hash: "bad", To: Revision{Revision: 1, Hash: "good"}, Reason: "CrashLoopBackOff"}
	if err := s.SetOverride("ns/web", ov); err != nil {
		t.Fatal(err)
	}
	if err := s.Record("ns/web.override", Revision{Hash: "x", Pod: &corev1.Pod{}}); err != nil {
		t.Fatalf("recording the versions of ns/web.override: %v", err)
	}
	if revs, err := s.List("ns/web.override"); err != nil || len(revs) != 1 || revs[0].Hash != "x" {
		t.Fatalf("versions of ns/web.override: %v, %v", revs, err)
	}
	if o, err := s.Override("ns/web"); err != nil || o == nil || o.To.Hash != "good" {
		t.Fatalf("the override of ns/web after ns/web.override's versions were recorded: %+v, %v", o, err)
	}
	if err := s.Remove("ns/web.override"); err != nil {
		t.Fatal(err)
	}
	if o, err := s.Override("ns/web"); err != nil || o == nil || o.To.Hash != "good" {
		t.Fatalf("the override of ns/web after ns/web.override was removed: %+v, %v", o, err)
	}
}

// TestMigrateOverrides: the files of a podrun before, where an override was
// "namespace_name.override.json": an override there (a JSON object) is
// found under its new name; versions there (a list: the pod's name ends in
// ".override") stay that pod's.
func TestMigrateOverrides(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ns_web.json", `[{"revision":1,"hash":"good","pod":{}}]`)
	write("ns_web.override.json", `{"hash":"bad","to":{"revision":1,"hash":"good"},"reason":"CrashLoopBackOff"}`)
	write("ns_db.override.json", `[{"revision":4,"hash":"d4","pod":{}}]`)
	s := &Store{Dir: dir}
	if o, err := s.Override("ns/web"); err != nil || o == nil || o.Hash != "bad" || o.To.Hash != "good" {
		t.Fatalf("ns/web's override kept before: %+v, %v", o, err)
	}
	if revs, err := s.List("ns/db.override"); err != nil || len(revs) != 1 || revs[0].Revision != 4 {
		t.Fatalf("the versions of ns/db.override: %v, %v", revs, err)
	}
	if o, err := s.Override("ns/db"); err != nil || o != nil {
		t.Fatalf("ns/db has no override, got %+v, %v", o, err)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := "ns_db.override.json ns_web.json ns_web@override.json"; strings.Join(names, " ") != want {
		t.Errorf("files %v, want %s", names, want)
	}
	// Removing the pod ns/web.override touches nothing of ns/web.
	if err := s.Remove("ns/web.override"); err != nil {
		t.Fatal(err)
	}
	if o, err := s.Override("ns/web"); err != nil || o == nil {
		t.Fatalf("after removing ns/web.override: %+v, %v", o, err)
	}
}
