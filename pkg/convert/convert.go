// Package convert turns a v1alpha5 Provisioner into the karpenter.sh/v1 NodePool and the
// karpenter.k8s.aws/v1 EC2NodeClass that launch the same nodes, as `kubectl karpenter convert`
// prints them. docs/migrating-to-v1.md is the field-by-field table this package implements; a
// setting v1 cannot express is an error naming the field, and one v1 expresses with a
// different behaviour is converted with a Warning naming it, never dropped silently.
package convert

import (
	"context"
	"fmt"

	"knative.dev/pkg/apis"

	awsv1 "karpenter.sh/karpenter/pkg/apis/aws/v1"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/webhook"
)

// Options are the controller settings a Provisioner leaves to the controller: the provider
// block's defaults, which an EC2NodeClass cannot leave unset.
type Options struct {
	// ClusterName is the controller's --cluster-name: the subnets and security groups of a
	// block that selects none are those tagged kubernetes.io/cluster/<ClusterName>.
	ClusterName string
	// DefaultInstanceProfile is the controller's --aws-default-instance-profile, that of a
	// block that names none.
	DefaultInstanceProfile string
}

// Result is what one Provisioner becomes.
type Result struct {
	// Provisioner is the name of the Provisioner converted.
	Provisioner  string
	NodePool     *v1.NodePool
	EC2NodeClass *awsv1.EC2NodeClass
	// Warnings name the settings v1 keeps with a different behaviour.
	Warnings []Warning
}

// Warning is a setting converted as closely as v1 allows, but not to the same behaviour.
type Warning struct {
	// Field is the Provisioner's field, e.g. spec.ttlSecondsUntilExpired.
	Field   string
	Message string
}

// Provisioner converts p, defaulted and validated first as the admission webhook does with the
// controller settings of opts, so that a Provisioner read from the cluster converts as the
// controller reads it. The error names every field that cannot be converted.
func Provisioner(ctx context.Context, p *v1alpha5.Provisioner, opts Options) (*Result, error) {
	p = p.DeepCopy()
	cloud := aws.ProviderBlockValidator{Defaults: aws.ProviderDefaults{ClusterName: opts.ClusterName, InstanceProfile: opts.DefaultInstanceProfile}}
	webhook.DefaultProvisioner(ctx, p, cloud)
	if refusal := webhook.ValidateProvisioner(ctx, p, cloud); refusal != nil {
		return nil, fmt.Errorf("converting Provisioner %s, the admission webhook would refuse it (with --cluster-name %q and --aws-default-instance-profile %q as the controller's defaults): %w",
			p.Name, opts.ClusterName, opts.DefaultInstanceProfile, refusal)
	}
	block, err := aws.ParseProviderBlock(p.Spec.Provider)
	if err != nil {
		return nil, fmt.Errorf("converting Provisioner %s, %w", p.Name, err)
	}
	nodePool, poolWarnings, poolErrs := convertNodePool(p)
	nodeClass, classWarnings, classErrs := convertNodeClass(p.Name, block)
	if errs := poolErrs.Also(classErrs.ViaField("provider")).ViaField("spec"); errs != nil {
		return nil, fmt.Errorf("converting Provisioner %s, %w", p.Name, errs)
	}
	return &Result{Provisioner: p.Name, NodePool: nodePool, EC2NodeClass: nodeClass, Warnings: append(poolWarnings, classWarnings...)}, nil
}

// fieldError is an error about one field, in knative's form: the message, then the path.
func fieldError(field, format string, args ...any) *apis.FieldError {
	return &apis.FieldError{Message: fmt.Sprintf(format, args...), Paths: []string{field}}
}
