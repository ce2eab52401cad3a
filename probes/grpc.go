package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
)

// grpcProbe calls grpc.health.v1.Health/Check for the probe's service
// (default "") on the target host, over plaintext, within timeout.
func grpcProbe(ctx context.Context, a *corev1.GRPCAction, t Target, timeout time.Duration) Outcome {
	if a.Port <= 0 || a.Port > 65535 {
		return unknown(fmt.Sprintf("invalid port number %d", a.Port))
	}
	host, err := hostOr("", t)
	if err != nil {
		return unknown(err.Error())
	}
	service := ""
	if a.Service != nil {
		service = *a.Service
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(a.Port)))

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// passthrough: the address is an IP and port, never resolved (as DialContext did).
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent("kube-probe/"+kubeVersion),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return probeDialer().DialContext(ctx, "tcp", addr)
		}),
	)
	if err != nil {
		return Outcome{Result: Failure, Output: fmt.Sprintf("error: failed to connect service at %q: %v", addr, err)}
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(metadata.NewOutgoingContext(ctx, metadata.MD{}),
		&healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return Outcome{Result: Failure, Output: "this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message()}
			case codes.DeadlineExceeded:
				return Outcome{Result: Failure, Output: fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)}
			case codes.NotFound:
				return Outcome{Result: Failure, Output: fmt.Sprintf("service %q unknown to the health server: %s", service, st.Message())}
			}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return Outcome{Result: Failure, Output: fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)}
		}
		return Outcome{Result: Failure, Output: fmt.Sprintf("error: health rpc probe failed: %v", err)}
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Outcome{Result: Failure, Output: fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())}
	}
	return Outcome{Result: Success, Output: "service healthy"}
}
