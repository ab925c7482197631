package main

import (
	"flag"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("PROMETHEUS_URI", "http://from-env:9090")
	t.Setenv("RESYNC_PERIOD", "30s")
	t.Setenv("CLUSTER_NAME", "demo")
	t.Setenv("CLUSTER_ENDPOINT", "https://demo.example")
	t.Setenv("CLUSTER_SERVICE_CIDR", "172.20.0.0/16")
	t.Setenv("INTERRUPTION_QUEUE", "karpenter-interruptions")
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	f, err := parseFlags(fs, []string{"--leader-elect=false", "--aws-region=eu-west-1", "--resync-period=5s"})
	if err != nil {
		t.Fatal(err)
	}
	o := f.operator
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"metrics address default", o.MetricsBindAddress, ":8080"},
		{"probe address default", o.HealthProbeBindAddress, ":8081"},
		{"leader election from the command line", o.LeaderElection, false},
		{"region from the command line", o.AWSRegion, "eu-west-1"},
		{"prometheus from the environment", o.Controllers.PrometheusURI, "http://from-env:9090"},
		{"the command line over the environment", o.Controllers.ResyncPeriod, 5 * time.Second},
		{"tolerance default", o.Controllers.HorizontalAutoscalerTolerance, 0.1},
		{"metricsproducer period default", o.Controllers.MetricsProducerPeriod, 10 * time.Second},
		{"log format default", f.logFormat, "json"},
		{"prometheus timeout default", o.Controllers.PrometheusTimeout, 5 * time.Second},
		{"prometheus response cap default", o.Controllers.PrometheusMaxResponseBytes, int64(1 << 20)},
		{"horizontalautoscaler workers default", o.Controllers.HorizontalAutoscalerWorkers, 50},
		{"kube client QPS default: no client-side limit", o.KubeClientQPS, float32(-1)},
		{"kube client burst default", o.KubeClientBurst, 300},
		{"aws call timeout default", o.AWSCallTimeout, 30 * time.Second},
		{"pods bound to their launched node by default, as Karpenter v0.5 did", o.Controllers.BindPods, true},
		{"wedged reconcile timeout default", o.WedgedReconcileTimeout, 5 * time.Minute},
		{"node ready timeout default", o.Controllers.NodeReadyTimeout, 15 * time.Minute},
		{"garbage collection period default", o.Controllers.GarbageCollectionPeriod, time.Minute},
		{"garbage collection grace default", o.Controllers.GarbageCollectionGrace, 2 * time.Minute},
		{"cluster name from the environment", o.ClusterName, "demo"},
		{"cluster endpoint from the environment", o.ClusterEndpoint, "https://demo.example"},
		{"cluster service CIDR from the environment", o.AWSInstanceOptions.ClusterServiceCIDR, "172.20.0.0/16"},
		{"instance types refresh default", o.AWSInstanceOptions.InstanceTypesRefresh, 5 * time.Minute},
		{"pricing refresh default", o.AWSInstanceOptions.PricingRefresh, 12 * time.Hour},
		{"unavailable offerings TTL default", o.AWSInstanceOptions.UnavailableOfferingsTTL, 3 * time.Minute},
		{"batch idle default", o.Controllers.BatchIdleDuration, time.Second},
		{"batch max default", o.Controllers.BatchMaxDuration, 10 * time.Second},
		{"interruption queue from the environment", o.InterruptionQueue, "karpenter-interruptions"},
		{"consolidation period default", o.Controllers.ConsolidationPeriod, 30 * time.Second},
		{"expiration period default", o.Controllers.ExpirationPeriod, 30 * time.Second},
		{"consolidation min node age default", o.Controllers.ConsolidationMinNodeAge, 5 * time.Minute},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, bad := range []string{
		"--horizontalautoscaler-tolerance=1",
		"--prometheus-timeout=0s",
		"--prometheus-max-response-bytes=0",
		"--horizontalautoscaler-workers=0",
		"--kube-client-qps=0",
		"--kube-client-burst=0",
		"--aws-call-timeout=-1s",
		"--cluster-service-cidr=10.100.0.0",
		"--aws-instance-types-refresh=0s",
		"--aws-pricing-refresh=-1h",
		"--aws-unavailable-offerings-ttl=0s",
		"--wedged-reconcile-timeout=0s",
		"--prometheus-timeout=10s", // 32 queries of 10 s outlast the 5 min wedged timeout
		"--wedged-reconcile-timeout=160s",
		"--node-ready-timeout=0s",
		"--garbage-collection-period=-1m",
		"--garbage-collection-grace=0s",
		"--batch-idle-duration=0s",
		"--consolidation-period=0s",
		"--expiration-period=0s",
		"--consolidation-min-node-age=-1s",
		"--consolidation-threshold=0",
		"--consolidation-threshold=1",
		"--spot-to-spot-min-types=0",
		"--batch-max-duration=500ms", // shorter than the 1 s idle gap
	} {
		if _, err := parseFlags(flag.NewFlagSet("controller", flag.ContinueOnError), []string{bad}); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}
