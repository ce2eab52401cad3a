package jobs

import (
	"context"
	"path/filepath"

	"k8s.io/utils/clock"

	"github.com/podrun/podrun/run"
	"github.com/podrun/podrun/volumes"
)

// Lifecycle is what the Job and CronJob controllers ask of the pods on this
// node; run.Host is it.
type Lifecycle interface {
	// Pods lists the pods on the node.
	Pods(ctx context.Context) ([]*run.PodInfo, error)
	// SyncPod makes pod key as w wants it, under its lock, deciding from
	// snapshot (a listing of the node taken before); the pod's outcomes.
	SyncPod(ctx context.Context, key string, w run.Want, o run.UpOptions, snapshot []*run.PodInfo) []run.Result
	// RemovePod takes pod uid, named key, down under its lock.
	RemovePod(ctx context.Context, key, uid string) error
	// DownUID takes pod uid down without its lock.
	DownUID(ctx context.Context, uid string) error
	// Report tells what happened, as the pods' steps are told.
	Report(e run.Event)
}

// Controller runs the Jobs and CronJobs of this node on its pods. A finished
// Job's status is recorded in a file of its own (recordJob), as a cluster
// keeps it in the Job object: the pods that ran may be gone.
type Controller struct {
	life  Lifecycle
	dir   string // <root>/jobs: the finished Jobs' records
	clock clock.Clock
	disk  volumes.Disk // writes the records atomically
}

// New is the controller of the Jobs on life's node, whose state directory
// is root.
func New(life Lifecycle, root string) *Controller {
	return &Controller{life: life, dir: filepath.Join(root, "jobs"), clock: clock.RealClock{}}
}
