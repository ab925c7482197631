package webhook_test

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
)

// The objects below pass the CRD schemas and their CEL rules; what makes each bad is only
// visible to the webhook.

const testNamespace = "default"

func horizontalAutoscaler(name string, mutate func(*v1alpha1.HorizontalAutoscalerSpec)) *v1alpha1.HorizontalAutoscaler {
	h := &v1alpha1.HorizontalAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: v1alpha1.HorizontalAutoscalerSpec{
			ScaleTargetRef: v1alpha1.CrossVersionObjectReference{APIVersion: "autoscaling.karpenter.sh/v1alpha1", Kind: "ScalableNodeGroup", Name: "workers"},
			MaxReplicas:    10,
			Metrics: []v1alpha1.Metric{{Prometheus: &v1alpha1.PrometheusMetricSource{
				Query:  `karpenter_reserved_capacity_cpu_utilization{name="workers"}`,
				Target: v1alpha1.MetricTarget{Type: v1alpha1.UtilizationMetricType, Value: resource.MustParse("60")},
			}}},
		},
	}
	if mutate != nil {
		mutate(&h.Spec)
	}
	return h
}

func withQuery(query string) func(*v1alpha1.HorizontalAutoscalerSpec) {
	return func(s *v1alpha1.HorizontalAutoscalerSpec) { s.Metrics[0].Prometheus.Query = query }
}

func withScaleDownTolerance(tolerance string) func(*v1alpha1.HorizontalAutoscalerSpec) {
	return func(s *v1alpha1.HorizontalAutoscalerSpec) {
		s.Behavior.ScaleDown = &v1alpha1.ScalingRules{Tolerance: ptr.To(resource.MustParse(tolerance))}
	}
}

func withAPIVersion(apiVersion string) func(*v1alpha1.HorizontalAutoscalerSpec) {
	return func(s *v1alpha1.HorizontalAutoscalerSpec) { s.ScaleTargetRef.APIVersion = apiVersion }
}

func scheduleProducer(name string, mutate func(*v1alpha1.ScheduleSpec)) *v1alpha1.MetricsProducer {
	s := &v1alpha1.ScheduleSpec{
		DefaultReplicas: 1,
		Behaviors: []v1alpha1.ScheduledBehavior{{
			Replicas: 5,
			Start:    &v1alpha1.Pattern{Weekdays: ptr.To("mon-fri"), Hours: ptr.To("9")},
			End:      &v1alpha1.Pattern{Weekdays: ptr.To("mon-fri"), Hours: ptr.To("17")},
		}},
	}
	if mutate != nil {
		mutate(s)
	}
	return &v1alpha1.MetricsProducer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec:       v1alpha1.MetricsProducerSpec{ScheduleSpec: s},
	}
}

func queueProducer(name, id string) *v1alpha1.MetricsProducer {
	return &v1alpha1.MetricsProducer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec:       v1alpha1.MetricsProducerSpec{Queue: &v1alpha1.QueueSpec{Type: v1alpha1.AWSSQSQueueType, ID: id}},
	}
}

func pendingCapacityProducer(name string, mutate func(*v1alpha1.PendingCapacitySpec)) *v1alpha1.MetricsProducer {
	p := &v1alpha1.PendingCapacitySpec{
		NodeSelector: map[string]string{"karpenter.sh/group": "workers"},
		NodeTemplate: &v1alpha1.NodeTemplate{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
	}
	if mutate != nil {
		mutate(p)
	}
	return &v1alpha1.MetricsProducer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec:       v1alpha1.MetricsProducerSpec{PendingCapacity: p},
	}
}

func nodeGroup(name string, typ v1alpha1.NodeGroupType, id string) *v1alpha1.ScalableNodeGroup {
	return &v1alpha1.ScalableNodeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec:       v1alpha1.ScalableNodeGroupSpec{Type: typ, ID: id, Replicas: ptr.To[int32](1)},
	}
}

func provisioner(name string, mutate func(*v1alpha5.ProvisionerSpec)) *v1alpha5.Provisioner {
	p := &v1alpha5.Provisioner{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha5.ProvisionerSpec{
			Requirements: []v1alpha5.NodeSelectorRequirement{
				{Key: corev1.LabelArchStable, Operator: "In", Values: []string{"amd64", "arm64"}},
				{Key: v1alpha5.CapacityTypeLabelKey, Operator: "In", Values: []string{"spot"}},
			},
		},
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func withRequirement(key, operator string, values ...string) func(*v1alpha5.ProvisionerSpec) {
	return func(s *v1alpha5.ProvisionerSpec) {
		s.Requirements = append(s.Requirements, v1alpha5.NodeSelectorRequirement{Key: key, Operator: v1alpha5.NodeSelectorOperator(operator), Values: values})
	}
}

type badObject struct {
	name   string
	object client.Object
	// want is the exact line of the webhook's message for the one error this object has.
	want string
}

// badObjects is the rejection corpus: each object has exactly one error the webhook reports.
func badObjects() []badObject {
	return []badObject{
		// HorizontalAutoscaler
		{"negative tolerance", horizontalAutoscaler("ha-tolerance", withScaleDownTolerance("-0.1")),
			`tolerance -100m must not be negative: it is a fraction of the target: spec.behavior.scaleDown.tolerance`},
		{"tolerance of 1", horizontalAutoscaler("ha-tolerance-one", withScaleDownTolerance("1")),
			`tolerance 1 must be less than 1: it is a fraction of the target, and a band of 100% or more never scales: spec.behavior.scaleDown.tolerance`},
		{"apiVersion with two slashes", horizontalAutoscaler("ha-apiversion-slashes", withAPIVersion("apps/v1/beta")),
			"invalid value: apps/v1/beta: spec.scaleTargetRef.apiVersion"},
		{"apiVersion without version", horizontalAutoscaler("ha-apiversion-noversion", withAPIVersion("apps/")),
			"invalid value: apps/: spec.scaleTargetRef.apiVersion"},
		{"apiVersion with invalid group", horizontalAutoscaler("ha-apiversion-group", withAPIVersion("Apps_Group/v1")),
			"invalid value: Apps_Group/v1: spec.scaleTargetRef.apiVersion"},
		{"apiVersion with invalid version", horizontalAutoscaler("ha-apiversion-version", withAPIVersion("apps/V1.0")),
			"invalid value: apps/V1.0: spec.scaleTargetRef.apiVersion"},
		{"query with unclosed parenthesis", horizontalAutoscaler("ha-query-paren", withQuery(`sum(rate(http_requests_total[5m])`)),
			"invalid PromQL: 1:34: parse error: unclosed left parenthesis: spec.metrics[0].prometheus.query"},
		{"query with unclosed braces", horizontalAutoscaler("ha-query-brace", withQuery(`up{job="a"`)),
			"invalid PromQL: 1:11: parse error: unexpected end of input inside braces: spec.metrics[0].prometheus.query"},
		{"query that is not PromQL", horizontalAutoscaler("ha-query-sql", withQuery(`SELECT cpu FROM nodes`)),
			"invalid PromQL: 1:8: parse error: unexpected identifier \"cpu\": spec.metrics[0].prometheus.query"},
		{"query evaluating to a range vector", horizontalAutoscaler("ha-query-matrix", withQuery(`http_requests_total[5m]`)),
			"the query evaluates to a range vector; it must evaluate to a scalar or an instant vector: spec.metrics[0].prometheus.query"},
		{"query evaluating to a string", horizontalAutoscaler("ha-query-string", withQuery(`"fifty"`)),
			"the query evaluates to a string; it must evaluate to a scalar or an instant vector: spec.metrics[0].prometheus.query"},
		{"second metric's query invalid", horizontalAutoscaler("ha-query-second", func(s *v1alpha1.HorizontalAutoscalerSpec) {
			s.Metrics = append(s.Metrics, v1alpha1.Metric{Prometheus: &v1alpha1.PrometheusMetricSource{
				Query: `rate(x[5m]`, Target: v1alpha1.MetricTarget{Type: v1alpha1.ValueMetricType, Value: resource.MustParse("1")}}})
		}), "invalid PromQL: 1:11: parse error: unclosed left parenthesis: spec.metrics[1].prometheus.query"},
		{"zero target", horizontalAutoscaler("ha-target-zero", func(s *v1alpha1.HorizontalAutoscalerSpec) {
			s.Metrics[0].Prometheus.Target.Value = resource.MustParse("0")
		}), "target value 0 must be greater than zero: spec.metrics[0].prometheus.target.value"},
		{"negative target", horizontalAutoscaler("ha-target-negative", func(s *v1alpha1.HorizontalAutoscalerSpec) {
			s.Metrics[0].Prometheus.Target.Value = resource.MustParse("-500m")
		}), "target value -500m must be greater than zero: spec.metrics[0].prometheus.target.value"},

		// MetricsProducer: schedules
		{"unknown time zone", scheduleProducer("mp-tz-unknown", func(s *v1alpha1.ScheduleSpec) { s.Timezone = ptr.To("Mars/Olympus_Mons") }),
			`"Mars/Olympus_Mons" is not an IANA time zone: spec.scheduleSpec.timezone`},
		{"Local time zone", scheduleProducer("mp-tz-local", func(s *v1alpha1.ScheduleSpec) { s.Timezone = ptr.To("Local") }),
			`"Local" is not an IANA time zone: spec.scheduleSpec.timezone`},
		{"misspelt weekday", scheduleProducer("mp-weekday", func(s *v1alpha1.ScheduleSpec) { s.Behaviors[0].Start.Weekdays = ptr.To("mon-fry") }),
			`"fry" is not a weekday: spec.scheduleSpec.behaviors[0].start.weekdays`},
		{"hour out of range", scheduleProducer("mp-hour", func(s *v1alpha1.ScheduleSpec) { s.Behaviors[0].End.Hours = ptr.To("24") }),
			`"24" is not an hour (0-23): spec.scheduleSpec.behaviors[0].end.hours`},
		{"zero step", scheduleProducer("mp-step", func(s *v1alpha1.ScheduleSpec) { s.Behaviors[0].Start.Minutes = ptr.To("*/0") }),
			`"*/0" has a step "0" that is not a positive number: spec.scheduleSpec.behaviors[0].start.minutes`},
		{"backwards range", scheduleProducer("mp-range", func(s *v1alpha1.ScheduleSpec) { s.Behaviors[0].Start.Hours = ptr.To("17-9") }),
			`"17-9" is a range whose start is after its end: spec.scheduleSpec.behaviors[0].start.hours`},
		{"date that never occurs", scheduleProducer("mp-date", func(s *v1alpha1.ScheduleSpec) {
			s.Behaviors[0].Start = &v1alpha1.Pattern{Days: ptr.To("30"), Months: ptr.To("feb")}
		}), `"30" never occurs in months "feb": spec.scheduleSpec.behaviors[0].start.days`},
		{"month out of range in a second behavior", scheduleProducer("mp-month", func(s *v1alpha1.ScheduleSpec) {
			s.Behaviors = append(s.Behaviors, v1alpha1.ScheduledBehavior{Replicas: 2, Start: &v1alpha1.Pattern{Months: ptr.To("13")}})
		}), `"13" is not a month (1-12): spec.scheduleSpec.behaviors[1].start.months`},
		{"empty list element", scheduleProducer("mp-list", func(s *v1alpha1.ScheduleSpec) { s.Behaviors[0].Start.Days = ptr.To("1,,15") }),
			`"1,,15" has an empty list element: spec.scheduleSpec.behaviors[0].start.days`},

		// MetricsProducer: queues
		{"queue id neither ARN nor URL", queueProducer("mp-queue-name", "my-queue"),
			`invalid id "my-queue" for type AWSSQSQueue: expected a queue ARN or an https://sqs.<region>.amazonaws.com/<account>/<name> URL: spec.queue.id`},
		{"queue ARN of another service", queueProducer("mp-queue-sns", "arn:aws:sns:us-west-2:123456789012:topic"),
			`invalid id "arn:aws:sns:us-west-2:123456789012:topic" for type AWSSQSQueue: expected arn:aws:sqs:<region>:<account>:<queue name>: spec.queue.id`},
		{"queue URL without a name", queueProducer("mp-queue-url", "https://sqs.us-west-2.amazonaws.com/123456789012"),
			`invalid id "https://sqs.us-west-2.amazonaws.com/123456789012" for type AWSSQSQueue: a queue URL's path is /<account>/<queue name>: spec.queue.id`},
		{"queue name with a space", queueProducer("mp-queue-space", "arn:aws:sqs:us-west-2:123456789012:my jobs"),
			`invalid id "arn:aws:sqs:us-west-2:123456789012:my jobs" for type AWSSQSQueue: queue name "my jobs" must have 1 to 80 letters, digits, hyphens or underscores, a FIFO queue's ending in .fifo: spec.queue.id`},
		{"queue URL with a 13-digit account", queueProducer("mp-queue-account", "https://sqs.us-west-2.amazonaws.com/1234567890123/jobs"),
			`invalid id "https://sqs.us-west-2.amazonaws.com/1234567890123/jobs" for type AWSSQSQueue: account "1234567890123" is not an AWS account id (up to 12 digits): spec.queue.id`},

		// MetricsProducer: node selectors and templates
		{"node selector key with a space", pendingCapacityProducer("mp-selector-key", func(p *v1alpha1.PendingCapacitySpec) {
			p.NodeSelector = map[string]string{"node group": "workers"}
		}), `invalid label key "node group": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'): spec.pendingCapacity.nodeSelector[node group]`},
		{"reserved capacity selector value with a slash", &v1alpha1.MetricsProducer{
			ObjectMeta: metav1.ObjectMeta{Name: "mp-selector-value", Namespace: testNamespace},
			Spec:       v1alpha1.MetricsProducerSpec{ReservedCapacity: &v1alpha1.ReservedCapacitySpec{NodeSelector: map[string]string{"group": "a/b"}}},
		}, `invalid label value "a/b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'): spec.reservedCapacity.nodeSelector[group]`},
		{"template taint with an unknown effect", pendingCapacityProducer("mp-taint-effect", func(p *v1alpha1.PendingCapacitySpec) {
			p.NodeTemplate.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: "Sometimes"}}
		}), `invalid taint effect "Sometimes": expected one of [NoSchedule PreferNoSchedule NoExecute]: spec.pendingCapacity.nodeTemplate.taints[0].effect`},
		{"negative allocatable", pendingCapacityProducer("mp-allocatable", func(p *v1alpha1.PendingCapacitySpec) {
			p.NodeTemplate.Allocatable[corev1.ResourceMemory] = resource.MustParse("-1Gi")
		}), `quantity -1Gi must not be negative: spec.pendingCapacity.nodeTemplate.allocatable[memory]`},

		// ScalableNodeGroup
		{"Auto Scaling group ARN without a name", nodeGroup("sng-asg-arn", v1alpha1.AWSEC2AutoScalingGroup, "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:uuid"),
			`invalid id "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:uuid" for type AWSEC2AutoScalingGroup: expected arn:aws:autoscaling:<region>:<account>:autoScalingGroup:<uuid>:autoScalingGroupName/<name>: spec.id`},
		{"Auto Scaling group name too long", nodeGroup("sng-asg-long", v1alpha1.AWSEC2AutoScalingGroup, strings.Repeat("g", 256)),
			`invalid id "` + strings.Repeat("g", 256) + `" for type AWSEC2AutoScalingGroup: a group name has 1 to 255 characters: spec.id`},
		{"Auto Scaling group name with a tab", nodeGroup("sng-asg-tab", v1alpha1.AWSEC2AutoScalingGroup, "workers\t"),
			`invalid id "workers\t" for type AWSEC2AutoScalingGroup: a group name has no control characters, found U+0009 at byte 7: spec.id`},
		{"Auto Scaling group ARN with an 11-digit account", nodeGroup("sng-asg-account", v1alpha1.AWSEC2AutoScalingGroup, "arn:aws:autoscaling:us-west-2:1234567890123:autoScalingGroup:uuid:autoScalingGroupName/workers"),
			`invalid id "arn:aws:autoscaling:us-west-2:1234567890123:autoScalingGroup:uuid:autoScalingGroupName/workers" for type AWSEC2AutoScalingGroup: account "1234567890123" is not an AWS account id (up to 12 digits): spec.id`},
		{"EKS node group without cluster", nodeGroup("sng-eks-name", v1alpha1.AWSEKSNodeGroup, "general"),
			`invalid id "general" for type AWSEKSNodeGroup: expected <cluster>/<nodegroup> or a node group ARN: spec.id`},
		{"EKS node group with empty name", nodeGroup("sng-eks-empty", v1alpha1.AWSEKSNodeGroup, "sandbox/"),
			`invalid id "sandbox/" for type AWSEKSNodeGroup: expected <cluster>/<nodegroup> or a node group ARN: spec.id`},
		{"EKS cluster name with a space", nodeGroup("sng-eks-space", v1alpha1.AWSEKSNodeGroup, "my cluster/general"),
			`invalid id "my cluster/general" for type AWSEKSNodeGroup: cluster name "my cluster" must have 1 to 100 letters, digits, hyphens or underscores and start with a letter or digit: spec.id`},
		{"EKS node group name with a dot", nodeGroup("sng-eks-dot", v1alpha1.AWSEKSNodeGroup, "sandbox/general.spot"),
			`invalid id "sandbox/general.spot" for type AWSEKSNodeGroup: node group name "general.spot" must have 1 to 100 letters, digits, hyphens or underscores and start with a letter or digit: spec.id`},
		{"EKS node group ARN with an empty uuid", nodeGroup("sng-eks-uuid", v1alpha1.AWSEKSNodeGroup, "arn:aws:eks:us-west-2:123456789012:nodegroup/sandbox/general/"),
			`invalid id "arn:aws:eks:us-west-2:123456789012:nodegroup/sandbox/general/" for type AWSEKSNodeGroup: the ARN's node group uuid (after <nodegroup>/) is empty: spec.id`},
		{"EKS node group ARN with an 11-digit account", nodeGroup("sng-eks-account", v1alpha1.AWSEKSNodeGroup, "arn:aws:eks:us-west-2:1234567890123:nodegroup/sandbox/general/uuid"),
			`invalid id "arn:aws:eks:us-west-2:1234567890123:nodegroup/sandbox/general/uuid" for type AWSEKSNodeGroup: account "1234567890123" is not an AWS account id (up to 12 digits): spec.id`},
		{"EKS node group ARN of another service", nodeGroup("sng-eks-arn", v1alpha1.AWSEKSNodeGroup, "arn:aws:ec2:us-west-2:123456789012:nodegroup/sandbox/general/uuid"),
			`invalid id "arn:aws:ec2:us-west-2:123456789012:nodegroup/sandbox/general/uuid" for type AWSEKSNodeGroup: expected arn:aws:eks:<region>:<account>:nodegroup/<cluster>/<nodegroup>/<uuid>: spec.id`},
		{"Auto Scaling group ARN given as an EKS node group", nodeGroup("sng-eks-asg", v1alpha1.AWSEKSNodeGroup, "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:uuid:autoScalingGroupName/workers"),
			`invalid id "arn:aws:autoscaling:us-west-2:123456789012:autoScalingGroup:uuid:autoScalingGroupName/workers" for type AWSEKSNodeGroup: expected arn:aws:eks:<region>:<account>:nodegroup/<cluster>/<nodegroup>/<uuid>: spec.id`},

		// Provisioner
		{"zone that is not a label value", provisioner("prov-zone", withRequirement(corev1.LabelTopologyZone, "In", "us west 2a")),
			`invalid label value "us west 2a": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'): spec.requirements[2].values[0]`},
		{"label key with two slashes", provisioner("prov-label", func(s *v1alpha5.ProvisionerSpec) { s.Labels = map[string]string{"team/a/b": "x"} }),
			`invalid label key "team/a/b": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'): spec.labels[team/a/b]`},
		{"taint key with a space", provisioner("prov-taint", func(s *v1alpha5.ProvisionerSpec) {
			s.Taints = []corev1.Taint{{Key: "dedicated team", Effect: corev1.TaintEffectNoSchedule}}
		}), `invalid taint key "dedicated team": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'): spec.taints[0].key`},
		{"negative limit", provisioner("prov-limit", func(s *v1alpha5.ProvisionerSpec) {
			s.Limits = &v1alpha5.Limits{Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-10")}}
		}), `quantity -10 must not be negative: spec.limits.resources[cpu]`},
	}
}
