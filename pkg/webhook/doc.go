/*
Package webhook is Karpenter's admission webhook: defaulting and validation, on knative.dev/pkg,
of what the CRD schemas and their CEL rules cannot express.

Defaulting fills in what the controllers would otherwise assume, so that `kubectl get -o yaml`
shows the behaviour that is in force: a HorizontalAutoscaler's scale-up and scale-down rules
(the defaults of pkg/autoscaler) and a MetricsProducer schedule's time zone (UTC).

Validation rejects, with a message naming the field, what would otherwise only surface later
as a status condition: PromQL that does not parse, schedule patterns and time zones that do
not parse, a scaleTargetRef.apiVersion that is not group/version, node group and queue ids
malformed for their type, labels and taints that are not valid Kubernetes syntax, and
Provisioner requirements whose operator or values make no sense for their key.

The types of pkg/apis stay free of these dependencies (the PromQL parser, the AWS id parsers):
each kind is wrapped here in a type implementing knative's apis.Defaultable and
apis.Validatable.

Run serves both admission controllers and manages the serving certificate: knative's
certificates controller fills an existing Secret with a CA and a serving certificate for the
webhook's Service, and the admission controllers copy that CA into their webhook
configurations and keep their rules current.
*/
package webhook
