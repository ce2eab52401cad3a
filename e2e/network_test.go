package e2e

// End-to-end tests of networking and names: hostPort through the portmap
// plugin (TCP and UDP on 127.0.0.1, hostIP binding, conflicts between pods,
// iptables rules gone after down and after a rollback), and the pod's
// /etc/hosts, /etc/resolv.conf and hostname as the kubelet writes them
// (hostAliases, dnsPolicy and dnsConfig, hostname, subdomain,
// setHostnameAsFQDN). Traffic goes to 127.0.0.x only; a dnsConfig
// nameserver is only written to a file, never queried. Helpers are
// prefixed nw; the pl helpers of pipeline_test.go are reused.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podrun/podrun/internal/testimage"
)

// udpEchoSource is a UDP server that answers every datagram with "echo:" and the
// datagram: busybox's nc has no UDP mode.
const udpEchoSource = `package main

import "net"

func main() {
	c, err := net.ListenPacket("udp", ":5353")
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 1500)
	for {
		n, addr, err := c.ReadFrom(buf)
		if err != nil {
			panic(err)
		}
		c.WriteTo(append([]byte("echo:"), buf[:n]...), addr)
	}
}
`

// udpEchoImage builds a static UDP echo server and imports an image with it
// as /udp-echo.
func udpEchoImage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"go.mod": "module udpecho\n\ngo 1.22\n", "main.go": udpEchoSource} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-o", "udp-echo", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the UDP echo server: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(filepath.Join(dir, "udp-echo"))
	if err != nil {
		t.Fatal(err)
	}
	return H.ImportImage(t, testimage.Config{Ref: "podrun.test/nw-udp-echo:1", Files: []testimage.File{{Path: "/udp-echo", Mode: 0o755, Data: bin}}})
}

// udpExchange sends msg to addr and returns the answer, retrying while the
// server is not up yet.
func udpExchange(t *testing.T, addr, msg string) string {
	t.Helper()
	var lastErr error
	for i := 0; i < 20; i++ {
		if i > 0 {
			time.Sleep(250 * time.Millisecond)
		}
		c, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 1500)
		_, err = c.Write([]byte(msg))
		var n int
		if err == nil {
			n, err = c.Read(buf)
		}
		c.Close()
		if err == nil {
			return string(buf[:n])
		}
		lastErr = err
	}
	t.Fatalf("UDP %s: no answer: %v", addr, lastErr)
	return ""
}

// newCNIRules returns the iptables lines mentioning CNI that are not in before,
// leaving out the chains and jumps portmap installs once and never removes.
func newCNIRules(t *testing.T, before map[string]bool) []string {
	t.Helper()
	now, err := e2eIptablesCNI()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range e2eNew(before, now) {
		if !e2eIptablesPlumbing(r) {
			out = append(out, r)
		}
	}
	return out
}

func iptablesLines(t *testing.T) map[string]bool {
	t.Helper()
	rules, err := e2eIptablesCNI()
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// webContainer is a container serving page on containerPort with busybox httpd.
func webContainer(name, page string, port int) string {
	return fmt.Sprintf(`  - name: %s
    image: %s
    command: ["sh", "-c", "mkdir -p /tmp/www && echo %s > /tmp/www/index.html && trap 'exit 0' TERM; httpd -f -p %d -h /tmp/www & wait"]
`, name, H.Image, page, port)
}

// TestNetworkHostPort: hostPorts reach the pod on 127.0.0.1 over TCP and
// UDP; a hostIP of 127.0.0.1 is DNATed there only; another pod asking for a
// held port is refused before anything starts; the portmap rules are gone
// after down, and after a failed pod is rolled back.
func TestNetworkHostPort(t *testing.T) {
	H.require(t)
	udpImage := udpEchoImage(t)
	before := iptablesLines(t)
	web, local, udp := freePort(t), freePort(t), freePort(t)
	file, _ := mustRunUp(t, "nw-ports", `apiVersion: v1
kind: Pod
metadata:
  name: nw-ports
spec:
  containers:
`+webContainer("web", "nw-web", 8080)+`    ports:
    - {containerPort: 8080, hostPort: `+strconv.Itoa(web)+`}
`+webContainer("local", "nw-local", 8081)+`    ports:
    - {containerPort: 8081, hostPort: `+strconv.Itoa(local)+`, hostIP: 127.0.0.1}
  - name: udp
    image: `+udpImage+`
    command: ["/udp-echo"]
    ports:
    - {containerPort: 5353, hostPort: `+strconv.Itoa(udp)+`, protocol: UDP}
`)
	if body := httpGetRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", web)); body != "nw-web\n" {
		t.Errorf("GET 127.0.0.1:%d = %q, want nw-web", web, body)
	}
	if body := httpGetRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", local)); body != "nw-local\n" {
		t.Errorf("GET 127.0.0.1:%d (hostIP 127.0.0.1) = %q, want nw-local", local, body)
	}
	if got := udpExchange(t, fmt.Sprintf("127.0.0.1:%d", udp), "nw-ping"); got != "echo:nw-ping" {
		t.Errorf("UDP 127.0.0.1:%d answered %q, want echo:nw-ping", udp, got)
	}
	// hostIP 127.0.0.1: the DNAT rule matches that address only, so the
	// same port on 127.0.0.2 reaches nothing.
	rules := strings.Join(newCNIRules(t, before), "\n")
	for _, want := range []string{
		fmt.Sprintf("-d 127.0.0.1/32 -p tcp -m tcp --dport %d", local),
		fmt.Sprintf("-p tcp -m tcp --dport %d", web),
		fmt.Sprintf("-p udp -m udp --dport %d", udp),
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("no iptables rule with %q among the pod's:\n%s", want, rules)
		}
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.2:%d", local), time.Second); err == nil {
		c.Close()
		t.Errorf("127.0.0.2:%d accepted a connection; hostIP 127.0.0.1 must bind that address only", local)
	}

	// A second pod asking for a held port is refused, and nothing of it runs.
	_, stdout, stderr, code := runUp(t, "nw-clash", `apiVersion: v1
kind: Pod
metadata:
  name: nw-clash
spec:
  containers:
`+webContainer("web", "nw-clash", 8080)+`    ports:
    - {containerPort: 8080, hostPort: `+strconv.Itoa(web)+`, hostIP: 127.0.0.1}
`)
	want := fmt.Sprintf("pod default/nw-clash refused by the node: NodePorts: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports (127.0.0.1:%d/TCP held by pod default/nw-ports); nothing was started", web)
	if code != 4 || !strings.Contains(stderr, want) {
		t.Errorf("up nw-clash: exit %d, stderr:\n%s\nwant exit 4 and %q", code, stderr, want)
	}
	if strings.Contains(stdout, "nw-clash") || psRow(t, "nw-clash", "-a") != nil || len(podContainers(t, "nw-clash")) != 0 {
		t.Errorf("nw-clash was started: stdout %q", stdout)
	}

	timeDown(t, file)
	if left := newCNIRules(t, before); len(left) != 0 {
		t.Errorf("iptables rules left after down:\n%s", strings.Join(left, "\n"))
	}
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", web), time.Second); err == nil {
		c.Close()
		t.Errorf("127.0.0.1:%d still answers after down", web)
	}

	// A pod whose init container fails is rolled back: CNI DEL removes its rules.
	_, _, stderr, code = runUp(t, "nw-rollback", `apiVersion: v1
kind: Pod
metadata:
  name: nw-rollback
spec:
  restartPolicy: Never
  initContainers:
  - name: fail
    image: `+H.Image+`
    command: ["false"]
  containers:
`+webContainer("web", "nw-rollback", 8080)+`    ports:
    - {containerPort: 8080, hostPort: `+strconv.Itoa(web)+`}
`)
	if code != 1 {
		t.Errorf("up nw-rollback: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if left := newCNIRules(t, before); len(left) != 0 {
		t.Errorf("iptables rules left after the rollback:\n%s", strings.Join(left, "\n"))
	}
}

// logSections splits a container's log into the sections it printed after
// "==name" marker lines.
func logSections(lines []string) map[string]string {
	out := map[string]string{}
	cur := ""
	for _, l := range lines {
		if name, ok := strings.CutPrefix(l, "=="); ok {
			cur = name
			out[cur] = ""
			continue
		}
		out[cur] += l + "\n"
	}
	return out
}

// showNetworkCommand prints the pod's names and resolver files between markers.
const showNetworkCommand = `["sh", "-c", "echo ==hostname; hostname; echo ==env; echo $HOSTNAME; echo ==hosts; cat /etc/hosts; echo ==resolv; cat /etc/resolv.conf"]`

// managedHostsHeader is the head of the kubelet's /etc/hosts for a pod network pod.
const managedHostsHeader = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"

const hostAliasesYAML = `  hostAliases:
  - ip: 10.1.2.3
    hostnames: [db, db.podrun.example]
  - ip: "2001:db8::7"
    hostnames: [cache]
`

const hostAliasLines = "\n# Entries added by HostAliases.\n10.1.2.3\tdb\tdb.podrun.example\n2001:db8::7\tcache\n"

// hostResolver is the host's resolver configuration, read independently
// of podrun: nameserver lines accumulate, the last search and options lines
// win; for a pod network pod, loopback nameservers are of no use and are
// replaced by systemd-resolved's upstream list, or dropped.
func hostResolver(t *testing.T, hostNetwork bool) (servers, searches, options []string) {
	t.Helper()
	parse := func(path string) (servers, searches, options []string) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, nil
		}
		for _, l := range strings.Split(string(data), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) >= 2 && f[0] == "nameserver":
				servers = append(servers, f[1])
			case len(f) >= 1 && f[0] == "search":
				searches = nil
				for _, s := range f[1:] {
					searches = append(searches, strings.TrimSuffix(s, "."))
				}
			case len(f) >= 1 && f[0] == "options":
				options = f[1:]
			}
		}
		return servers, searches, options
	}
	servers, searches, options = parse("/etc/resolv.conf")
	if hostNetwork {
		return servers, searches, options
	}
	var usable []string
	for _, s := range servers {
		if ip := net.ParseIP(s); ip == nil || !ip.IsLoopback() {
			usable = append(usable, s)
		}
	}
	if len(usable) == 0 && len(servers) > 0 {
		if up, s, o := parse("/run/systemd/resolve/resolv.conf"); len(up) > 0 {
			return up, s, o
		}
	}
	return usable, searches, options
}

// renderResolvConf renders a resolv.conf as containerd writes it.
func renderResolvConf(servers, searches, options []string) string {
	var b strings.Builder
	if len(searches) > 0 {
		b.WriteString("search " + strings.Join(searches, " ") + "\n")
	}
	for _, s := range servers {
		b.WriteString("nameserver " + s + "\n")
	}
	if len(options) > 0 {
		b.WriteString("options " + strings.Join(options, " ") + "\n")
	}
	return b.String()
}

func appendMissing(list []string, more ...string) []string {
	for _, m := range more {
		found := false
		for _, l := range list {
			found = found || l == m
		}
		if !found {
			list = append(list, m)
		}
	}
	return list
}

// checkSection compares section name of a container's output with want.
func checkSection(t *testing.T, pod, name, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %s is\n%s\nwant\n%s", pod, name, got, want)
	}
}

// TestNetworkNamesAndDNS: /etc/hosts, /etc/resolv.conf, the hostname and
// $HOSTNAME as the kubelet gives them: hostname, subdomain and
// setHostnameAsFQDN with --cluster-domain; hostAliases on the pod network
// and the host network; dnsPolicy None with dnsConfig alone, Default merged
// with dnsConfig, ClusterFirst falling back to Default (said once on stderr).
func TestNetworkNamesAndDNS(t *testing.T) {
	H.require(t)
	// dnsPolicy None, the FQDN as hostname, with a cluster domain given by flag.
	file := H.WriteManifest(t, "nw-fqdn.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: nw-fqdn
spec:
  restartPolicy: Never
  hostname: db-0
  subdomain: dbs
  setHostnameAsFQDN: true
  dnsPolicy: None
  dnsConfig:
    nameservers: [192.0.2.53, "2001:db8::53", 192.0.2.53]
    searches: [corp.podrun.example, svc.podrun.example, corp.podrun.example]
    options:
    - {name: ndots, value: "2"}
    - {name: edns0}
    - {name: ndots, value: "3"}
`+hostAliasesYAML+`  containers:
  - name: show
    image: `+H.Image+`
    command: `+showNetworkCommand+`
`)
	downOnCleanup(t, file)
	stdout, stderr, code := H.Podrun(t, "", "--cluster-domain", "podrun.internal", "up", file)
	if code != 0 {
		t.Fatalf("up nw-fqdn: exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "pod/default/nw-fqdn created (Succeeded)") {
		t.Errorf("up stdout = %q, want created (Succeeded)", stdout)
	}
	pod := podNamed(t, "nw-fqdn")
	out := logSections(containerLog(t, pod, "show", 0))
	fqdn := "db-0.dbs.default.svc.podrun.internal"
	checkSection(t, "nw-fqdn", "hostname", out["hostname"], fqdn+"\n")
	checkSection(t, "nw-fqdn", "$HOSTNAME", out["env"], fqdn+"\n")
	hosts := managedHostsHeader
	for _, ip := range pod.Status.PodIPs {
		hosts += ip.IP + "\t" + fqdn + "\tdb-0\n"
	}
	checkSection(t, "nw-fqdn", "/etc/hosts", out["hosts"], hosts+hostAliasLines)
	checkSection(t, "nw-fqdn", "/etc/resolv.conf", out["resolv"],
		"search corp.podrun.example svc.podrun.example\nnameserver 192.0.2.53\nnameserver 2001:db8::53\noptions ndots:3 edns0\n")

	// Default merged with dnsConfig, ClusterFirst, ClusterFirstWithHostNet
	// on the host network, in one up: the fallback is said once (--debug
	// says again what this host was told before).
	dnsFile := H.WriteManifest(t, "nw-dns.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: nw-merge
spec:
  restartPolicy: Never
  subdomain: web
  dnsPolicy: Default
  dnsConfig:
    nameservers: [192.0.2.53]
    searches: [podrun.example]
    options:
    - {name: ndots, value: "2"}
    - {name: single-request}
  containers:
  - name: show
    image: `+H.Image+`
    command: `+showNetworkCommand+`
---
apiVersion: v1
kind: Pod
metadata:
  name: nw-clusterfirst
spec:
  restartPolicy: Never
  containers:
  - name: show
    image: `+H.Image+`
    command: `+showNetworkCommand+`
---
apiVersion: v1
kind: Pod
metadata:
  name: nw-hostnet
spec:
  restartPolicy: Never
  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
`+hostAliasesYAML+`  containers:
  - name: show
    image: `+H.Image+`
    command: `+showNetworkCommand+`
`)
	downOnCleanup(t, dnsFile)
	stdout, stderr, code = H.Podrun(t, "", "--debug", "up", dnsFile)
	if code != 0 {
		t.Fatalf("up nw-dns: exit %d; stderr:\n%s", code, stderr)
	}
	for _, p := range []string{"nw-merge", "nw-clusterfirst", "nw-hostnet"} {
		if !strings.Contains(stdout, "pod/default/"+p+" created (Succeeded)") {
			t.Errorf("up stdout = %q, want %s created (Succeeded)", stdout, p)
		}
	}
	const note = "podrun has no cluster DNS: pods with dnsPolicy ClusterFirst or ClusterFirstWithHostNet fall back to Default"
	if n := strings.Count(stderr, note); n != 1 {
		t.Errorf("stderr says %d times %q, want once:\n%s", n, note, stderr)
	}
	// Without --debug, a host that was told is not told again.
	_, _, stderr, code = runUp(t, "nw-quiet", `apiVersion: v1
kind: Pod
metadata: {name: nw-quiet}
spec:
  restartPolicy: Never
  containers: [{name: c, image: `+H.Image+`, command: ["true"]}]
`)
	if code != 0 || strings.Contains(stderr, note) {
		t.Errorf("a second up (exit %d) says the note again:\n%s", code, stderr)
	}

	servers, searches, options := hostResolver(t, false)
	hostResolv := renderResolvConf(servers, searches, options)
	if hostResolv == "" { // containerd copies the host's file when there is nothing to write
		data, _ := os.ReadFile("/etc/resolv.conf")
		hostResolv = string(data)
	}

	pod = podNamed(t, "nw-merge")
	out = logSections(containerLog(t, pod, "show", 0))
	checkSection(t, "nw-merge", "hostname", out["hostname"], "nw-merge\n")
	hosts = managedHostsHeader
	for _, ip := range pod.Status.PodIPs {
		hosts += ip.IP + "\tnw-merge.web.default.svc.cluster.local\tnw-merge\n"
	}
	checkSection(t, "nw-merge", "/etc/hosts", out["hosts"], hosts)
	merged := appendMissing(append([]string(nil), servers...), "192.0.2.53")
	if len(merged) > 3 {
		merged = merged[:3]
	}
	// An option of the host's named like a pod's keeps its place with the pod's value.
	mergedOptions := append([]string(nil), options...)
	for i, o := range mergedOptions {
		if name, _, _ := strings.Cut(o, ":"); name == "ndots" {
			mergedOptions = append(append(append([]string(nil), mergedOptions[:i]...), "ndots:2"), mergedOptions[i+1:]...)
		}
	}
	mergedOptions = appendMissing(mergedOptions, "ndots:2", "single-request")
	checkSection(t, "nw-merge", "/etc/resolv.conf", out["resolv"],
		renderResolvConf(merged, appendMissing(append([]string(nil), searches...), "podrun.example"), mergedOptions))

	pod = podNamed(t, "nw-clusterfirst")
	out = logSections(containerLog(t, pod, "show", 0))
	checkSection(t, "nw-clusterfirst", "/etc/resolv.conf", out["resolv"], hostResolv)
	checkSection(t, "nw-clusterfirst", "$HOSTNAME", out["env"], "nw-clusterfirst\n")

	pod = podNamed(t, "nw-hostnet")
	out = logSections(containerLog(t, pod, "show", 0))
	nodeName, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	checkSection(t, "nw-hostnet", "hostname", out["hostname"], nodeName+"\n")
	etcHosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	checkSection(t, "nw-hostnet", "/etc/hosts", out["hosts"], "# Kubernetes-managed hosts file (host network).\n"+string(etcHosts)+hostAliasLines)
	hs, hsearch, hopt := hostResolver(t, true)
	want := renderResolvConf(hs, hsearch, hopt)
	if want == "" {
		data, _ := os.ReadFile("/etc/resolv.conf")
		want = string(data)
	}
	checkSection(t, "nw-hostnet", "/etc/resolv.conf", out["resolv"], want)
}

// TestNetworkRefusals: what the API server refuses (dnsPolicy None without
// nameservers, hostPort differing from containerPort on the host network,
// the same hostPort twice in a pod) is refused with field paths before
// anything runs; a setHostnameAsFQDN FQDN over 64 characters fails the pod
// with the kubelet's message.
func TestNetworkRefusals(t *testing.T) {
	H.require(t)
	file := H.WriteManifest(t, "nw-invalid.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: nw-invalid
spec:
  hostNetwork: true
  dnsPolicy: None
  dnsConfig:
    searches: [podrun.example]
  containers:
  - name: a
    image: `+H.Image+`
    ports:
    - {containerPort: 80, hostPort: 8080}
---
apiVersion: v1
kind: Pod
metadata:
  name: nw-invalid-ports
spec:
  containers:
  - name: a
    image: `+H.Image+`
    ports:
    - {containerPort: 80, hostPort: 9090}
  - name: b
    image: `+H.Image+`
    ports:
    - {containerPort: 81, hostPort: 9090, protocol: TCP}
`)
	_, stderr, code := H.Podrun(t, "", "up", file)
	for _, want := range []string{
		"spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None",
		"spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true",
		`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//9090"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("up nw-invalid: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != 2 {
		t.Errorf("up nw-invalid: exit %d, want 2", code)
	}

	long := strings.Repeat("n", 40)
	_, _, stderr, code = runUp(t, "nw-long", `apiVersion: v1
kind: Pod
metadata:
  name: `+long+`
spec:
  restartPolicy: Never
  subdomain: dbs
  setHostnameAsFQDN: true
  containers:
  - name: show
    image: `+H.Image+`
    command: ["hostname"]
`)
	fqdn := long + ".dbs.default.svc.cluster.local"
	want := fmt.Sprintf("FQDN %s is too long (64 characters is the max, %d characters requested)", fqdn, len(fqdn))
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("up nw-long: exit %d, want 1 and %q in stderr:\n%s", code, want, stderr)
	}
	if n := len(podContainers(t, long)); n != 0 {
		t.Errorf("nw-long: %d containers left after the failure", n)
	}
}
