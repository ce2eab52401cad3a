package manifest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func hostPathVolume(name, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
}

func emptyDirVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// TestValidate applies one mutation to a valid pod and checks the errors of
// the defaulted result, in order.
func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []string
	}{
		{"valid", func(p *corev1.Pod) {}, nil},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil },
			[]string{"spec.containers: Required value"}},
		{"no name", func(p *corev1.Pod) { p.Name = "" },
			[]string{"metadata.name: Required value"}},
		{"annotation key", func(p *corev1.Pod) { p.Annotations = map[string]string{"a/b/c": "x", "ok": "y"} },
			[]string{`metadata.annotations: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`}},
		{"label value", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "has space"} },
			[]string{`metadata.labels: Invalid value: "has space": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{"image with uppercase repository", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "Nginx:1.27" },
			[]string{`spec.containers[0].image: Invalid value: "Nginx:1.27": invalid reference format: repository name (library/Nginx) must be lowercase`}},
		{"image with whitespace", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.27 " },
			[]string{`spec.containers[0].image: Invalid value: "nginx:1.27 ": must not have leading or trailing whitespace`}},
		{"image with a bad tag", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.27:2" },
			[]string{`spec.containers[0].image: Invalid value: "nginx:1.27:2": invalid reference format`}},
		{"init container without image", func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "init"}} },
			[]string{"spec.initContainers[0].image: Required value"}},
		{"container without name", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" },
			[]string{"spec.containers[0].name: Required value"}},
		{"restartPolicy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			[]string{`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`}},
		{"negative grace period", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) },
			[]string{"spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0"}},
		{"zero grace period", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(0)) }, nil},
		{"imagePullPolicy", func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" },
			[]string{`spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`}},
		{"terminationMessagePolicy", func(p *corev1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "Stdout" },
			[]string{`spec.containers[0].terminationMessagePolicy: Unsupported value: "Stdout": supported values: "File", "FallbackToLogsOnError"`}},
		{"dnsPolicy None", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			[]string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"}},
		{"dnsPolicy unknown", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Google" },
			[]string{`spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"`}},
		{"dnsPolicy Default", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault }, nil},
		{"hostname", func(p *corev1.Pod) { p.Spec.Hostname = "web.local" },
			[]string{`spec.hostname: Invalid value: "web.local": must not contain dots`}},
		{"ports", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{
				{Name: "http", ContainerPort: 80},
				{Name: "http", ContainerPort: 0, HostPort: 70000, Protocol: "ICMP"},
				{Name: "Not_A_Name", ContainerPort: 443, HostIP: "localhost"},
			}
		}, []string{
			`spec.containers[0].ports[1].name: Duplicate value: "http"`,
			"spec.containers[0].ports[1].containerPort: Required value",
			"spec.containers[0].ports[1].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
			`spec.containers[0].ports[1].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`,
			`spec.containers[0].ports[2].name: Invalid value: "Not_A_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
			`spec.containers[0].ports[2].hostIP: Invalid value: "localhost": must be a valid IP address`,
		}},
		{"hostNetwork hostPort differs", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}, []string{"spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"}},
		{"same hostPort twice", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "other", Image: "nginx",
				Ports: []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}, {ContainerPort: 82, HostPort: 8080, Protocol: corev1.ProtocolUDP}}})
		}, []string{`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"`}},
		{"env names", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "OK_1"}, {Name: "my.dotted-name"}, {Name: ""}, {Name: "A=B"}}
		}, []string{
			"spec.containers[0].env[2].name: Required value",
			`spec.containers[0].env[3].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
		}},
		{"mounts", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{emptyDirVolume("data")}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
				{Name: "data", MountPath: "/data", SubPath: "a/b"},
				{Name: "data", MountPath: "/data"},
				{Name: "missing", MountPath: "relative"},
				{Name: "", MountPath: ""},
				{Name: "data", MountPath: "/x", SubPath: "/abs"},
				{Name: "data", MountPath: "/y", SubPath: "a/../../b"},
			}
		}, []string{
			`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique`,
			`spec.containers[0].volumeMounts[2].name: Not found: "missing"`,
			`spec.containers[0].volumeMounts[2].mountPath: Invalid value: "relative": must be an absolute path`,
			"spec.containers[0].volumeMounts[3].name: Required value",
			"spec.containers[0].volumeMounts[3].mountPath: Required value",
			`spec.containers[0].volumeMounts[4].subPath: Invalid value: "/abs": must be a relative path`,
			`spec.containers[0].volumeMounts[5].subPath: Invalid value: "a/../../b": must not contain '..'`,
		}},
		{"hostPath", func(p *corev1.Pod) {
			bad := hostPathVolume("typed", "/srv")
			bad.HostPath.Type = ptr(corev1.HostPathType("Pipe"))
			p.Spec.Volumes = []corev1.Volume{hostPathVolume("empty", ""), hostPathVolume("relative", "srv/data"), hostPathVolume("dotdot", "/srv/.."), bad,
				hostPathVolume("dots-in-names", "/srv/..data/a..b")}
		}, []string{
			"spec.volumes[0].hostPath.path: Required value",
			`spec.volumes[1].hostPath.path: Invalid value: "srv/data": must be an absolute path`,
			`spec.volumes[2].hostPath.path: Invalid value: "/srv/..": must not contain '..'`,
			`spec.volumes[3].hostPath.type: Unsupported value: "Pipe": supported values: "", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"`,
		}},
		{"emptyDir", func(p *corev1.Pod) {
			mem, zero := emptyDirVolume("mem"), emptyDirVolume("zero")
			mem.EmptyDir.Medium = "HugePages"
			zero.EmptyDir.SizeLimit = ptr(resource.MustParse("0"))
			sized := emptyDirVolume("sized")
			sized.EmptyDir.SizeLimit = ptr(resource.MustParse("64Mi"))
			huge := emptyDirVolume("huge") // a tmpfs size= of -2^63 on cbe04fe
			huge.EmptyDir.SizeLimit = ptr(resource.MustParse("1e19"))
			p.Spec.Volumes = []corev1.Volume{mem, zero, sized, huge}
		}, []string{
			`spec.volumes[0].emptyDir.medium: Unsupported value: "HugePages": supported values: "", "Memory"`,
			`spec.volumes[1].emptyDir.sizeLimit: Invalid value: "0": must be greater than 0`,
			`spec.volumes[3].emptyDir.sizeLimit: Invalid value: "10e18": must be less than or equal to 9223372036854775807, the most bytes a tmpfs size holds`,
		}},
		{"volume sources", func(p *corev1.Pod) {
			two := emptyDirVolume("two")
			two.HostPath = &corev1.HostPathVolumeSource{Path: "/srv"}
			p.Spec.Volumes = []corev1.Volume{{Name: "none"}, two, emptyDirVolume("")}
		}, []string{
			"spec.volumes[0]: Required value: must specify a volume type",
			"spec.volumes[1]: Forbidden: may not specify more than 1 volume type",
			"spec.volumes[2].name: Required value",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidate(t, tt.mutate, tt.want)
		})
	}
}

// checkValidate validates basePod changed by mutate and defaulted, and
// compares the problems with want, in order.
func checkValidate(t *testing.T, mutate func(*corev1.Pod), want []string) {
	t.Helper()
	pod := basePod()
	mutate(pod)
	Default(pod)
	var got []string
	for _, e := range Validate(pod) {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
