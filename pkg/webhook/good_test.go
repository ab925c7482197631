package webhook_test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// goodObjects are admitted: every form of id, query and pattern the webhook accepts.
func goodObjects() []client.Object {
	return []client.Object{
		// The core group's one kind with a scale subresource: the webhook asks whether the
		// requester may scale the target, so the kind must be one the API server serves.
		horizontalAutoscaler("good-ha-core", func(s *v1alpha1.HorizontalAutoscalerSpec) {
			s.ScaleTargetRef = v1alpha1.CrossVersionObjectReference{APIVersion: "v1", Kind: "ReplicationController", Name: "web"}
		}),
		horizontalAutoscaler("good-ha-apps", func(s *v1alpha1.HorizontalAutoscalerSpec) {
			s.ScaleTargetRef = v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
			s.Metrics[0].Prometheus.Query = `sum(rate(http_requests_total{job="web"}[2m]))`
			s.Metrics[0].Prometheus.Target = v1alpha1.MetricTarget{Type: v1alpha1.AverageValueMetricType, Value: resource.MustParse("100")}
		}),
		horizontalAutoscaler("good-ha-scalar", withQuery(`scalar(karpenter_queue_length{name="jobs"}) / 10`)),
		scheduleProducer("good-mp-tz", func(s *v1alpha1.ScheduleSpec) {
			s.Timezone = ptr.To("America/Los_Angeles")
			s.Behaviors[0].Start.Minutes = ptr.To("*/15")
			s.Behaviors[0].End = &v1alpha1.Pattern{Weekdays: ptr.To("Sat,sun"), Months: ptr.To("jan-mar,dec")}
		}),
		queueProducer("good-mp-arn", "arn:aws:sqs:us-west-2:123456789012:jobs"),
		queueProducer("good-mp-url", "https://sqs.us-west-2.amazonaws.com/123456789012/jobs"),
		pendingCapacityProducer("good-mp-pending", func(p *v1alpha1.PendingCapacitySpec) {
			p.NodeTemplate.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
			p.NodeTemplate.Labels = map[string]string{corev1.LabelArchStable: "arm64"}
		}),
		nodeGroup("good-sng-asg-name", v1alpha1.AWSEC2AutoScalingGroup, "workers"),
		nodeGroup("good-sng-asg-arn", v1alpha1.AWSEC2AutoScalingGroup,
			"arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:0b5a4c9e-1111-2222-3333-444455556666:autoScalingGroupName/workers"),
		nodeGroup("good-sng-eks", v1alpha1.AWSEKSNodeGroup, "sandbox/general"),
		nodeGroup("good-sng-eks-arn", v1alpha1.AWSEKSNodeGroup,
			"arn:aws:eks:us-west-2:123456789012:nodegroup/sandbox/general/0b5a4c9e-1111-2222-3333-444455556666"),
		provisioner("good-provisioner", func(s *v1alpha5.ProvisionerSpec) {
			s.Labels = map[string]string{"team": "ml"}
			s.Taints = []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
			s.Requirements = append(s.Requirements,
				v1alpha5.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: "In", Values: []string{"us-west-2a", "us-west-2b"}},
				v1alpha5.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: "NotIn", Values: []string{"t3.nano"}},
				v1alpha5.NodeSelectorRequirement{Key: corev1.LabelOSStable, Operator: "Exists"},
			)
			s.Limits = &v1alpha5.Limits{Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}}
		}),
	}
}
