// Package daemon keeps the pods described by a static-manifest directory
// (and optionally a URL) running, the way the kubelet runs static pods:
// inotify plus a periodic re-scan, debounced writes, no teardown on bad
// content, adoption after a restart.
package daemon

import (
	"sort"

	"github.com/podrun/podrun/manifest"
)

// Want is a pod some source asks for.
type Want struct {
	Pod    *manifest.Pod
	Source string // the file (absolute path) or URL it comes from
}

// Have is a pod found on the node that belongs to the daemon's sources.
type Have struct {
	UID, Namespace, Name string
	Source               string
	Complete             bool // its pipeline finished
	Supervised           bool // this process supervises it
}

func (h Have) key() string { return h.Namespace + "/" + h.Name }

// Plan is what one sync must do.
type Plan struct {
	Up    []*manifest.Pod // create, replace (graceful down, then up), or adopt unchanged ones
	Adopt []string        // UIDs of pods to keep as they are and supervise (their source is broken)
	Down  []Have          // pods no source wants any more
	// Refresh are unchanged pods this process supervises, whose config
	// volumes are rewritten in place when their ConfigMaps or Secrets
	// changed (unsupervised ones are in Up, which does the same).
	Refresh []*manifest.Pod
}

// Empty reports whether the plan does nothing.
func (p Plan) Empty() bool { return len(p.Up) == 0 && len(p.Adopt) == 0 && len(p.Down) == 0 }

// Decide compares what the sources want with what the node has. broken
// lists sources whose content could not be read or parsed: their pods are
// left running as last applied, never torn down.
func Decide(wants map[string]Want, broken map[string]bool, haves []Have) Plan {
	var p Plan
	seen := map[string]bool{}
	for _, h := range haves {
		w, wanted := wants[h.key()]
		switch {
		case wanted && w.Pod.UID == h.UID && h.Complete:
			seen[h.key()] = true
			if !h.Supervised {
				p.Up = append(p.Up, w.Pod) // unchanged: Up adopts it
			} else {
				p.Refresh = append(p.Refresh, w.Pod)
			}
		case wanted:
			// Changed or half made: Up replaces it (once per key).
		case broken[h.Source]:
			if !h.Supervised && h.Complete {
				p.Adopt = append(p.Adopt, h.UID)
			}
		default:
			p.Down = append(p.Down, h)
		}
	}
	keys := make([]string, 0, len(wants))
	for k := range wants {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !seen[k] {
			p.Up = append(p.Up, wants[k].Pod)
		}
	}
	return p
}
