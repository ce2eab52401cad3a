package registry

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseInsecure checks an --insecure-registry value, HOST or HOST:PORT (no
// scheme, no path), and returns it lower-cased.
func ParseInsecure(v string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("--insecure-registry %q: %s; want HOST or HOST:PORT, e.g. registry.lan:5000", v, why)
	}
	switch {
	case v == "":
		return "", bad("empty")
	case strings.Contains(v, "://"):
		return "", bad("no scheme please")
	case strings.ContainsAny(v, "/ \t"):
		return "", bad("no path or spaces please")
	}
	if host, port, err := net.SplitHostPort(v); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
			return "", bad("bad port")
		}
	} else if strings.Count(v, ":") == 1 {
		return "", bad("bad port")
	}
	return strings.ToLower(v), nil
}

// IsInsecure reports whether a registry host (host or host:port, as in an
// image reference) is listed: an entry with a port matches that port only,
// an entry without one matches the host on any port.
func IsInsecure(list []string, host string) bool {
	host = strings.ToLower(host)
	bare := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		bare = h
	}
	for _, e := range list {
		e = strings.ToLower(e)
		if e == host {
			return true
		}
		if _, _, err := net.SplitHostPort(e); err != nil && strings.Trim(e, "[]") == strings.Trim(bare, "[]") {
			return true
		}
	}
	return false
}

// IsLocalhost reports whether a registry host is on the loopback interface
// ("localhost", 127.0.0.0/8, ::1, with or without a port). containerd (its
// client and its CRI plugin) and Docker reach such registries over plain
// HTTP without being told, and podrun does the same.
func IsLocalhost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
