package probes

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
)

func grpcProbeSpec(port int, service *string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port), Service: service}}}
}

// grpcServer starts an in-process gRPC server; with a health server when
// withHealth is set.
func grpcServer(t *testing.T, withHealth bool) (*health.Server, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	h := health.NewServer()
	if withHealth {
		healthpb.RegisterHealthServer(s, h)
	}
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return h, ln.Addr().(*net.TCPAddr).Port
}

func TestGRPCProbe(t *testing.T) {
	h, port := grpcServer(t, true)
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	str := func(s string) *string { return &s }

	tests := []struct {
		name       string
		service    *string
		want       Result
		wantOutput string
	}{
		{"default service", nil, Success, "service healthy"},
		{"empty service", str(""), Success, "service healthy"},
		{"not serving", str("down"), Failure, `service unhealthy (responded with "NOT_SERVING")`},
		{"unknown service", str("nope"), Failure, `service "nope" unknown`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Probe(context.Background(), grpcProbeSpec(port, tt.service), Target{Host: "127.0.0.1"})
			if out.Result != tt.want || !strings.Contains(out.Output, tt.wantOutput) {
				t.Errorf("got %v %q, want %v %q", out.Result, out.Output, tt.want, tt.wantOutput)
			}
		})
	}
}

func TestGRPCProbeNoHealthService(t *testing.T) {
	_, port := grpcServer(t, false)
	out := Probe(context.Background(), grpcProbeSpec(port, nil), Target{Host: "127.0.0.1"})
	if out.Result != Failure || !strings.Contains(out.Output, "does not implement the grpc health protocol") {
		t.Errorf("got %v %q", out.Result, out.Output)
	}
}

func TestGRPCProbeNothingListening(t *testing.T) {
	out := Probe(context.Background(), grpcProbeSpec(closedPort(t), nil), Target{Host: "127.0.0.1"})
	if out.Result != Failure {
		t.Errorf("got %v %q", out.Result, out.Output)
	}
}

func TestGRPCProbeInvalidPort(t *testing.T) {
	out := Probe(context.Background(), grpcProbeSpec(0, nil), Target{Host: "127.0.0.1"})
	if out.Result != Unknown {
		t.Errorf("got %v %q", out.Result, out.Output)
	}
}
