// Command grpchealth serves grpc.health.v1 for podrun's end-to-end tests:
// SERVING for the service "" and NOT_SERVING for each service named by
// -unhealthy. Any other service is unknown (NotFound). It is built static
// (CGO_ENABLED=0) so it can be added to a busybox image.
//
//	grpchealth -port 50051 -unhealthy down
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	port := flag.Int("port", 50051, "TCP port to listen on")
	unhealthy := flag.String("unhealthy", "", "comma-separated service names reported as NOT_SERVING")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("grpchealth: ")

	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	h := health.NewServer()
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	for _, name := range strings.Split(*unhealthy, ",") {
		if name = strings.TrimSpace(name); name != "" {
			h.SetServingStatus(name, healthpb.HealthCheckResponse_NOT_SERVING)
		}
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, h)

	// As PID 1 in a container, exit promptly on SIGTERM/SIGINT.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-sigs
		log.Printf("%v: stopping", sig)
		s.Stop()
	}()

	log.Printf("serving grpc.health.v1 on %s (unhealthy: %q)", ln.Addr(), *unhealthy)
	if err := s.Serve(ln); err != nil {
		log.Fatal(err)
	}
}
