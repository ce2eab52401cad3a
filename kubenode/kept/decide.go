package kept

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The decisions of the kept state, pure: which cluster a file belongs to,
// what a file holds (or why it is refused), which kept pods a re-list
// drops, which of two kept copies of a namespace/name stands, and whether
// a change is worth a write.

// Format is the version of the kept files this podrun writes and reads.
const Format = 1

// Cluster is who told the node what to run: the API server (its URL and
// the CA bundle the kubeconfig trusts it with) and the node's name in it.
// Kept state of another Cluster is never run.
type Cluster struct {
	Server string `json:"server"`
	// CA is the hex sha256 of the CA bundle's certificates (DER, in
	// order), or of its bytes when it holds none; "" when the kubeconfig
	// names no CA (the system's roots).
	CA   string `json:"caSHA256,omitempty"`
	Node string `json:"node"`
}

// NewCluster is the Cluster of a kubeconfig's server URL and CA bundle
// (PEM) for the node named node. The URL's scheme and host are
// lower-cased and a trailing slash dropped; the CA is hashed on its
// certificates, so that the same bundle re-encoded (line breaks, comments
// between blocks) is the same cluster.
func NewCluster(server string, ca []byte, node string) Cluster {
	c := Cluster{Server: strings.TrimSuffix(server, "/"), Node: node}
	if u, err := url.Parse(c.Server); err == nil && u.Host != "" {
		u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
		c.Server = strings.TrimSuffix(u.String(), "/")
	}
	if len(bytes.TrimSpace(ca)) == 0 {
		return c
	}
	h := sha256.New()
	rest, certs := ca, 0
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			h.Write(b.Bytes)
			certs++
		}
	}
	if certs == 0 {
		h.Write(ca)
	}
	c.CA = hex.EncodeToString(h.Sum(nil))
	return c
}

// String names the cluster in a message: `node "vm" of https://10.0.0.1:6443
// (CA sha256 0123456789ab)`.
func (c Cluster) String() string {
	ca := "no CA in its kubeconfig"
	if c.CA != "" {
		ca = "CA sha256 " + c.CA[:min(12, len(c.CA))]
	}
	return fmt.Sprintf("node %q of %s (%s)", c.Node, c.Server, ca)
}

// refusal is why a kept file is not run, and the suffix it is kept aside
// under.
type refusal struct {
	reason string // damaged, other-cluster, format, untrusted
	msg    string
}

// The reasons a file is kept aside, the suffix of its name in aside/.
const (
	reasonDamaged      = "damaged"
	reasonOtherCluster = "other-cluster"
	reasonFormat       = "format"
	reasonUntrusted    = "untrusted"
)

// envelope is a kept file: the record, as bytes, with their sha256.
type envelope struct {
	Format int             `json:"format"`
	SHA256 string          `json:"sha256"`
	Record json.RawMessage `json:"record"`
}

// record is what a kept file holds: one pod, the objects it was given,
// and the cluster it came from.
type record struct {
	Cluster Cluster `json:"cluster"`
	Pod
}

// encode is the file of pod p of cluster c.
func encode(c Cluster, p Pod) ([]byte, error) {
	rec, err := json.Marshal(record{Cluster: c, Pod: p})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(rec)
	return json.Marshal(envelope{Format: Format, SHA256: hex.EncodeToString(sum[:]), Record: rec})
}

// decode is the pod the file named uid+".json" holds, or why it is not to
// be run: not JSON or cut short, another format, a checksum that does not
// match (the bytes are not what podrun wrote: a bad block, an edit), a
// record of another pod than its name says, or of another cluster than
// this.
func decode(data []byte, uid types.UID, this Cluster) (Pod, *refusal) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return Pod{}, &refusal{reasonDamaged, fmt.Sprintf("is damaged (%v)", err)}
	}
	if env.Format != Format {
		if env.Format > Format {
			return Pod{}, &refusal{reasonFormat, fmt.Sprintf("is in format %d, of a newer podrun (this one reads format %d)", env.Format, Format)}
		}
		return Pod{}, &refusal{reasonDamaged, fmt.Sprintf("is damaged (format %d, not %d)", env.Format, Format)}
	}
	if sum := sha256.Sum256(env.Record); hex.EncodeToString(sum[:]) != env.SHA256 {
		return Pod{}, &refusal{reasonDamaged, "is damaged (its checksum does not match: not what podrun wrote)"}
	}
	var rec record
	if err := json.Unmarshal(env.Record, &rec); err != nil {
		return Pod{}, &refusal{reasonDamaged, fmt.Sprintf("is damaged (%v)", err)}
	}
	if rec.Pod.Pod == nil || rec.Pod.Pod.UID != uid {
		return Pod{}, &refusal{reasonDamaged, fmt.Sprintf("is damaged (it holds no pod of UID %s)", uid)}
	}
	if rec.Cluster != this {
		return Pod{}, &refusal{reasonOtherCluster, fmt.Sprintf("is of another cluster: kept for %s, and this is %s", rec.Cluster, this)}
	}
	return rec.Pod, nil
}

// stale are the kept UIDs that the API's full list of the node's pods
// does not have: the API deleted them, and its view wins.
func stale(kept []types.UID, live []*corev1.Pod) []types.UID {
	has := make(map[types.UID]bool, len(live))
	for _, p := range live {
		has[p.UID] = true
	}
	var out []types.UID
	for _, uid := range kept {
		if !has[uid] {
			out = append(out, uid)
		}
	}
	slices.Sort(out)
	return out
}

// newest is the pods with one per namespace/name: of two copies (the API
// replaced a pod by another of the same name, and the old one's removal
// did not happen before a crash) the one saved last stands; the others
// are returned apart. Both come sorted by namespace/name.
func newest(pods []Pod) (stand, superseded []Pod) {
	byKey := map[string]int{}
	for _, p := range pods {
		k := p.Key()
		i, ok := byKey[k]
		switch {
		case !ok:
			byKey[k] = len(stand)
			stand = append(stand, p)
		case p.Saved.After(stand[i].Saved):
			superseded = append(superseded, stand[i])
			stand[i] = p
		default:
			superseded = append(superseded, p)
		}
	}
	byName := func(a, b Pod) int { return strings.Compare(a.Key(), b.Key()) }
	slices.SortFunc(stand, byName)
	slices.SortFunc(superseded, byName)
	return stand, superseded
}

// essence is the sha256 of what a reboot needs of p: its metadata and
// spec, the phase it reached, its objects and tokens; not what changes
// with every status write (resourceVersion, managedFields, conditions,
// container statuses), so that a status update is not a write to the
// device's flash.
func essence(p Pod) ([32]byte, error) {
	q := *p.Pod
	q.ResourceVersion = ""
	q.ManagedFields = nil
	q.Status = corev1.PodStatus{Phase: p.Pod.Status.Phase}
	data, err := json.Marshal(struct {
		Pod        *corev1.Pod                               `json:"pod"`
		ConfigMaps map[string]*corev1.ConfigMap              `json:"configMaps,omitempty"`
		Secrets    map[string]*corev1.Secret                 `json:"secrets,omitempty"`
		Tokens     map[string]*authenticationv1.TokenRequest `json:"tokens,omitempty"`
	}{&q, p.ConfigMaps, p.Secrets, p.Tokens})
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(data), nil
}

// fileName is the file pod uid is kept in, or an error for a UID that
// cannot name a file (the API's are UUIDs).
func fileName(uid types.UID) (string, error) {
	s := string(uid)
	ok := s != "" && len(s) <= 128 && s[0] != '.'
	for _, r := range s {
		ok = ok && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}
	if !ok {
		return "", fmt.Errorf("UID %q cannot name a file", s)
	}
	return s + fileSuffix, nil
}

// uidOf is the UID a kept file's name says, "" for a name that is not a
// kept pod's.
func uidOf(name string) types.UID {
	uid, ok := strings.CutSuffix(name, fileSuffix)
	if !ok {
		return ""
	}
	if _, err := fileName(types.UID(uid)); err != nil {
		return ""
	}
	return types.UID(uid)
}

// fileSuffix ends every kept pod's file name.
const fileSuffix = ".json"

// asideName is the name a file refused for reason is kept aside under:
// its name, the reason, and when (UTC), as "UID.json.damaged.20261129T162455Z".
func asideName(name, reason string, now time.Time) string {
	return name + "." + reason + "." + now.UTC().Format("20060102T150405Z")
}
