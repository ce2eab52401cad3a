package kept

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchPod is a pod as a node keeps it: a pod with a 4 KiB ConfigMap and
// a Secret.
func benchPod(i int) Pod {
	p := testPod(fmt.Sprintf("0f9f1a3c-7c1e-4c38-9d0e-%012d", i), fmt.Sprintf("web-%d", i))
	p.Labels = map[string]string{"app": "web", "pod-template-hash": "5d8f7c9b6"}
	return Pod{Pod: p,
		ConfigMaps: map[string]*corev1.ConfigMap{"conf": {ObjectMeta: metav1.ObjectMeta{Name: "conf"}, Data: map[string]string{"app.conf": strings.Repeat("x", 4<<10)}}},
		Secrets:    map[string]*corev1.Secret{"pass": {ObjectMeta: metav1.ObjectMeta{Name: "pass"}, Data: map[string][]byte{"p": []byte("s3cret")}}},
	}
}

// BenchmarkLoad: reading the kept pods at a start without the API server.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{20, 110} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			s, err := Open(Options{Dir: dir, Cluster: clusterA})
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if err := s.Save(benchPod(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				pods, problems, err := s.Load()
				if err != nil || len(problems) != 0 || len(pods) != n {
					b.Fatal(len(pods), problems, err)
				}
			}
		})
	}
}

// BenchmarkSave: a change worth a write (synced file and directory), and
// a status-only update (no write).
func BenchmarkSave(b *testing.B) {
	s, err := Open(Options{Dir: b.TempDir(), Cluster: clusterA})
	if err != nil {
		b.Fatal(err)
	}
	p := benchPod(0)
	b.Run("write", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			p.Pod.Labels["rev"] = fmt.Sprint(i)
			if err := s.Save(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("status-only", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			p.Pod.ResourceVersion = fmt.Sprint(i)
			if err := s.Save(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
