// Package recording makes controller-runtime's registry, where Karpenter registers its metric
// families, also remember each collector registered, which a prometheus.Registry does not tell.
// It must initialize before any package that registers: Go initializes, among the packages
// whose imports are done, the first by import path, and karpenter.sh/karpenter/hack/... sorts
// before every karpenter.sh/karpenter/pkg/... package, all of which import controller-runtime's
// metrics package as this one does.
package recording

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Collectors are those registered since this package initialized, in order.
var Collectors []prometheus.Collector

type registry struct {
	crmetrics.RegistererGatherer
}

func (r registry) Register(c prometheus.Collector) error {
	if err := r.RegistererGatherer.Register(c); err != nil {
		return err
	}
	Collectors = append(Collectors, c)
	return nil
}

func (r registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func init() {
	crmetrics.Registry = registry{RegistererGatherer: crmetrics.Registry}
}
