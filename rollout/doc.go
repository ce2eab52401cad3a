// Package rollout is kubectl's rollout verbs for the pods of one node: the
// versions of each pod that became Ready (History: `rollout history`),
// going back to one of them (Undo; the daemon's RollBack of a version that
// failed, which stands in for its file's until the file changes), and
// where a pod's newest version stands (Progress, AwaitRollout: `rollout
// status`, on the verdict of rollout/progress). Its History is the
// run.Versions hook through which the pod lifecycle records a version that
// became Ready and forgets a pod removed; the verbs use the lifecycle
// through Lifecycle.
package rollout
