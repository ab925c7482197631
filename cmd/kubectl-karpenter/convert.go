package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/convert"
	"karpenter.sh/karpenter/pkg/plan"
)

// Exit statuses of convert; exitUsage as plan's.
const (
	exitConverted     = 0
	exitUnconvertible = 1
	exitCannotRead    = exitCannotPlan
	convertUsage      = `Usage: kubectl karpenter convert [flags]

Prints the karpenter.sh/v1 NodePool and karpenter.k8s.aws/v1 EC2NodeClass each v1alpha5
Provisioner becomes, both named after it, as YAML documents for kubectl apply; settings v1 keeps
with a different behaviour are named in WARNING comments (and on stderr). Reads the Provisioners
of -f files, else the cluster's; --provisioner picks some. Exit status: 0 every Provisioner is
converted, 1 some cannot be (each named with its fields on stderr; nothing is printed), 2 bad
input or usage, 3 the cluster could not be read. docs/migrating-to-v1.md has the mapping.

Flags:
`
)

// convertFlags are those of `convert`.
type convertFlags struct {
	kubeconfig, context string
	files               stringList
	provisioners        stringList
	options             convert.Options
}

// stringList is a flag that may be given several times, or once with comma-separated values.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(value string) error {
	for _, v := range strings.Split(value, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

func runConvert(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseConvertFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitConverted
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	provisioners, err := readProvisioners(ctx, f, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%s convert: %v\n", commandName, err)
		hintDefaults(stderr, f.options, err)
		var input *plan.InputError
		var usage usageError
		if errors.As(err, &input) || errors.As(err, &usage) {
			return exitUsage
		}
		return exitCannotRead
	}
	if len(provisioners) == 0 {
		fmt.Fprintf(stderr, "%s convert: no Provisioners to convert\n", commandName)
		return exitConverted
	}
	var results []*convert.Result
	failed := false
	for i := range provisioners {
		result, err := convert.Provisioner(ctx, &provisioners[i], f.options)
		if err != nil {
			fmt.Fprintf(stderr, "%s convert: %v\n", commandName, err)
			hintDefaults(stderr, f.options, err)
			failed = true
			continue
		}
		results = append(results, result)
	}
	// All or nothing: a partial set piped into kubectl apply would look like a migration done.
	if failed {
		return exitUnconvertible
	}
	for _, r := range results {
		for _, w := range r.Warnings {
			fmt.Fprintf(stderr, "warning: Provisioner %s: %s: %s\n", r.Provisioner, w.Field, w.Message)
		}
	}
	if err := convert.Write(stdout, results); err != nil {
		fmt.Fprintln(stderr, err)
		return exitCannotRead
	}
	return exitConverted
}

// hintDefaults says where a provider block's defaults come from when err is the webhook's
// refusal of a block that lacks them and a flag that gives them is missing.
func hintDefaults(stderr io.Writer, options convert.Options, err error) {
	lacksDefaults := strings.Contains(err.Error(), "missing field(s): spec.provider.") || strings.Contains(err.Error(), "the controller has no default instance profile")
	if (options.ClusterName == "" || options.DefaultInstanceProfile == "") && lacksDefaults {
		fmt.Fprintln(stderr, "hint: a provider block that names no instance profile, or selects no subnets or security groups, takes the controller's defaults: "+
			"give its --aws-default-instance-profile and --cluster-name")
	}
}

func parseConvertFlags(args []string, stderr io.Writer) (convertFlags, error) {
	var f convertFlags
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, convertUsage)
		fs.PrintDefaults()
	}
	fs.Var(&f.files, "f", "Convert the Provisioners of this file (YAML or JSON documents; - for stdin) instead of the cluster's; repeatable.")
	fs.Var(&f.files, "filename", "As -f.")
	fs.Var(&f.provisioners, "provisioner", "Convert only the Provisioner of this name; repeatable, or comma-separated.")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path of the kubeconfig; KUBECONFIG's files and ~/.kube/config when empty.")
	fs.StringVar(&f.context, "context", "", "Kubeconfig context to use; the current one when empty.")
	fs.StringVar(&f.options.ClusterName, "cluster-name", "", "As the controller's flag: the cluster's name, whose kubernetes.io/cluster/<name> tag selects the subnets and security groups of a provider block that selects none.")
	fs.StringVar(&f.options.DefaultInstanceProfile, "aws-default-instance-profile", "", "As the controller's flag: instance profile of the Provisioners whose provider block names none.")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("convert takes no arguments, not %q; files go with -f", fs.Args())
	}
	return f, nil
}

// readProvisioners reads the Provisioners of the files, else of the cluster, those named by
// --provisioner only when it is given.
func readProvisioners(ctx context.Context, f convertFlags, stdin io.Reader) ([]v1alpha5.Provisioner, error) {
	if len(f.files) == 0 {
		return clusterProvisioners(ctx, f)
	}
	// Read as plan's --provisioners reads them; convert.Provisioner then defaults and
	// validates each again, as it must those it reads from a cluster.
	validator := aws.ProviderBlockValidator{Defaults: aws.ProviderDefaults{ClusterName: f.options.ClusterName, InstanceProfile: f.options.DefaultInstanceProfile}}
	var all []v1alpha5.Provisioner
	for _, file := range f.files {
		data, err := readInput(file, stdin)
		if err != nil {
			return nil, usageError{fmt.Errorf("reading -f %s, %w", file, err)}
		}
		provisioners, err := plan.ReadProvisioners(ctx, file, data, validator)
		if err != nil {
			return nil, err
		}
		all = append(all, provisioners...)
	}
	if len(f.provisioners) == 0 {
		return all, nil
	}
	var picked []v1alpha5.Provisioner
	for _, name := range f.provisioners {
		i := slices.IndexFunc(all, func(p v1alpha5.Provisioner) bool { return p.Name == name })
		if i < 0 {
			return nil, usageError{fmt.Errorf("no Provisioner %q in %s", name, strings.Join(f.files, ", "))}
		}
		picked = append(picked, all[i])
	}
	return picked, nil
}

// readInput is the content of file, or of stdin for "-".
func readInput(file string, stdin io.Reader) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(file) //nolint:gosec // G304: the file the user names.
}

// clusterProvisioners are the cluster's Provisioners, or those --provisioner names.
func clusterProvisioners(ctx context.Context, f convertFlags) ([]v1alpha5.Provisioner, error) {
	reader, err := clusterClient(f.kubeconfig, f.context)
	if err != nil {
		return nil, err
	}
	if len(f.provisioners) == 0 {
		var list v1alpha5.ProvisionerList
		if err := reader.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing provisioners, %w", err)
		}
		return list.Items, nil
	}
	var picked []v1alpha5.Provisioner
	for _, name := range f.provisioners {
		var p v1alpha5.Provisioner
		err := reader.Get(ctx, client.ObjectKey{Name: name}, &p)
		if apierrors.IsNotFound(err) {
			return nil, usageError{fmt.Errorf("the cluster has no Provisioner %q", name)}
		}
		if err != nil {
			return nil, fmt.Errorf("reading provisioner %s, %w", name, err)
		}
		picked = append(picked, p)
	}
	return picked, nil
}
