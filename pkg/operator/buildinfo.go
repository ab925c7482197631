package operator

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Version is the release the binary was built for, set by hack/image.sh (-ldflags -X); empty
// for other builds, which report the module's version instead.
var Version string

// buildInfo is upstream Karpenter's karpenter_build_info: a constant 1 labeled by the build.
var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: "karpenter", Name: "build_info",
	Help: "A metric with a constant '1' value labeled by the version, Go version, architecture and commit karpenter was built from.",
}, []string{"version", "goversion", "goarch", "commit"})

func init() {
	crmetrics.Registry.MustRegister(buildInfo)
	version, commit := Version, ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if version == "" {
			version = info.Main.Version
		}
		for _, setting := range info.Settings {
			if setting.Key == "vcs.revision" {
				commit = setting.Value
			}
		}
	}
	buildInfo.WithLabelValues(version, runtime.Version(), runtime.GOARCH, commit).Set(1)
}
