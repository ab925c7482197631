package webhook

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/injection"
	"knative.dev/pkg/leaderelection"
	"knative.dev/pkg/system"
	knativewebhook "knative.dev/pkg/webhook"
	"knative.dev/pkg/webhook/certificates"
	"knative.dev/pkg/webhook/resourcesemantics"
	"knative.dev/pkg/webhook/resourcesemantics/defaulting"
	"knative.dev/pkg/webhook/resourcesemantics/validation"

	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
)

// Paths the admission controllers serve; the controllers write them into their webhook
// configurations.
const (
	DefaultingPath = "/default"
	ValidationPath = "/validate"
)

// Options configure Run.
type Options struct {
	// Namespace holds the certificate Secret and the leader election Leases.
	Namespace string
	// ServiceName is the Service in front of the webhook; the serving certificate is issued
	// for its DNS names and the webhook configurations point at it.
	ServiceName string
	// SecretName is a Secret, created empty at install, that the certificates controller
	// fills with a CA, a serving certificate and its key.
	SecretName string
	// Port is where admission requests are served over TLS.
	Port int
	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration name the webhook
	// configurations, created at install, whose rules and CA bundle are kept current. Each
	// must hold one webhook of the same name with clientConfig.service set.
	MutatingWebhookConfiguration   string
	ValidatingWebhookConfiguration string
	// LeaderElection lets one replica at a time write the Secret and the configurations,
	// through Leases named <component>.<queue>.00-of-01. Every replica serves admission.
	LeaderElection bool
	// Cloud validates node group and queue ids for the types the clouds registered, and
	// defaults and validates Provisioners' spec.provider through the cloud registered for
	// them, e.g. a cloudprovider.Registry filled by aws.RegisterIDs. Required.
	Cloud cloudprovider.Validator
}

// Component names the webhook in leader election leases.
const Component = "karpenter-webhook"

// DefaultingTypes are the kinds the defaulting webhook mutates; cloud defaults a
// Provisioner's spec.provider.
func DefaultingTypes(cloud cloudprovider.ProviderValidator) map[schema.GroupVersionKind]resourcesemantics.GenericCRD {
	return map[schema.GroupVersionKind]resourcesemantics.GenericCRD{
		v1alpha1.SchemeGroupVersion.WithKind("HorizontalAutoscaler"): &horizontalAutoscaler{},
		v1alpha1.SchemeGroupVersion.WithKind("MetricsProducer"):      &metricsProducer{},
		v1alpha5.SchemeGroupVersion.WithKind("Provisioner"):          &provisioner{cloud: cloud},
	}
}

// ValidationTypes are the kinds the validation webhook checks; cloud validates the ids
// they name and a Provisioner's spec.provider, access whether the requester may scale a HorizontalAutoscaler's target.
func ValidationTypes(cloud cloudprovider.Validator, access ScaleAccess) map[schema.GroupVersionKind]resourcesemantics.GenericCRD {
	return map[schema.GroupVersionKind]resourcesemantics.GenericCRD{
		v1alpha1.SchemeGroupVersion.WithKind("HorizontalAutoscaler"): &horizontalAutoscaler{access: access},
		v1alpha1.SchemeGroupVersion.WithKind("MetricsProducer"):      &metricsProducer{cloud: cloud},
		v1alpha1.SchemeGroupVersion.WithKind("ScalableNodeGroup"):    &scalableNodeGroup{cloud: cloud},
		v1alpha5.SchemeGroupVersion.WithKind("Provisioner"):          &provisioner{cloud: cloud},
	}
}

// Run serves admission on opts.Port until ctx is done, while the certificates controller
// keeps the serving certificate in the Secret valid and the admission controllers keep their
// webhook configurations' rules and CA bundle current. ctx should carry a knative logger
// (logging.WithLogger).
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.Cloud == nil {
		return fmt.Errorf("no cloud validator in the webhook options")
	}
	// knative reads the namespace of its Secret, Leases and informers from the environment.
	if err := os.Setenv(system.NamespaceEnvKey, opts.Namespace); err != nil {
		return fmt.Errorf("setting %s, %w", system.NamespaceEnvKey, err)
	}
	ctx = injection.WithConfig(ctx, cfg)
	ctx, informers := injection.Default.SetupInformers(ctx, cfg)
	ctx = knativewebhook.WithOptions(ctx, knativewebhook.Options{
		ServiceName: opts.ServiceName,
		SecretName:  opts.SecretName,
		Port:        opts.Port,
		// Requests already in flight finish after the readiness probe starts failing.
		GracePeriod: 5 * time.Second,
	})
	if opts.LeaderElection {
		ctx = leaderelection.WithStandardLeaderElectorBuilder(ctx, kubeclient.Get(ctx), leaderelection.ComponentConfig{
			Component:     Component,
			Buckets:       1,
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second,
			RetryPeriod:   2 * time.Second,
		})
	}

	// The certificates controller ignores its ConfigMap watcher.
	certs := certificates.NewController(ctx, configmap.NewStaticWatcher())
	defaultingTypes := DefaultingTypes(opts.Cloud)
	defaulter := defaulting.NewAdmissionController(ctx, opts.MutatingWebhookConfiguration, DefaultingPath, defaultingTypes, nil, false)
	validator := validation.NewAdmissionController(ctx, opts.ValidatingWebhookConfiguration, ValidationPath,
		ValidationTypes(opts.Cloud, NewScaleAccess(kubeclient.Get(ctx))), nil, false)
	defaultingAdmission, ok := defaulter.Reconciler.(knativewebhook.AdmissionController)
	if !ok {
		return fmt.Errorf("the defaulting reconciler %T admits nothing", defaulter.Reconciler)
	}
	server, err := knativewebhook.New(ctx, []any{undecodableAdmitted{AdmissionController: defaultingAdmission, types: defaultingTypes}, validator.Reconciler})
	if err != nil {
		return fmt.Errorf("creating webhook server, %w", err)
	}

	group, ctx := errgroup.WithContext(ctx)
	group.Go(func() error {
		if err := server.Run(ctx.Done()); err != nil {
			return fmt.Errorf("serving admission, %w", err)
		}
		return nil
	})
	if err := controller.StartInformers(ctx.Done(), informers...); err != nil {
		return fmt.Errorf("starting informers, %w", err)
	}
	server.InformersHaveSynced()
	group.Go(func() error {
		return controller.StartAll(ctx, certs, defaulter, validator)
	})
	return group.Wait()
}
