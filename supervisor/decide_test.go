package supervisor

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podrun/podrun/engine"
	"github.com/podrun/podrun/labels"
	"github.com/podrun/podrun/spec"
)

func TestShouldRestart(t *testing.T) {
	always, never := corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicy(corev1.RestartPolicyNever)
	rule := func(op corev1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) []corev1.ContainerRestartRule {
		return []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}}
	}
	tests := []struct {
		name   string
		role   Role
		c      corev1.Container
		policy corev1.RestartPolicy
		code   uint32
		killed bool
		want   bool
	}{
		{name: "app Always, success", policy: corev1.RestartPolicyAlways, want: true},
		{name: "app Always, failure", policy: corev1.RestartPolicyAlways, code: 1, want: true},
		{name: "app OnFailure, success", policy: corev1.RestartPolicyOnFailure, want: false},
		{name: "app OnFailure, failure", policy: corev1.RestartPolicyOnFailure, code: 2, want: true},
		{name: "app OnFailure, killed by a probe, exit 0", policy: corev1.RestartPolicyOnFailure, killed: true, want: true},
		{name: "app Never, failure", policy: corev1.RestartPolicyNever, code: 1, want: false},
		{name: "app Never, killed by a probe", policy: corev1.RestartPolicyNever, code: 137, killed: true, want: false},
		{name: "sidecar under Never, success", role: RoleSidecar, policy: corev1.RestartPolicyNever, want: true},
		{name: "init Always, success", role: RoleInit, policy: corev1.RestartPolicyAlways, want: false},
		{name: "init OnFailure, failure", role: RoleInit, policy: corev1.RestartPolicyOnFailure, code: 1, want: true},
		{name: "init Never, failure", role: RoleInit, policy: corev1.RestartPolicyNever, code: 1, want: false},
		{name: "container's own policy over the pod's", c: corev1.Container{RestartPolicy: &always},
			policy: corev1.RestartPolicyNever, want: true},
		{name: "container's own Never over the pod's Always", c: corev1.Container{RestartPolicy: &never},
			policy: corev1.RestartPolicyAlways, code: 1, want: false},
		{name: "rule In matches", c: corev1.Container{RestartPolicy: &never, RestartPolicyRules: rule(corev1.ContainerRestartRuleOnExitCodesOpIn, 42)},
			policy: corev1.RestartPolicyNever, code: 42, want: true},
		{name: "rule In misses: the policy decides", c: corev1.Container{RestartPolicy: &never, RestartPolicyRules: rule(corev1.ContainerRestartRuleOnExitCodesOpIn, 42)},
			policy: corev1.RestartPolicyNever, code: 1, want: false},
		{name: "rule NotIn matches", c: corev1.Container{RestartPolicy: &never, RestartPolicyRules: rule(corev1.ContainerRestartRuleOnExitCodesOpNotIn, 0)},
			policy: corev1.RestartPolicyNever, code: 3, want: true},
		{name: "rule without exit codes is skipped", c: corev1.Container{RestartPolicyRules: []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart}}},
			policy: corev1.RestartPolicyNever, code: 1, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shouldRestart(tt.role, &tt.c, tt.policy, tt.code, tt.killed); got != tt.want {
				t.Errorf("shouldRestart = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecideWait(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.FixedZone("X", 3600))
	until := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339Nano) }
	startErr := &engine.StartError{Err: errors.New("exec: \"nope\": not found")}
	cfgErr := fmt.Errorf("building: %w", &spec.ConfigError{Container: "app", Msg: "secret \"s\" not found"})
	long := strings.Repeat("x", labels.MaxMessage+10)
	waiting := func(reason, msg, until, window string) map[string]string {
		return map[string]string{labels.Waiting: reason, labels.WaitingMessage: msg, labels.BackoffUntil: until, labels.Backoff: window}
	}
	tests := []struct {
		name string
		in   ended
		want wait
	}{
		{
			name: "first exit restarts at once, nothing recorded",
			in:   ended{Restarts: 0, Code: 1, Window: 0, Resume: -1},
			want: wait{Delay: 0, On: onNone, Counts: true, Turn: -1, Report: `container "app" exited with code 1; restart 1`,
				Labels: waiting("CrashLoopBackOff", "", until(0), "0s")},
		},
		{
			name: "exit in back-off: CrashLoopBackOff on the attempt",
			in:   ended{Restarts: 2, Code: 137, Window: 20 * time.Second, Resume: -1},
			want: wait{Delay: 20 * time.Second, On: onEnded, Counts: true, Turn: -1,
				Report: `container "app" exited with code 137; back-off 20s before restart 3`,
				Labels: waiting("CrashLoopBackOff", "", until(20*time.Second), "20s")},
		},
		{
			name: "adopted attempt resumes the rest of its back-off",
			in:   ended{Restarts: 3, Code: 1, Window: 40 * time.Second, Resume: 5 * time.Second},
			want: wait{Delay: 5 * time.Second, On: onEnded, Counts: true, Turn: -1,
				Report: `container "app" exited with code 1; back-off 5s before restart 4`,
				Labels: waiting("CrashLoopBackOff", "", until(5*time.Second), "40s")},
		},
		{
			name: "adopted attempt whose back-off is over restarts at once",
			in:   ended{Restarts: 3, Code: 1, Window: 40 * time.Second, Resume: 0},
			want: wait{Delay: 0, On: onNone, Counts: true, Turn: -1, Report: `container "app" exited with code 1; restart 4`,
				Labels: waiting("CrashLoopBackOff", "", until(0), "40s")},
		},
		{
			name: "made but not started: RunContainerError, CrashLoopBackOff after the next sync",
			in:   ended{Restarts: 1, Code: 128, Err: startErr, Window: 20 * time.Second, Resume: -1},
			want: wait{Delay: 20 * time.Second, On: onEnded, Counts: true, Turn: errorResync,
				Report: `container "app": back-off 20s before restart 2`,
				Labels: waiting("RunContainerError", startErr.Error(), until(20*time.Second), "20s")},
		},
		{
			name: "RunContainerError with a back-off shorter than a resync keeps its reason",
			in:   ended{Restarts: 0, Code: 128, Err: startErr, Window: 0, Resume: -1},
			want: wait{Delay: 0, On: onEnded, Counts: true, Turn: -1,
				Report: `container "app": back-off 0s before restart 1`,
				Labels: waiting("RunContainerError", startErr.Error(), until(0), "0s")},
		},
		{
			name: "postStart hook failed: PostStartHookError until the restarting sync",
			in:   ended{Restarts: 1, Code: 137, HookErr: "postStart hook failed: boom", Window: 40 * time.Second, Resume: -1},
			want: wait{Delay: 40 * time.Second, On: onEnded, Counts: true, Turn: errorResync,
				Report: `container "app": postStart hook failed: boom; back-off 40s before restart 2`,
				Labels: waiting("PostStartHookError", "postStart hook failed: boom", until(40*time.Second), "40s")},
		},
		{
			name: "postStart hook failed, back-off shorter than a resync: turns when it ends",
			in:   ended{Restarts: 1, Code: 137, HookErr: "postStart hook failed: boom", Window: 5 * time.Second, Resume: -1},
			want: wait{Delay: 5 * time.Second, On: onEnded, Counts: true, Turn: 5 * time.Second,
				Report: `container "app": postStart hook failed: boom; back-off 5s before restart 2`,
				Labels: waiting("PostStartHookError", "postStart hook failed: boom", until(5*time.Second), "5s")},
		},
		{
			name: "postStart hook failed, restarted at once: never turns",
			in:   ended{Restarts: 0, Code: 0, HookErr: "postStart hook failed: boom", Window: 0, Resume: -1},
			want: wait{Delay: 0, On: onEnded, Counts: true, Turn: -1,
				Report: `container "app": postStart hook failed: boom; back-off 0s before restart 1`,
				Labels: waiting("PostStartHookError", "postStart hook failed: boom", until(0), "0s")},
		},
		{
			name: "a start error wins over a hook failure",
			in:   ended{Restarts: 0, Code: 128, Err: startErr, HookErr: "postStart hook failed: boom", Window: 0, Resume: -1},
			want: wait{Delay: 0, On: onEnded, Counts: true, Turn: -1,
				Report: `container "app": back-off 0s before restart 1`,
				Labels: waiting("RunContainerError", startErr.Error(), until(0), "0s")},
		},
		{
			name: "config error on the first attempt: no container to record it, not a restart",
			in:   ended{Restarts: 0, Code: 128, Err: cfgErr, Window: 0, Resume: -1},
			want: wait{Delay: 0, On: onNone, Counts: false, Turn: -1,
				Report: `container "app": back-off 0s before trying to create it again`,
				Labels: waiting("CreateContainerConfigError", `secret "s" not found`, until(0), "0s")},
		},
		{
			name: "config error after restarts: recorded on the previous attempt",
			in:   ended{Restarts: 2, Code: 128, Err: cfgErr, Window: 10 * time.Second, Resume: -1},
			want: wait{Delay: 10 * time.Second, On: onPrevious, Counts: false, Turn: -1,
				Report: `container "app": back-off 10s before trying to create it again`,
				Labels: waiting("CreateContainerConfigError", `secret "s" not found`, until(10*time.Second), "10s")},
		},
		{
			name: "a start error that is no StartError nor ConfigError is a plain exit",
			in:   ended{Restarts: 1, Code: 128, Err: errors.New("creating task: boom"), Window: 10 * time.Second, Resume: -1},
			want: wait{Delay: 10 * time.Second, On: onEnded, Counts: true, Turn: -1,
				Report: `container "app" exited with code 128; back-off 10s before restart 2`,
				Labels: waiting("CrashLoopBackOff", "", until(10*time.Second), "10s")},
		},
		{
			name: "a long message is clipped",
			in:   ended{Restarts: 1, Code: 137, HookErr: long, Window: 10 * time.Second, Resume: -1},
			want: wait{Delay: 10 * time.Second, On: onEnded, Counts: true, Turn: errorResync,
				Report: `container "app": ` + long + `; back-off 10s before restart 2`,
				Labels: waiting("PostStartHookError", long[:labels.MaxMessage], until(10*time.Second), "10s")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Name, tt.in.Now = "app", now
			got := decideWait(tt.in)
			if !maps.Equal(got.Labels, tt.want.Labels) {
				t.Errorf("labels = %v\nwant     %v", got.Labels, tt.want.Labels)
			}
			got.Labels, tt.want.Labels = nil, nil
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("decideWait = %+v\nwant         %+v", got, tt.want)
			}
		})
	}
}

func TestCrashLoopTurn(t *testing.T) {
	tests := []struct {
		reason string
		delay  time.Duration
		want   time.Duration
	}{
		{"CrashLoopBackOff", time.Minute, -1},
		{"CreateContainerConfigError", time.Minute, -1},
		{"RunContainerError", errorResync, -1}, // not longer than a resync: keeps its reason
		{"RunContainerError", errorResync + 1, errorResync},
		{"PostStartHookError", 0, -1},
		{"PostStartHookError", 3 * time.Second, 3 * time.Second},
		{"PostStartHookError", time.Minute, errorResync},
	}
	for _, tt := range tests {
		if got := crashLoopTurn(tt.reason, tt.delay); got != tt.want {
			t.Errorf("crashLoopTurn(%s, %v) = %v, want %v", tt.reason, tt.delay, got, tt.want)
		}
	}
}
