package manifest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// identified is what Identity hashes: what the user means by the pod, and
// nothing the API server or a runtime adds.
type identified struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Spec        corev1.PodSpec    `json:"spec"`
}

// Identity returns the hash and the UID of a pod, which should be defaulted
// first. hash is the hex sha256 of the canonical JSON (encoding/json: struct
// fields in declaration order, map keys sorted, empty fields omitted) of the
// pod's name, namespace, labels, annotations and spec; equal hashes mean an
// unchanged pod. uid is a name-based UUID (RFC 4122 version 5
// layout) from the sha1 of namespace + "/" + name + "/" + hash, so the same
// manifest gets the same UID on every run and every machine, and a changed one
// a new UID, as a static pod does under the kubelet.
func Identity(pod *corev1.Pod) (hash, uid string) {
	data, err := json.Marshal(identified{
		Name:        pod.Name,
		Namespace:   pod.Namespace,
		Labels:      pod.Labels,
		Annotations: pod.Annotations,
		Spec:        pod.Spec,
	})
	if err != nil {
		panic(fmt.Sprintf("manifest: encoding a pod spec: %v", err)) // corev1 types always encode
	}
	sum := sha256.Sum256(data)
	hash = hex.EncodeToString(sum[:])
	return hash, nameUUID(pod.Namespace + "/" + pod.Name + "/" + hash)
}

// nameUUID formats the sha1 of name as a version 5, RFC 4122 variant UUID.
func nameUUID(name string) string {
	sum := sha1.Sum([]byte(name))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x50 // version 5
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
