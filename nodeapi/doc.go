// Package nodeapi serves the kubelet's API paths that podrun honours
// (/containerLogs, /exec, /attach, /portForward, /healthz) over HTTPS on
// the port the Node advertises, to callers that are authenticated (a
// client certificate of the client CA, or a bearer token the API server
// confirms with a TokenReview) and authorised (a SubjectAccessReview on
// the node's nodes/proxy, nodes/log, ... as the kubelet asks); nothing is
// served to anyone else. It follows the kubelet's pkg/kubelet/server
// (server.go, auth.go) and serves the streams with the library the
// kubelet's CRI streaming server uses (k8s.io/cri-streaming).
package nodeapi
