package manifest

import (
	"strings"
	"testing"
)

func TestOptionsCheck(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string // "" for no error
	}{
		{"zero", Options{}, ""},
		{"everything", Options{Policy: "restricted", AllowedHostPaths: []string{"/srv", "/var/lib/data/"},
			AllowedUnsafeSysctls: []string{"kernel.msgmax", "kernel/msgmnb", "net.core.*", "kernel.shm*", "fs.mqueue.*", "kernel.sem"}}, ""},
		{"baseline", Options{Policy: "baseline"}, ""},
		{"every namespaced sysctl", Options{AllowedUnsafeSysctls: NamespacedSysctls}, ""},
		{"privileged", Options{Policy: "privileged"}, ""},
		{"unknown level", Options{Policy: "strict"}, `policy "strict": must be privileged, baseline or restricted`},
		{"relative host path", Options{AllowedHostPaths: []string{"/srv", "data"}}, `allowed host path "data": must be an absolute path`},
		{"malformed pattern", Options{AllowedUnsafeSysctls: []string{"net..core"}},
			`unsafe sysctl pattern "net..core": must have at most 253 characters and match regex ` + sysctlPatternFmt},
		{"star inside", Options{AllowedUnsafeSysctls: []string{"net.*.foo"}},
			`unsafe sysctl pattern "net.*.foo": must have at most 253 characters and match regex ` + sysctlPatternFmt},
		{"not namespaced", Options{AllowedUnsafeSysctls: []string{"kernel.panic"}},
			`unsafe sysctl pattern "kernel.panic": not known to be namespaced (only IPC and network sysctls can be allowed)`},
		{"not namespaced prefix", Options{AllowedUnsafeSysctls: []string{"kernel.*"}},
			`unsafe sysctl pattern "kernel.*": not known to be namespaced (only IPC and network sysctls can be allowed)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := tt.o.Check(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Check() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHostPathAllowed(t *testing.T) {
	tests := []struct {
		allowed []string
		path    string
		want    bool
	}{
		{nil, "/etc", true},
		{[]string{"/foo"}, "/foo", true},
		{[]string{"/foo"}, "/foo/bar", true},
		{[]string{"/foo"}, "/foo/", true},
		{[]string{"/foo/"}, "/foo/bar", true},
		{[]string{"/foo"}, "/foobar", false},
		{[]string{"/foo"}, "/fo", false},
		{[]string{"/foo"}, "/", false},
		{[]string{"/foo"}, "/foo/./bar//baz", true},
		{[]string{"/foo/bar"}, "/foo", false},
		{[]string{"/tmp", "/srv/data"}, "/srv/data/x", true},
		{[]string{"/tmp", "/srv/data"}, "/etc", false},
		{[]string{"/"}, "/etc", true},
	}
	for _, tt := range tests {
		if got := (Options{AllowedHostPaths: tt.allowed}).hostPathAllowed(tt.path); got != tt.want {
			t.Errorf("allowed %q, path %q: got %v, want %v", tt.allowed, tt.path, got, tt.want)
		}
	}
}

func TestSysctlForbidden(t *testing.T) {
	const notAllowlisted = "forbidden sysctl: not allowlisted"
	const notNamespaced = "forbidden sysctl: not namespaced"
	tests := []struct {
		allowed []string
		name    string
		want    string // prefix of the message; "" for allowed
	}{
		{nil, "net.ipv4.tcp_syncookies", ""},
		{nil, "kernel.shm_rmid_forced", ""},
		{nil, "kernel.msgmax", notAllowlisted},
		{nil, "net.core.somaxconn", notAllowlisted},
		{nil, "kernel.panic", notNamespaced},
		{nil, "vm.swappiness", notNamespaced},
		{[]string{"kernel.msgmax"}, "kernel.msgmax", ""},
		{[]string{"kernel.msgmax"}, "kernel.msgmnb", notAllowlisted},
		{[]string{"kernel/msgmax"}, "kernel.msgmax", ""},
		{[]string{"kernel.msg*"}, "kernel.msgmnb", ""},
		{[]string{"net.core.*"}, "net.core.somaxconn", ""},
		{[]string{"net.core.*"}, "net.ipv4.tcp_rmem", notAllowlisted},
		{[]string{"fs.mqueue.*"}, "fs.mqueue.msg_max", ""},
		// A pattern that names non-namespaced sysctls (which Check refuses)
		// never lets one through.
		{[]string{"kernel.*"}, "kernel.panic", notNamespaced},
		{[]string{"vm.swappiness"}, "vm.swappiness", notNamespaced},
		{NamespacedSysctls, "kernel.sem", ""},
		{NamespacedSysctls, "kernel.shmmax", ""},
		{NamespacedSysctls, "kernel.msgmnb", ""},
		{NamespacedSysctls, "fs.mqueue.queues_max", ""},
		{NamespacedSysctls, "net.ipv6.conf.all.forwarding", ""},
		{NamespacedSysctls, "kernel.panic", notNamespaced},
		{NamespacedSysctls, "fs.file-max", notNamespaced},
	}
	for _, tt := range tests {
		got := (Options{AllowedUnsafeSysctls: tt.allowed}).sysctlForbidden(tt.name)
		if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
			t.Errorf("allowed %q, sysctl %q: got %q, want %q...", tt.allowed, tt.name, got, tt.want)
		}
	}
}

// nonCompliant breaks the baseline and restricted levels, uses /etc and an
// unsafe sysctl.
const nonCompliant = `apiVersion: v1
kind: Pod
metadata: {name: loose}
spec:
  hostPID: true
  securityContext:
    sysctls: [{name: kernel.msgmax, value: "65536"}]
  volumes:
  - {name: etc, hostPath: {path: /etc}}
  - {name: data, hostPath: {path: /srv/data/x}}
  containers:
  - name: app
    image: busybox:1.36
    ports: [{containerPort: 80, hostPort: 8080}]
    volumeMounts: [{name: etc, mountPath: /host-etc}, {name: data, mountPath: /data}]
`

// compliant meets the restricted level (as stored: nothing in it is
// defaulted by podrun's runtime defaults).
const compliant = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: tight}
  spec:
    securityContext:
      runAsNonRoot: true
      runAsUser: 1000
      seccompProfile: {type: RuntimeDefault}
    volumes: [{name: scratch, emptyDir: {}}]
    containers:
    - name: app
      image: busybox:1.36
      securityContext:
        allowPrivilegeEscalation: false
        capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}
      volumeMounts: [{name: scratch, mountPath: /scratch}]
`

func TestOptionsParse(t *testing.T) {
	tests := []struct {
		name  string
		o     Options
		input string
		want  []string
	}{
		{"zero options refuse only the unsafe sysctl", Options{}, nonCompliant, []string{
			`pod.yaml (document 1): spec.securityContext.sysctls[0].name: Invalid value: "kernel.msgmax": forbidden sysctl: not allowlisted (not one of the safe sysctls: allow an unsafe one with --allowed-unsafe-sysctls)`,
		}},
		{"allowed unsafe sysctl and host paths", Options{AllowedUnsafeSysctls: []string{"kernel.msg*"}, AllowedHostPaths: []string{"/srv/data", "/tmp"}},
			nonCompliant, []string{
				`pod.yaml (document 1): spec.volumes[0].hostPath.path: Invalid value: "/etc": is not under an allowed host path (--allowed-host-paths /srv/data,/tmp)`,
			}},
		{"baseline", Options{Policy: "baseline", AllowedUnsafeSysctls: []string{"kernel.msgmax"}}, nonCompliant, []string{
			`pod.yaml (document 1): violates PodSecurity "baseline:latest": host namespaces (hostPID=true)`,
			`pod.yaml (document 1): violates PodSecurity "baseline:latest": hostPath volumes (volumes "etc", "data")`,
			`pod.yaml (document 1): violates PodSecurity "baseline:latest": hostPort (container "app" uses hostPort 8080)`,
			`pod.yaml (document 1): violates PodSecurity "baseline:latest": forbidden sysctls (kernel.msgmax)`,
		}},
		{"restricted", Options{Policy: "restricted", AllowedUnsafeSysctls: []string{"kernel.msgmax"}}, nonCompliant, []string{
			`pod.yaml (document 1): violates PodSecurity "restricted:latest": host namespaces (hostPID=true)`,
			`pod.yaml (document 1): violates PodSecurity "restricted:latest": hostPort (container "app" uses hostPort 8080)`,
			`pod.yaml (document 1): violates PodSecurity "restricted:latest": forbidden sysctls (kernel.msgmax)`,
			`pod.yaml (document 1): violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)`,
			`pod.yaml (document 1): violates PodSecurity "restricted:latest": unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"])`,
			`pod.yaml (document 1): violates PodSecurity "restricted:latest": restricted volume types (volumes "etc", "data" use restricted volume type "hostPath")`,
			`pod.yaml (document 1): violates PodSecurity "restricted:latest": runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true)`,
			`pod.yaml (document 1): violates PodSecurity "restricted:latest": seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
		}},
		{"privileged allows everything", Options{Policy: "privileged", AllowedUnsafeSysctls: []string{"kernel.msgmax"}}, nonCompliant, nil},
		{"restricted, compliant List item", Options{Policy: "restricted"}, compliant, nil},
		{"restricted, List item", Options{Policy: "restricted"}, strings.Replace(compliant, "runAsNonRoot: true", "runAsNonRoot: false", 1), []string{
			`pod.yaml (document 1): items[0]: violates PodSecurity "restricted:latest": runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.o.Parse("pod.yaml", []byte(tt.input))
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

// TestLoadOptions checks that Load applies the options to files as Parse does.
func TestLoadOptions(t *testing.T) {
	_, err := Options{Policy: "restricted"}.Load([]string{"-"}, strings.NewReader(compliant))
	if err != nil {
		t.Errorf("compliant pod: %v", err)
	}
	_, err = Options{Policy: "baseline", AllowedUnsafeSysctls: []string{"kernel.msgmax"}}.Load([]string{"-"}, strings.NewReader(nonCompliant))
	ps, ok := err.(Problems)
	if !ok || len(ps) != 4 || ps[0].Source.String() != "stdin (document 1)" {
		t.Errorf("non-compliant pod: got %v, want 4 problems of stdin (document 1)", err)
	}
}

// TestPolicyRefusesNodeCritical: system-node-critical (oom_score_adj -997)
// is refused under a policy and allowed without one.
func TestPolicyRefusesNodeCritical(t *testing.T) {
	doc := []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priorityClassName: system-node-critical\n  containers: [{name: c, image: i:1}]\n")
	if _, err := (Options{}).Parse("p.yaml", doc); err != nil {
		t.Errorf("without a policy: %v", err)
	}
	for _, level := range []string{"baseline", "restricted"} {
		_, err := Options{Policy: level}.Parse("p.yaml", doc)
		if err == nil || !strings.Contains(err.Error(), "spec.priorityClassName: Forbidden: system-node-critical") {
			t.Errorf("--policy %s: %v", level, err)
		}
	}
}
