// Command webhook serves Karpenter's admission webhook: defaulting and validation of the
// autoscaling and provisioning kinds, with a serving certificate it issues and renews itself.
package main

import (
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"knative.dev/pkg/logging"
	"knative.dev/pkg/system"
	ctrl "sigs.k8s.io/controller-runtime"

	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/flagenv"
	"karpenter.sh/karpenter/pkg/webhook"
)

type flags struct {
	options webhook.Options
	// provider defaults AWS provider blocks; the AWS rules apply once its cluster name is set.
	provider  aws.ProviderDefaults
	logLevel  string
	logFormat string
}

// parseFlags reads the command line; a flag not given there takes its value from the
// environment variable named like it (--service-name from SERVICE_NAME), parsed the same way.
func parseFlags(fs *flag.FlagSet, args []string) (flags, error) {
	var f flags
	fs.StringVar(&f.options.Namespace, "namespace", os.Getenv(system.NamespaceEnvKey), "Namespace of the webhook's Service, certificate Secret and leader election Leases; defaults to $"+system.NamespaceEnvKey+".")
	fs.StringVar(&f.options.ServiceName, "service-name", "karpenter-webhook", "Service in front of the webhook; the serving certificate is issued for its DNS names.")
	fs.StringVar(&f.options.SecretName, "secret-name", "karpenter-webhook-cert", "Secret, created empty at install, that holds the CA, the serving certificate and its key.")
	fs.IntVar(&f.options.Port, "port", 8443, "Port admission requests are served on, over TLS.")
	fs.StringVar(&f.options.MutatingWebhookConfiguration, "defaulting-webhook-name", "defaulting.webhook.karpenter.sh", "MutatingWebhookConfiguration (and its one webhook) whose rules and CA bundle this webhook keeps current.")
	fs.StringVar(&f.options.ValidatingWebhookConfiguration, "validation-webhook-name", "validation.webhook.karpenter.sh", "ValidatingWebhookConfiguration (and its one webhook) whose rules and CA bundle this webhook keeps current.")
	fs.BoolVar(&f.options.LeaderElection, "leader-elect", true, "Elect a leader so that only one replica writes the certificate and the webhook configurations; every replica serves.")
	fs.StringVar(&f.provider.ClusterName, "cluster-name", "", "Name of the cluster; when set, Provisioners' provider blocks are defaulted and validated with the AWS rules.")
	fs.StringVar(&f.provider.InstanceProfile, "aws-default-instance-profile", "", "Instance profile of the AWS provider blocks that name none.")
	fs.StringVar(&f.logLevel, "log-level", "info", "Minimum log level: debug, info, warn or error.")
	fs.StringVar(&f.logFormat, "log-format", "json", "Log encoding: json or console.")
	if err := flagenv.Parse(fs, args); err != nil {
		return f, err
	}
	switch {
	case f.options.Namespace == "":
		return f, fmt.Errorf("--namespace (or $%s) is required", system.NamespaceEnvKey)
	case f.logFormat != "json" && f.logFormat != "console":
		return f, fmt.Errorf("--log-format must be json or console, not %q", f.logFormat)
	case f.options.Port <= 0 || f.options.Port > 65535:
		return f, fmt.Errorf("--port must be within 1-65535, not %d", f.options.Port)
	}
	return f, nil
}

func newLogger(level, format string) (*zap.Logger, error) {
	parsed, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level, %w", err)
	}
	config := zap.NewProductionConfig()
	config.Level = zap.NewAtomicLevelAt(parsed)
	config.Encoding = format
	config.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	return config.Build()
}

func main() {
	f, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	config, err := ctrl.GetConfig()
	if err != nil {
		logger.Fatal("loading kubeconfig", zap.Error(err))
	}
	// Ids are validated as the clouds parse them, which needs no credentials.
	cloud := cloudprovider.NewRegistry()
	aws.RegisterIDs(cloud)
	if f.provider.ClusterName != "" {
		aws.RegisterProvider(cloud, f.provider)
	}
	f.options.Cloud = cloud
	// The signal handler cancels on SIGTERM/SIGINT: the server drains and leases are released.
	ctx := logging.WithLogger(ctrl.SetupSignalHandler(), logger.Sugar().Named("webhook"))
	if err := webhook.Run(ctx, config, f.options); err != nil {
		logger.Fatal("webhook stopped", zap.Error(err))
	}
}
