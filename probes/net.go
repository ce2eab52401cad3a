package probes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// probeDialer is the kubelet's probe dialer: on Linux it sets SO_LINGER to
// 1 s so that frequent probes do not leave sockets in TIME_WAIT.
func probeDialer() *net.Dialer {
	return &net.Dialer{Control: lingerControl}
}

func tcpProbe(ctx context.Context, a *corev1.TCPSocketAction, t Target, timeout time.Duration) Outcome {
	port, err := resolvePort(a.Port, t.Ports)
	if err != nil {
		return unknown(err.Error())
	}
	host, err := hostOr(a.Host, t)
	if err != nil {
		return unknown(err.Error())
	}
	d := probeDialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error()}
	}
	_ = conn.Close()
	return Outcome{Result: Success}
}

// transport is shared by probes and hooks: no keep-alives (each attempt
// opens its own connection, like the kubelet), no proxy, no compression,
// and no certificate checks for HTTPS.
var transport = &http.Transport{
	TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify probe targets
	DisableKeepAlives:   true,
	DisableCompression:  true,
	Proxy:               nil,
	DialContext:         probeDialer().DialContext,
	TLSHandshakeTimeout: 10 * time.Second,
}

// checkRedirect is the kubelet's redirect policy for probes and hooks:
// follow redirects on the same host (at most 10); a redirect to another host
// is not followed and its 3xx response is the result.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// newHTTPRequest builds the kubelet's GET request for an httpGet action.
// agent is "probe" or "lifecycle" (User-Agent kube-<agent>/<version>).
func newHTTPRequest(ctx context.Context, a *corev1.HTTPGetAction, t Target, agent string) (*http.Request, error) {
	port, err := resolvePort(a.Port, t.Ports)
	if err != nil {
		return nil, err
	}
	host, err := hostOr(a.Host, t)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(a.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := a.Path
	if path == "" {
		path = "/"
	}
	u, err := url.Parse(path)
	if err != nil {
		// A broken path is passed along as is, as the kubelet does.
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	headers := make(http.Header)
	for _, h := range a.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", "kube-"+agent+"/"+kubeVersion)
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		// An explicitly empty Accept removes the header.
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

func httpProbe(ctx context.Context, a *corev1.HTTPGetAction, t Target, timeout time.Duration) Outcome {
	req, err := newHTTPRequest(ctx, a, t, "probe")
	if err != nil {
		return unknown(err.Error())
	}
	client := &http.Client{Transport: transport, CheckRedirect: checkRedirect, Timeout: timeout}
	res, err := client.Do(req)
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error()}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxRead))
	if err != nil {
		return Outcome{Result: Failure, Output: fmt.Sprintf("reading response body: %v", err)}
	}
	body := string(b)
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			// The kubelet's "Warning": a redirect it did not follow (to
			// another host) counts as success.
			return Outcome{Result: Success, Output: fmt.Sprintf("Probe terminated redirects (status %d), Response body: %s", res.StatusCode, body)}
		}
		return Outcome{Result: Success, Output: body}
	}
	return Outcome{Result: Failure, Output: fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode)}
}

// httpHook runs an httpGet lifecycle handler. Like the kubelet it fails only
// when no response arrives: the status code is not checked. An HTTPS request
// answered in plain HTTP is retried over HTTP (without Authorization).
func httpHook(ctx context.Context, a *corev1.HTTPGetAction, t Target) error {
	req, err := newHTTPRequest(ctx, a, t, "lifecycle")
	if err != nil {
		return err
	}
	client := &http.Client{Transport: transport, CheckRedirect: checkRedirect}
	res, err := client.Do(req)
	discardBody(res)
	if err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		res, httpErr := client.Do(retry)
		discardBody(res)
		if httpErr == nil {
			err = nil
		}
	}
	return err
}

func discardBody(res *http.Response) {
	if res == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
	_ = res.Body.Close()
}
