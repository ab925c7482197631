// Package docs_test checks that what the documentation tells a reader to apply or query works:
// every Karpenter manifest in README.md and docs/*.md (```yaml blocks and heredocs fed to
// kubectl), every file of docs/examples (and docs/examples/v1), and every PromQL query among them or in ```promql
// blocks. Manifests are created with a server-side dry run against a real kube-apiserver with
// the CRDs installed, so the schema and its CEL rules judge them, and then go through the
// webhook's defaulting and validation; queries go through the Prometheus parser the webhook
// uses.
//
// A block shown because it is refused is marked in the doc by the line
// `<!-- docs-test: invalid -->` before it; such a block must be refused by the API server or
// hold a query that does not parse.
//
// The docs' commands run as well (TestDocCommands): every block marked
// `<!-- docs-test: run -->` runs against the sandbox's stack, and every shell block is marked
// either that or `<!-- docs-test: skip <reason> -->` (extract_test.go lists the markers); a
// command written inline must be in such a block too (inline_test.go).
package docs_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/runtime"
	knativeapis "knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"karpenter.sh/karpenter/pkg/apis"
	"karpenter.sh/karpenter/pkg/apis/autoscaling/v1alpha1"
	"karpenter.sh/karpenter/pkg/apis/provisioning/v1alpha5"
	"karpenter.sh/karpenter/pkg/cloudprovider"
	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/test/environment"
	"karpenter.sh/karpenter/pkg/webhook"
)

// corpus is everything the docs give a reader to apply or query.
type corpus struct {
	// documents of every source, manifests and fragments alike.
	documents []document
	// queries of ```promql blocks; those of manifests are in their documents.
	queries []query
	// apiVersionLines are the lines of the Markdown files that start a Karpenter manifest, as
	// "file:line", for checking that the extraction missed none.
	apiVersionLines []string
}

func readCorpus(t *testing.T) corpus {
	t.Helper()
	root, err := environment.RepositoryRoot()
	if err != nil {
		t.Fatal(err)
	}
	markdown, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(root, "docs", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// docs/examples/v1 is applied by the sandbox's NodePool chapter, not at start; it must
	// apply all the same.
	v1Examples, err := filepath.Glob(filepath.Join(root, "docs", "examples", "v1", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	examples = append(examples, v1Examples...)
	if len(markdown) == 0 || len(examples) == 0 {
		t.Fatalf("found %d Markdown files and %d examples under %s/docs, want some of each", len(markdown), len(examples), root)
	}
	var c corpus
	var sources []source
	for _, path := range append([]string{filepath.Join(root, "README.md")}, markdown...) {
		file, text := read(t, root, path)
		s, q, err := markdownSources(file, text)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, s...)
		c.queries = append(c.queries, q...)
		for i, line := range strings.Split(text, "\n") {
			if manifestAPIVersion.MatchString(line) {
				c.apiVersionLines = append(c.apiVersionLines, fmt.Sprintf("%s:%d", file, i+1))
			}
		}
	}
	for _, path := range examples {
		file, text := read(t, root, path)
		sources = append(sources, source{file: file, line: 1, text: text})
	}
	for _, s := range sources {
		docs, err := documents(s)
		if err != nil {
			t.Error(err)
			continue
		}
		c.documents = append(c.documents, docs...)
	}
	return c
}

// read returns a file's path relative to root, as failures name it, and its content.
func read(t *testing.T, root, path string) (string, string) {
	t.Helper()
	content, err := os.ReadFile(path) //nolint:gosec // G304: a file of the repository's docs.
	if err != nil {
		t.Fatal(err)
	}
	file, err := filepath.Rel(root, path)
	if err != nil {
		t.Fatal(err)
	}
	return file, string(content)
}

// parseQuery parses a query as the webhook does: valid PromQL yielding a scalar or an instant
// vector.
func parseQuery(q string) error {
	expr, err := parser.ParseExpr(q)
	if err != nil {
		return fmt.Errorf("invalid PromQL, %w", err)
	}
	if t := expr.Type(); t != parser.ValueTypeScalar && t != parser.ValueTypeVector {
		return fmt.Errorf("evaluates to a %s, not a scalar or an instant vector", t)
	}
	return nil
}

func TestDocs(t *testing.T) {
	c := readCorpus(t)
	var manifests []document
	for _, d := range c.documents {
		// docs/examples are applied whole by the sandbox, so every object there must apply.
		if isKarpenterManifest(d.object) || strings.HasPrefix(d.source.file, filepath.Join("docs", "examples")+string(filepath.Separator)) {
			manifests = append(manifests, d)
		}
	}

	t.Run("every manifest in the docs is extracted", func(t *testing.T) {
		extracted := map[string]bool{}
		for _, d := range manifests {
			extracted[fmt.Sprintf("%s:%d", d.source.file, apiVersionLine(d))] = true
		}
		for _, at := range c.apiVersionLines {
			if !extracted[at] {
				t.Errorf("%s: a Karpenter manifest outside any ```yaml block or kubectl heredoc, so untested; put it in one", at)
			}
		}
		if len(manifests) < len(c.apiVersionLines) {
			t.Errorf("extracted %d manifests, fewer than the %d Karpenter apiVersion lines in the docs", len(manifests), len(c.apiVersionLines))
		}
		t.Logf("%d manifests, %d YAML documents, %d promql blocks", len(manifests), len(c.documents), len(c.queries))
	})

	// refused holds, by "file:line" of an invalid-marked source, whether anything in it was refused.
	refused := map[string]bool{}
	for _, d := range c.documents {
		if d.source.invalid {
			refused[fmt.Sprintf("%s:%d", d.source.file, d.source.line)] = false
		}
	}

	t.Run("queries parse", func(t *testing.T) {
		for _, q := range c.queries {
			if err := parseQuery(q.text); err != nil {
				t.Errorf("%s:%d: %q: %v", q.file, q.line, q.text, err)
			}
		}
		for _, d := range c.documents {
			for _, q := range d.queries {
				err := parseQuery(q.text)
				switch {
				case d.source.invalid && err != nil:
					refused[fmt.Sprintf("%s:%d", d.source.file, d.source.line)] = true
				case err != nil:
					t.Errorf("%s:%d: %q: %v", q.file, q.line, q.text, err)
				}
			}
		}
	})

	t.Run("manifests pass the API server's validation and the webhook's rules", func(t *testing.T) {
		env := environment.New(t, environment.Options{AddToScheme: []func(*runtime.Scheme) error{apis.AddToScheme}})
		cloud := cloudprovider.NewRegistry()
		aws.RegisterIDs(cloud)
		// As a webhook started with --cluster-name and --aws-default-instance-profile: documented
		// provider blocks meet the AWS rules.
		aws.RegisterProvider(cloud, aws.ProviderDefaults{ClusterName: "demo", InstanceProfile: "KarpenterNodeInstanceProfile-demo"})
		ctx := context.Background()
		for _, d := range manifests {
			err := admit(ctx, env, cloud, d)
			switch {
			case d.source.invalid && err != nil:
				refused[fmt.Sprintf("%s:%d", d.source.file, d.source.line)] = true
			case err != nil:
				t.Errorf("%s:%d: %s %q is refused: %v", d.source.file, d.line, d.object.GetKind(), d.object.GetName(), err)
			}
		}
	})

	t.Run("blocks marked invalid are refused", func(t *testing.T) {
		for _, at := range slices.Sorted(maps.Keys(refused)) {
			if !refused[at] {
				t.Errorf("%s: marked %s, but the API server accepts it and its queries parse; fix the example or drop the marker", at, invalidMarker)
			}
		}
	})
}

// admit judges a manifest as an install would: it is created with a server-side dry run (the
// CRD schema, its defaults and CEL rules), in namespace default when it is namespaced and names
// none, as `kubectl apply` would; then what the API server returned goes through the webhook's
// defaulting and validation, called in process (the webhook's scale access check, which needs
// a requesting user, is left to pkg/webhook's tests).
func admit(ctx context.Context, env *environment.Environment, cloud cloudprovider.Validator, d document) error {
	object := d.object.DeepCopy()
	namespaced, err := env.Client.IsObjectNamespaced(object)
	if err != nil {
		return fmt.Errorf("looking up the kind %s, %w", object.GroupVersionKind(), err)
	}
	if namespaced && object.GetNamespace() == "" {
		object.SetNamespace("default")
	}
	if err := env.Client.Create(ctx, object, client.DryRunAll); err != nil {
		return fmt.Errorf("creating with a dry run, %w", err)
	}
	if !env.Scheme.Recognizes(object.GroupVersionKind()) {
		return nil
	}
	typed, err := env.Scheme.New(object.GroupVersionKind())
	if err != nil {
		return fmt.Errorf("building a %s, %w", object.GroupVersionKind(), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(object.Object, typed, true); err != nil {
		return fmt.Errorf("decoding what the API server returned, %w", err)
	}
	var refusal *knativeapis.FieldError
	switch o := typed.(type) {
	case *v1alpha1.HorizontalAutoscaler:
		webhook.DefaultHorizontalAutoscaler(o)
		refusal = webhook.ValidateHorizontalAutoscaler(o)
	case *v1alpha1.MetricsProducer:
		webhook.DefaultMetricsProducer(o)
		refusal = webhook.ValidateMetricsProducer(o, cloud)
	case *v1alpha1.ScalableNodeGroup:
		refusal = webhook.ValidateScalableNodeGroup(o, cloud)
	case *v1alpha5.Provisioner:
		webhook.DefaultProvisioner(ctx, o, cloud)
		refusal = webhook.ValidateProvisioner(ctx, o, cloud)
	}
	if refusal != nil {
		return fmt.Errorf("refused by the webhook's rules, %w", refusal)
	}
	return nil
}

// apiVersionLine is the line of a document's top-level apiVersion key.
func apiVersionLine(d document) int {
	lines := strings.Split(d.source.text, "\n")
	for i := d.line - d.source.line; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "apiVersion:") {
			return d.source.line + i
		}
	}
	return d.line
}
