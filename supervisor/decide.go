// The restart loop's decisions, pure: whether an ended attempt is
// restarted, and how its container waits for the next one (the waiting
// reason and message the kubelet would show, the back-off labels, on which
// attempt they are recorded). Loop.run only carries them out.

package supervisor

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/spec"
	"github.com/podrun/podrun/status"
)

// reasonCrashLoopBackOff is the waiting reason of a container in back-off.
const reasonCrashLoopBackOff = "CrashLoopBackOff"

// errorResync is when the kubelet syncs a pod again after a sync that
// failed (pod_workers.go's workerBackOffPeriod, jittered up to 15 s).
const errorResync = 10 * time.Second

// shouldRestart applies the restart policy (the pod's, or the container's
// own) to an attempt of c in role that ended with code; killed says it was
// killed for a failed probe. Such a container restarts under any policy
// but Never, whatever its exit code (the kubelet's
// shouldRestartOnFailure); one killed for a failed postStart hook goes by
// its exit code, as the kubelet's next sync finds it exited
// (ShouldContainerBeRestarted); a native sidecar restarts on any exit, an
// init container on failure unless the policy is Never.
func shouldRestart(role Role, c *corev1.Container, policy corev1.RestartPolicy, code uint32, killed bool) bool {
	if role == RoleSidecar {
		return true
	}
	// A container's own rules, then its own policy, override the pod's
	// (ContainerRestartRules): the first rule whose exit codes match
	// decides.
	if restart, matched := ruleFor(c.RestartPolicyRules, code); matched {
		return restart
	}
	if c.RestartPolicy != nil {
		policy = corev1.RestartPolicy(*c.RestartPolicy)
	}
	if role == RoleInit {
		return code != 0 && policy != corev1.RestartPolicyNever
	}
	switch policy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return code != 0 || killed
	}
	return false
}

// ruleFor finds the first rule matching exit code; matched reports
// whether one did, restart what it says (Restart is the only action).
func ruleFor(rules []corev1.ContainerRestartRule, code uint32) (restart, matched bool) {
	for _, r := range rules {
		if r.ExitCodes == nil {
			continue
		}
		in := slices.Contains(r.ExitCodes.Values, int32(code))
		if in == (r.ExitCodes.Operator == corev1.ContainerRestartRuleOnExitCodesOpIn) {
			return r.Action == corev1.ContainerRestartRuleActionRestart, true
		}
	}
	return false, false
}

// ended is what the loop knows of an attempt that ended and is to be
// restarted.
type ended struct {
	Name     string        // the container's
	Restarts int           // the attempt's number: restarts before it
	Code     uint32        // its exit code (128 when it could not start)
	Err      error         // its failure to start
	HookErr  string        // its postStart hook's failure
	Window   time.Duration // the back-off window after it (the kubelet's)
	Resume   time.Duration // the rest of an adopted attempt's back-off; < 0: none
	Now      time.Time
}

// attemptRef says which attempt's container records the waiting labels.
type attemptRef int

const (
	onNone     attemptRef = iota // none: nothing is recorded
	onEnded                      // the attempt that ended
	onPrevious                   // the one before it (this one made no container)
)

// wait is how a container waits for its next attempt.
type wait struct {
	Delay  time.Duration     // before the next attempt
	Labels map[string]string // the waiting reason, message and back-off
	On     attemptRef        // where Labels are recorded
	Report string            // the line on the progress stream
	// Counts: the next attempt is a restart. One after an attempt that
	// made no container is not (the kubelet's restartCount counts
	// containers).
	Counts bool
	// Turn is how far into Delay the reason turns to CrashLoopBackOff
	// (and the message is cleared); < 0: never.
	Turn time.Duration
}

// decideWait is the kubelet's view of a container between an attempt that
// ended and the next: which waiting reason and message its status shows
// (RunContainerError for one made but not started, PostStartHookError
// for a failed hook, CreateContainerConfigError for one never made,
// CrashLoopBackOff otherwise), and the back-off until the next attempt.
func decideWait(e ended) wait {
	w := wait{Delay: e.Window, On: onEnded, Counts: true, Turn: -1}
	if e.Resume >= 0 {
		w.Delay = e.Resume
	}
	w.Labels = map[string]string{labels.Waiting: reasonCrashLoopBackOff,
		labels.BackoffUntil:   e.Now.Add(w.Delay).UTC().Format(time.RFC3339Nano),
		labels.Backoff:        e.Window.String(),
		labels.WaitingMessage: ""} // an earlier CreateContainerConfigError's is stale
	var cfg *spec.ConfigError
	var serr *engine.StartError
	switch {
	case errors.As(e.Err, &serr):
		// Made but not started: the kubelet shows the attempt's error
		// (RunContainerError) until a later sync finds it in back-off.
		w.Labels[labels.Waiting], w.Labels[labels.WaitingMessage] = status.ReasonRunContainerError, labels.Clip(serr.Error())
		w.Report = fmt.Sprintf("container %q: back-off %s before restart %d", e.Name, w.Delay, e.Restarts+1)
	case e.HookErr != "":
		// The kubelet's next sync shows the hook's failure (its reason
		// cache) until a later one finds the container in back-off.
		w.Labels[labels.Waiting], w.Labels[labels.WaitingMessage] = status.ReasonPostStartHookError, labels.Clip(e.HookErr)
		w.Report = fmt.Sprintf("container %q: %s; back-off %s before restart %d", e.Name, e.HookErr, w.Delay, e.Restarts+1)
	case errors.As(e.Err, &cfg):
		// No container was made, so none counts as a restart and the
		// previous attempt carries the reason, as the kubelet shows it over
		// the last container's status.
		w.Labels[labels.Waiting], w.Labels[labels.WaitingMessage] = spec.ReasonCreateContainerConfigError, labels.Clip(cfg.Msg)
		w.Counts, w.On = false, onPrevious
		if e.Restarts == 0 {
			w.On = onNone
		}
		w.Report = fmt.Sprintf("container %q: back-off %s before trying to create it again", e.Name, w.Delay)
	case w.Delay == 0:
		w.On = onNone
		w.Report = fmt.Sprintf("container %q exited with code %d; restart %d", e.Name, e.Code, e.Restarts+1)
	default:
		w.Report = fmt.Sprintf("container %q exited with code %d; back-off %s before restart %d", e.Name, e.Code, w.Delay, e.Restarts+1)
	}
	w.Turn = crashLoopTurn(w.Labels[labels.Waiting], w.Delay)
	return w
}

// crashLoopTurn is how far into a back-off of delay an attempt shown
// waiting for reason is shown in CrashLoopBackOff; < 0: never. For
// RunContainerError it is once the kubelet's next sync would have found it
// in back-off, the one after errorResync; for a hook that failed, the one
// that restarts it (whose status, taken before, is what shows while the
// next hook runs).
func crashLoopTurn(reason string, delay time.Duration) time.Duration {
	switch {
	case reason == status.ReasonRunContainerError && delay > errorResync:
		return errorResync
	case reason == status.ReasonPostStartHookError && delay > 0:
		return min(delay, errorResync)
	}
	return -1
}
