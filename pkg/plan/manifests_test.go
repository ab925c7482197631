package plan_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"karpenter.sh/karpenter/pkg/cloudprovider/aws"
	"karpenter.sh/karpenter/pkg/plan"
	"karpenter.sh/karpenter/pkg/pods"
)

func TestReadWorkloadExpandsEveryKind(t *testing.T) {
	for _, tc := range []struct {
		name     string
		yaml     string
		pods     []string
		daemons  int
		firstCPU string
	}{
		{"a pod in the default namespace", `
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec: {containers: [{name: a, image: x, resources: {requests: {cpu: 250m}}}]}
`, []string{"default/solo"}, 0, "250m"},
		{"a Deployment's replicas", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: a, image: x, resources: {requests: {cpu: "1"}}}]}
`, []string{"shop/web-0", "shop/web-1", "shop/web-2"}, 0, "1"},
		{"a ReplicaSet without replicas runs one", `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: a, image: x}]}
`, []string{"default/rs-0"}, 0, "0"},
		{"a StatefulSet and a Job at its completions, in a List after a ---", `
# leading comment
---
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: db}
  spec:
    replicas: 2
    serviceName: db
    selector: {matchLabels: {app: db}}
    template:
      metadata: {labels: {app: db}}
      spec: {containers: [{name: a, image: x, resources: {requests: {cpu: "2"}}}]}
- apiVersion: batch/v1
  kind: Job
  metadata: {name: batch}
  spec:
    parallelism: 5
    completions: 2
    template:
      spec: {restartPolicy: Never, containers: [{name: a, image: x}]}
`, []string{"default/db-0", "default/db-1", "default/batch-0", "default/batch-1"}, 0, "2"},
		{"a DaemonSet is overhead, not pods", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: a, image: x}]}
`, nil, 1, ""},
		{"JSON", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"}, "spec": {"containers": [{"name": "a", "image": "x"}]}}`,
			[]string{"default/j"}, 0, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := plan.ReadWorkload("w.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for i := range w.Pods {
				pod := &w.Pods[i]
				names = append(names, pod.Namespace+"/"+pod.Name)
				if !pods.IsProvisionable(pod) {
					t.Errorf("pod %s is not pending as kube-scheduler leaves an unschedulable pod", pod.Name)
				}
			}
			if !slices.Equal(names, tc.pods) {
				t.Errorf("pods %v, want %v", names, tc.pods)
			}
			if len(w.DaemonSets) != tc.daemons {
				t.Errorf("%d DaemonSets, want %d", len(w.DaemonSets), tc.daemons)
			}
			if tc.firstCPU != "" {
				if got := pods.Requests(&w.Pods[0])[corev1.ResourceCPU]; got.String() != tc.firstCPU {
					t.Errorf("first pod's cpu request %s, want %s", got.String(), tc.firstCPU)
				}
			}
			uids := map[string]bool{}
			for _, pod := range w.Pods {
				if uids[string(pod.UID)] {
					t.Errorf("UID %s given twice", pod.UID)
				}
				uids[string(pod.UID)] = true
			}
		})
	}
}

func TestBadInputNamesFileLineAndObject(t *testing.T) {
	validator := aws.ProviderBlockValidator{Defaults: aws.ProviderDefaults{ClusterName: "demo", InstanceProfile: "profile"}}
	for _, tc := range []struct {
		name, yaml  string
		provisioner bool
		want        []string
	}{
		{"an unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
			false, []string{"in.yaml:5", "Widget w", "unknown kind example.com/v1 Widget"}},
		{"a kind that runs no pods", "apiVersion: v1\nkind: Service\nmetadata: {name: svc, namespace: shop}\n",
			false, []string{"in.yaml:1", "Service shop/svc", "is not a kind that runs pods"}},
		{"malformed YAML, at its line", "apiVersion: v1\nkind: Pod\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n",
			false, []string{"in.yaml:7", "malformed YAML"}},
		{"a misspelt field", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containerz: []}\n",
			false, []string{"in.yaml:1", "Pod p", `unknown field "containerz"`}},
		{"no kind", "metadata: {name: p}\n", false, []string{"in.yaml:1", "apiVersion and kind are required"}},
		{"a bad item of a List", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n- apiVersion: nope/v1\n  kind: Thing\n  metadata: {name: b}\n",
			false, []string{"in.yaml:1", "List item 1 Thing b", "unknown kind nope/v1 Thing"}},
		{"a Provisioner the webhook refuses", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: bad}\nspec:\n  requirements:\n  - {key: karpenter.sh/capacity-type, operator: In, values: [reserved]}\n",
			true, []string{"in.yaml:1", "Provisioner bad", "the admission webhook would refuse it", "spec.requirements[0]"}},
		{"a Provisioner's provider block the cloud refuses", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: bad}\nspec:\n  provider: {subnetSelektor: {a: b}}\n",
			true, []string{"Provisioner bad", "spec.provider.subnetSelektor"}},
		{"a Pod among Provisioners", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
			true, []string{"in.yaml:1", "Pod p", "is not a Provisioner"}},
		{"two Provisioners of one name", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: a}\n---\napiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: a}\n",
			true, []string{"in.yaml:5", "Provisioner a", "needs a name of its own"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.provisioner {
				_, err = plan.ReadProvisioners(context.Background(), "in.yaml", []byte(tc.yaml), validator)
			} else {
				_, err = plan.ReadWorkload("in.yaml", []byte(tc.yaml))
			}
			var input *plan.InputError
			if !errors.As(err, &input) {
				t.Fatalf("error %v, want an *InputError", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestReadProvisionersDefaultsAsTheWebhook(t *testing.T) {
	validator := aws.ProviderBlockValidator{Defaults: aws.ProviderDefaults{ClusterName: "demo", InstanceProfile: "profile"}}
	got, err := plan.ReadProvisioners(context.Background(), "p.yaml", []byte("apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: default}\n"), validator)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range got[0].Spec.Requirements {
		keys = append(keys, r.Key+"="+strings.Join(r.Values, ","))
	}
	if want := []string{"karpenter.sh/capacity-type=on-demand", "kubernetes.io/arch=amd64"}; !slices.Equal(keys, want) {
		t.Errorf("requirements %v, want the webhook's defaults %v", keys, want)
	}
	if got[0].Spec.Provider == nil || !strings.Contains(string(got[0].Spec.Provider.Raw), "karpenter.sh/discovery") && !strings.Contains(string(got[0].Spec.Provider.Raw), "demo") {
		t.Errorf("provider block %v, want the cloud's defaults for cluster demo", got[0].Spec.Provider)
	}
}
