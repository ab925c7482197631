// Command kubectl-karpenter is the kubectl plugin `kubectl karpenter`. Its subcommand plan
// prints what Karpenter would launch now, and at what price, without doing it (docs/plan.md);
// convert prints the NodePools and EC2NodeClasses Provisioners become (docs/migrating-to-v1.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"karpenter.sh/karpenter/pkg/disruption"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"karpenter.sh/karpenter/pkg/apis"
	v1 "karpenter.sh/karpenter/pkg/apis/provisioning/v1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/controllers/consolidation"
	"karpenter.sh/karpenter/pkg/controllers/provisioning"
	"karpenter.sh/karpenter/pkg/controllers/provisioning/scheduling"
	"karpenter.sh/karpenter/pkg/featuregates"
	"karpenter.sh/karpenter/pkg/plan"
	"karpenter.sh/karpenter/pkg/pods"
	"karpenter.sh/karpenter/pkg/state"
)

// Exit statuses.
const (
	exitPlaced       = 0
	exitUnplaceable  = 1
	exitUsage        = 2
	exitCannotPlan   = 3
	commandName      = "kubectl karpenter"
	planUsageSummary = `Usage: kubectl karpenter plan [flags]

Prints what one provisioning pass of Karpenter would do now — the nodes it would launch
(instance type, zone, capacity type, $/h, the Provisioner or NodePool), where each pending pod
goes, the pods no pool can take and why — without launching anything. --pods and
--provisioners plan for manifests not applied yet. Exit status: 0 every pod is placed, 1 some cannot be, 2 bad input
or usage, 3 the cluster or the cloud could not be read.

Flags:
`
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a command line that makes no sense; run exits 2 on it.
type usageError struct{ error }

// planFlags are those of `plan`.
type planFlags struct {
	kubeconfig, context string
	output              string
	instanceTypes       string
	dumpInstanceTypes   bool
	pods, provisioners  string
	nodeOverlays        string
	empty, offline      bool
	consolidation       bool
	settings            consolidation.Settings
	clusterName         string
	awsRegion           string
	awsCallTimeout      time.Duration
	defaultProfile      string
	includeBareMetal    bool
	featureGates        string
	minValuesPolicy     string
	gates               featuregates.Gates
	policy              scheduling.MinValuesPolicy
	packBudget          time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "plan" {
		return runPlan(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "convert" {
		return runConvert(ctx, args[1:], os.Stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "usage: %s plan|convert [flags]; see %s plan --help, %s convert --help\n", commandName, commandName, commandName)
	return exitUsage
}

func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parsePlanFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitPlaced
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	report, err := planNow(ctx, f, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "%s plan: %v\n", commandName, err)
		var input *plan.InputError
		var usage usageError
		if errors.As(err, &input) || errors.As(err, &usage) {
			return exitUsage
		}
		return exitCannotPlan
	}
	if report == nil {
		return exitPlaced
	}
	if err := plan.Write(stdout, report, f.output); err != nil {
		fmt.Fprintln(stderr, err)
		return exitCannotPlan
	}
	if len(report.Unschedulable) > 0 {
		return exitUnplaceable
	}
	return exitPlaced
}

func parsePlanFlags(args []string, stderr io.Writer) (planFlags, error) {
	var f planFlags
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, planUsageSummary)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path of the kubeconfig; KUBECONFIG's files and ~/.kube/config when empty.")
	fs.StringVar(&f.context, "context", "", "Kubeconfig context to use; the current one when empty.")
	fs.StringVar(&f.output, "o", plan.FormatTable, "Output format: table, yaml or json.")
	fs.StringVar(&f.output, "output", plan.FormatTable, "Output format: table, yaml or json.")
	fs.StringVar(&f.instanceTypes, "instance-types", "", "Read the instance types and prices from this file (the format --dump-instance-types writes) instead of the cloud.")
	fs.BoolVar(&f.dumpInstanceTypes, "dump-instance-types", false, "Print the cloud's instance types and prices as an --instance-types file, and plan nothing.")
	fs.StringVar(&f.pods, "pods", "", "Plan for the pods of these manifests (Pods, Deployments, ReplicaSets, StatefulSets, Jobs; DaemonSets run on every new node) instead of the cluster's pending pods.")
	fs.StringVar(&f.provisioners, "provisioners", "", "Plan with the Provisioners of this file instead of the cluster's, each defaulted and validated as the admission webhook does.")
	fs.StringVar(&f.nodeOverlays, "node-overlays", "", "Apply the NodeOverlays of this file to the instance types planned with, as the controller does with --feature-gates NodeOverlay=true, instead of the cluster's.")
	fs.BoolVar(&f.empty, "empty", false, "Ignore the cluster's nodes and the pods on them: plan as for an empty cluster (its DaemonSets still count).")
	fs.BoolVar(&f.offline, "offline", false, "Read nothing from a cluster: --pods, --provisioners and --instance-types are the whole input (implies --empty).")
	fs.BoolVar(&f.consolidation, "consolidation", false, "Also print what consolidation would delete or replace now, the saving, and why each other node is kept.")
	fs.DurationVar(&f.settings.MinNodeAge, "consolidation-min-node-age", consolidation.DefaultMinNodeAge, "As the controller's flag: how long a node exists before consolidation may delete or replace it.")
	fs.Float64Var(&f.settings.Threshold, "consolidation-threshold", disruption.DefaultSavingsThreshold, "As the controller's flag: fraction of the nodes' hourly price a consolidation must save, within (0, 1).")
	fs.IntVar(&f.settings.MinSpotTypes, "spot-to-spot-min-types", disruption.DefaultSpotToSpotMinTypes, "As the controller's flag: how many cheaper spot instance types a spot node's replacement needs.")
	fs.StringVar(&f.clusterName, "cluster-name", "", "As the controller's flag: the cluster's name, which selects its subnets; needed to read instance types from AWS.")
	fs.StringVar(&f.awsRegion, "aws-region", "", "As the controller's flag: the AWS region; the SDK's (AWS_REGION, profile) when empty.")
	fs.DurationVar(&f.awsCallTimeout, "aws-call-timeout", aws.DefaultCallTimeout, "As the controller's flag: time limit of each AWS call, its retries included.")
	fs.StringVar(&f.defaultProfile, "aws-default-instance-profile", "", "As the controller's flag: instance profile of the Provisioners whose provider block names none.")
	fs.BoolVar(&f.includeBareMetal, "aws-include-bare-metal", false, "As the controller's flag: offer bare metal instance types too.")
	fs.StringVar(&f.minValuesPolicy, "min-values-policy", string(scheduling.MinValuesStrict), "As the controller's flag: Strict refuses a NodePool's node whose instance types give fewer values of a key than its minValues; BestEffort plans it relaxed.")
	fs.DurationVar(&f.packBudget, "batch-packer-budget", scheduling.DefaultPackBudget, "As the controller's flag: how long the batch packer may take to choose the new nodes' instance types against the whole batch; 0 plans without it.")
	fs.StringVar(&f.featureGates, "feature-gates", "", "As the controller's flag: NodeOverlay=true applies the cluster's NodeOverlays to the instance types planned with; SpotToSpotConsolidation=true lets --consolidation replace spot nodes by spot.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	var err error
	if f.gates, err = featuregates.Parse(f.featureGates); err != nil {
		return f, err
	}
	if f.policy, err = scheduling.ParseMinValuesPolicy(f.minValuesPolicy); err != nil {
		return f, err
	}
	for _, warning := range f.gates.Warnings() {
		fmt.Fprintln(stderr, "warning: "+warning)
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("plan takes no arguments, not %q", fs.Args())
	}
	f.settings.NoSpotToSpot = !f.gates.SpotToSpot
	// Consolidation plans its replacements with the packer, as the controller's does.
	f.settings.Pack = provisioning.Packer(f.packBudget, clock.RealClock{})
	switch {
	case f.output != plan.FormatTable && f.output != plan.FormatYAML && f.output != plan.FormatJSON:
		return f, fmt.Errorf("-o must be table, yaml or json, not %q", f.output)
	case f.instanceTypes == "" && f.clusterName == "":
		return f, errors.New("instance types come from AWS with --cluster-name, or from a file with --instance-types")
	case f.dumpInstanceTypes && f.instanceTypes != "":
		return f, errors.New("--dump-instance-types reads the cloud: it does not go with --instance-types")
	case f.offline && (f.pods == "" || f.provisioners == "" || f.instanceTypes == ""):
		return f, errors.New("--offline needs --pods, --provisioners and --instance-types")
	case f.consolidation && (f.pods != "" || f.provisioners != "" || f.empty || f.offline):
		return f, errors.New("--consolidation plans for the cluster as it is: it does not go with --pods, --provisioners, --empty or --offline")
	case f.settings.Threshold <= 0 || f.settings.Threshold >= 1:
		return f, fmt.Errorf("--consolidation-threshold must be within (0, 1), not %g", f.settings.Threshold)
	case f.settings.MinSpotTypes < 1:
		return f, fmt.Errorf("--spot-to-spot-min-types must be at least 1, not %d", f.settings.MinSpotTypes)
	case f.settings.MinNodeAge <= 0:
		return f, fmt.Errorf("--consolidation-min-node-age must be positive, not %s", f.settings.MinNodeAge)
	}
	if f.offline {
		f.empty = true
	}
	return f, nil
}

// planNow reads what the flags say and plans; a nil report means there was nothing to plan
// (--dump-instance-types printed the instance types).
func planNow(ctx context.Context, f planFlags, stdout io.Writer) (*plan.Report, error) {
	validator := cloudprovider.ProviderValidator(aws.ProviderBlockValidator{Defaults: aws.ProviderDefaults{ClusterName: f.clusterName, InstanceProfile: f.defaultProfile}})
	var lister cloudprovider.InstanceTypeLister
	if f.instanceTypes != "" {
		data, err := os.ReadFile(f.instanceTypes)
		if err != nil {
			return nil, usageError{fmt.Errorf("reading --instance-types, %w", err)}
		}
		types, err := plan.ReadInstanceTypes(f.instanceTypes, data)
		if err != nil {
			return nil, err
		}
		lister = types
	} else {
		instances, err := awsInstances(ctx, f)
		if err != nil {
			return nil, err
		}
		lister, validator = instances, instances
	}
	if f.dumpInstanceTypes {
		types, err := lister.InstanceTypes(ctx, cloudprovider.Constraints{})
		if err != nil {
			return nil, fmt.Errorf("listing instance types, %w", err)
		}
		out, err := yaml.Marshal(plan.DumpInstanceTypes(types))
		if err != nil {
			return nil, fmt.Errorf("writing instance types, %w", err)
		}
		_, err = stdout.Write(out)
		return nil, err
	}
	var workload *plan.Workload
	if f.pods != "" {
		data, err := os.ReadFile(f.pods)
		if err != nil {
			return nil, usageError{fmt.Errorf("reading --pods, %w", err)}
		}
		if workload, err = plan.ReadWorkload(f.pods, data); err != nil {
			return nil, err
		}
	}
	var provisioners []v1alpha5.Provisioner
	if f.provisioners != "" {
		data, err := os.ReadFile(f.provisioners)
		if err != nil {
			return nil, usageError{fmt.Errorf("reading --provisioners, %w", err)}
		}
		if provisioners, err = plan.ReadProvisioners(ctx, f.provisioners, data, validator); err != nil {
			return nil, err
		}
	}
	var overlays []v1alpha1.NodeOverlay
	if f.nodeOverlays != "" {
		data, err := os.ReadFile(f.nodeOverlays)
		if err != nil {
			return nil, usageError{fmt.Errorf("reading --node-overlays, %w", err)}
		}
		if overlays, err = plan.ReadNodeOverlays(f.nodeOverlays, data); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	snapshot := &state.Snapshot{Now: now, InstanceTypes: map[string]*cloudprovider.InstanceType{}}
	in := plan.Pools{Provisioners: provisioners}
	var reader client.Reader
	if !f.offline {
		var err error
		if reader, err = clusterClient(f.kubeconfig, f.context); err != nil {
			return nil, err
		}
		if snapshot, err = state.Read(ctx, reader, now); err != nil {
			return nil, fmt.Errorf("reading the cluster, %w", err)
		}
		if in, err = clusterPools(ctx, reader, f.provisioners == ""); err != nil {
			return nil, err
		}
		if f.provisioners != "" {
			in.Provisioners = provisioners
		}
		if f.gates.NodeOverlay && f.nodeOverlays == "" {
			var list v1alpha1.NodeOverlayList
			if err := reader.List(ctx, &list); err != nil {
				return nil, fmt.Errorf("listing nodeoverlays, %w", err)
			}
			overlays = list.Items
		}
	}
	snapshot.Overlays = overlays
	whatIf(snapshot, workload, f.empty)
	in.MinValuesPolicy, in.PackBudget = f.policy, f.packBudget
	report := plan.Provisioning(ctx, snapshot, in, lister)
	if f.consolidation {
		// The cluster as it is, not as --pods or --empty imagine it, and a fresh ledger: the
		// plugin has no launches in flight of its own.
		cluster, err := state.Read(ctx, reader, now)
		if err != nil {
			return nil, fmt.Errorf("reading the cluster for consolidation, %w", err)
		}
		cluster.Overlays = overlays
		s, _, err := consolidation.Read(ctx, reader, cluster, lister, provisioning.NewLedger())
		if err != nil {
			return nil, fmt.Errorf("reading the cluster for consolidation, %w", err)
		}
		report.Consolidation = plan.Consolidate(*s, f.settings)
		if len(in.NodePools) > 0 {
			report.NodePoolConsolidation = plan.NodePoolConsolidation(ctx, cluster, in, lister, s.Budgets, f.settings.Threshold,
				f.settings.Consolidation())
		}
	}
	return report, nil
}

// clusterPools are the cluster's NodePools, with it to read their EC2NodeClasses, and its
// Provisioners when withProvisioners. A cluster without the NodePool CRD has none.
func clusterPools(ctx context.Context, reader client.Reader, withProvisioners bool) (plan.Pools, error) {
	in := plan.Pools{NodeClasses: reader}
	if withProvisioners {
		var list v1alpha5.ProvisionerList
		if err := reader.List(ctx, &list); err != nil {
			return in, fmt.Errorf("listing provisioners, %w", err)
		}
		in.Provisioners = list.Items
	}
	var nodePools v1.NodePoolList
	if err := reader.List(ctx, &nodePools); err != nil && !meta.IsNoMatchError(err) {
		return in, fmt.Errorf("listing nodepools, %w", err)
	}
	in.NodePools = nodePools.Items
	return in, nil
}

// whatIf makes the snapshot the one asked for: with --empty no nodes and no pods on them; with
// --pods the workload's pods pending instead of the cluster's, its DaemonSets beside the
// cluster's.
func whatIf(snapshot *state.Snapshot, workload *plan.Workload, empty bool) {
	if empty {
		snapshot.Nodes = nil
	}
	if !empty && workload == nil {
		return
	}
	kept := snapshot.Pods[:0]
	for _, pod := range snapshot.Pods {
		bound := pod.Spec.NodeName != ""
		if (empty && bound) || (workload != nil && pods.IsProvisionable(&pod)) {
			continue
		}
		kept = append(kept, pod)
	}
	snapshot.Pods = kept
	if workload != nil {
		snapshot.Pods = append(snapshot.Pods, workload.Pods...)
		snapshot.DaemonSets = append(snapshot.DaemonSets, workload.DaemonSets...)
	}
}

// clusterClient reads the cluster of the kubeconfig (and context, when not empty), directly:
// plan and convert read each list once.
func clusterClient(kubeconfig, kubeContext string) (client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, usageError{fmt.Errorf("loading the kubeconfig, %w", err)}
	}
	c, err := client.New(config, client.Options{Scheme: apis.NewScheme()})
	if err != nil {
		return nil, fmt.Errorf("building a client of the cluster, %w", err)
	}
	return c, nil
}

// awsInstances reads the instance types and prices the controller would, once: the same
// provider with the same flags, the catalogue and prices read at once instead of in the
// background.
func awsInstances(ctx context.Context, f planFlags) (*aws.Instances, error) {
	provider, err := aws.New(ctx, aws.Options{Region: f.awsRegion, CallTimeout: f.awsCallTimeout})
	if err != nil {
		return nil, fmt.Errorf("configuring AWS, %w", err)
	}
	instances, err := provider.Instances(aws.InstancesOptions{ClusterName: f.clusterName, DefaultInstanceProfile: f.defaultProfile, IncludeBareMetal: f.includeBareMetal})
	if err != nil {
		return nil, fmt.Errorf("configuring EC2, %w", err)
	}
	if err := instances.RefreshInstanceTypes(ctx); err != nil {
		return nil, fmt.Errorf("reading EC2 instance types, %w", err)
	}
	instances.RefreshPrices(ctx)
	return instances, nil
}
