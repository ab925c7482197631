package provisioning

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/pools"
)

// What pending pods are told of the nodes planned for them, and the pending pods metric.

// tell gives each pending pod an Event when what it waits for changed: the launching node
// planned for it (and whether it is bound there), or why no Provisioner can take it, naming the
// Provisioners that might have and cannot launch (failing), whose attempt this pass is counted
// as a failed launch. Pods awaited by a batch in flight were told of their node when it
// launched.
func (c *Controller) tell(launching map[string]string, results *scheduling.Results, bound map[*corev1.Pod]bool, failing map[pools.Key]*cloudprovider.ActionRequiredError) {
	c.toldMu.Lock()
	defer c.toldMu.Unlock()
	for _, b := range results.Bindings {
		if _, ok := launching[b.NodeName]; !ok || c.told[b.Pod.UID] == b.NodeName {
			continue
		}
		c.told[b.Pod.UID] = b.NodeName
		if bound[b.Pod] {
			c.recorder.Eventf(b.Pod, corev1.EventTypeNormal, ReasonPlanned, "Bound to node %s, launching, to run once it is Ready", b.NodeName)
			continue
		}
		c.recorder.Eventf(b.Pod, corev1.EventTypeNormal, ReasonPlanned, "Waiting for node %s, launching, to become Ready", b.NodeName)
	}
	affecting := sets.New[pools.Key]()
	for _, e := range results.Unschedulable {
		why, keys := whyCannotLaunch(e.Pod, failing)
		affecting.Insert(keys...)
		if c.told[e.Pod.UID] == e.Reason {
			continue
		}
		c.told[e.Pod.UID] = e.Reason
		c.recorder.Event(e.Pod, corev1.EventTypeWarning, ReasonUnprovisionable, "No provisioner can launch a node for this pod: "+e.Reason+why)
	}
	for key := range affecting {
		launchErrors.WithLabelValues(failing[key].Reason).Inc()
	}
}

// forgetTold forgets what the pods no longer pending nor awaited were told, at every pass, pods
// pending or not: should one be pending again, it is told again, and a pod gone is not kept.
func (c *Controller) forgetTold(pending []*corev1.Pod, awaited map[types.UID]awaitedPod) {
	c.toldMu.Lock()
	defer c.toldMu.Unlock()
	stillPending := map[types.UID]bool{}
	for _, pod := range pending {
		stillPending[pod.UID] = true
	}
	for uid := range c.told {
		if _, ok := awaited[uid]; !ok && !stillPending[uid] {
			delete(c.told, uid)
		}
	}
}

// recordPending sets karpenter_pods_pending: the pending pods by the provisioner whose new or
// launching node they were planned onto (or are awaited by), "" for those no provisioner can
// take.
func (c *Controller) recordPending(launching map[string]string, awaited map[types.UID]awaitedPod, results *scheduling.Results) {
	counts := map[string]float64{}
	for _, a := range awaited {
		counts[a.provisioner]++
	}
	if results != nil {
		for _, n := range results.NewNodes {
			counts[n.Pool.Name] += float64(len(n.Pods))
		}
		for _, b := range results.Bindings {
			if provisioner, ok := launching[b.NodeName]; ok {
				counts[provisioner]++
			}
		}
		counts[""] = float64(len(results.Unschedulable))
	}
	podsPending.Reset()
	podsPending.WithLabelValues("").Set(counts[""])
	for provisioner, n := range counts {
		podsPending.WithLabelValues(provisioner).Set(n)
	}
}
