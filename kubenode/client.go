package kubenode

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Client is the part of client-go's clientset a node calls: its Node, its
// pods and what they name (core/v1), its Lease (coordination/v1), and the
// reviews its node API asks for (authentication/v1 TokenReviews,
// authorization/v1 SubjectAccessReviews). client-go's *Clientset and its
// fake have it; NewClient makes only these typed clients.
type Client interface {
	CoreV1() corev1client.CoreV1Interface
	CoordinationV1() coordinationv1client.CoordinationV1Interface
	AuthenticationV1() authenticationv1client.AuthenticationV1Interface
	AuthorizationV1() authorizationv1client.AuthorizationV1Interface
}

// The node's rate limit of its requests but the heartbeat's: the kubelet's
// --kube-api-qps and --kube-api-burst defaults.
const (
	APIQPS   = 50
	APIBurst = 100
)

// NewClient is the node's client of rc's cluster: the typed clients of the
// API groups in Client over one HTTP client and one rate limiter, as
// kubernetes.NewForConfig makes them for every group it knows (about fifty,
// whose clients and apply configurations are most of what client-go adds to
// podrun's binary).
func NewClient(rc *rest.Config) (Client, error) {
	c := *rc
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when QPS is set to greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("the cluster's HTTP client: %w", err)
	}
	core, err := corev1client.NewForConfigAndClient(&c, hc)
	if err != nil {
		return nil, fmt.Errorf("the core/v1 client: %w", err)
	}
	coordination, err := coordinationv1client.NewForConfigAndClient(&c, hc)
	if err != nil {
		return nil, fmt.Errorf("the coordination/v1 client: %w", err)
	}
	authentication, err := authenticationv1client.NewForConfigAndClient(&c, hc)
	if err != nil {
		return nil, fmt.Errorf("the authentication/v1 client: %w", err)
	}
	authorization, err := authorizationv1client.NewForConfigAndClient(&c, hc)
	if err != nil {
		return nil, fmt.Errorf("the authorization/v1 client: %w", err)
	}
	return groups{core: core, coordination: coordination, authentication: authentication, authorization: authorization}, nil
}

// groups is NewClient's Client.
type groups struct {
	core           corev1client.CoreV1Interface
	coordination   coordinationv1client.CoordinationV1Interface
	authentication authenticationv1client.AuthenticationV1Interface
	authorization  authorizationv1client.AuthorizationV1Interface
}

func (g groups) CoreV1() corev1client.CoreV1Interface { return g.core }
func (g groups) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return g.coordination
}
func (g groups) AuthenticationV1() authenticationv1client.AuthenticationV1Interface {
	return g.authentication
}
func (g groups) AuthorizationV1() authorizationv1client.AuthorizationV1Interface {
	return g.authorization
}

// leaseClientset is Client as the clientset k8s.io/component-helpers' lease
// controller takes: it calls CoordinationV1 only (v0.37's controller.go), so
// the other groups are left nil (a call to one would panic, which its tests
// would show at once).
type leaseClientset struct {
	kubernetes.Interface
	client Client
}

func (l leaseClientset) CoordinationV1() coordinationv1client.CoordinationV1Interface {
	return l.client.CoordinationV1()
}
