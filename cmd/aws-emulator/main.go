// Command aws-emulator serves the project's in-memory AWS emulator on a
// loopback port. Point the AWS SDK at it with AWS_ENDPOINT_URL=http://<listen>
// and any static credentials (AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test).
//
//	aws-emulator --listen 127.0.0.1:0 --seed test/sandbox/seed.yaml --pending-delay 10s
//
// It prints "listening on http://<address>" once it accepts connections, so
// a caller asking for port 0 learns the port from the first line of stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"karpenter.sh/karpenter/test/awsemulator"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "aws-emulator: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:4566", "address to listen on (port 0 picks a free port)")
	seedPath := flag.String("seed", "", "YAML or JSON file with the initial groups, node groups, queues, VPC and catalogue overrides")
	region := flag.String("region", "us-west-2", "region used in ARNs and queue URLs")
	account := flag.String("account-id", "123456789012", "account id used in ARNs and queue URLs")
	pendingDelay := flag.Duration("pending-delay", 10*time.Second, "how long a new instance stays Pending (EC2: pending) before InService (running)")
	terminatingDelay := flag.Duration("terminating-delay", 5*time.Second, "how long a terminating instance stays Terminating (EC2: shutting-down)")
	eksUpdateDelay := flag.Duration("eks-update-delay", 5*time.Second, "how long an EKS node group update stays InProgress")
	verbose := flag.Bool("v", false, "log every request")
	flag.Parse()

	emulator := awsemulator.New(awsemulator.Options{
		Region: *region, AccountID: *account,
		PendingDelay: *pendingDelay, TerminatingDelay: *terminatingDelay, EKSUpdateDelay: *eksUpdateDelay,
	})
	if *seedPath != "" {
		seed, err := awsemulator.LoadSeed(*seedPath)
		if err != nil {
			return err
		}
		if err := emulator.Seed(seed); err != nil {
			return fmt.Errorf("applying seed %s, %w", *seedPath, err)
		}
	}

	var handler http.Handler = emulator
	if *verbose {
		handler = logRequests(emulator)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening on %s, %w", *listen, err)
	}
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening on http://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- server.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down, %w", err)
	}
	return nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(rec, r)
		slog.Info("request", "method", r.Method, "path", r.URL.Path, "target", r.Header.Get("X-Amz-Target"),
			"status", rec.status, "duration", time.Since(start))
	})
}
